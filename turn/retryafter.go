package turn

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads how long a provider asked the caller to wait before
// trying again, from the headers of a refused response: "retry-after-ms"
// (milliseconds, as OpenAI sends it) when present and readable, else
// "Retry-After" as seconds (whole or fractional) or as an HTTP date,
// measured from now. The header values are provider-controlled, so the
// answer is clamped to [0, limit]: a missing, unreadable, negative,
// not-a-number or past value is 0, and an enormous one (an overflowing
// number, a date years ahead) is limit. A limit of zero or less yields 0.
func RetryAfter(h http.Header, now time.Time, limit time.Duration) time.Duration {
	if limit <= 0 || h == nil {
		return 0
	}
	if d, ok := retryNumber(h.Get("Retry-After-Ms"), float64(time.Millisecond), limit); ok {
		return d
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if d, ok := retryNumber(v, float64(time.Second), limit); ok {
		return d
	}
	if v == "" {
		return 0
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := at.Sub(now)
	switch {
	case d <= 0:
		return 0
	case d > limit:
		return limit
	}
	return d
}

// retryNumber reads v as a non-negative count of units; ok is false when
// v is empty or not a number, so the caller may try another reading.
func retryNumber(v string, unit float64, limit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !math.IsInf(f, 1) { // +Inf with ErrRange: a huge number
		return 0, false
	}
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0, true
	case f*unit >= float64(limit): // also +Inf
		return limit, true
	}
	return time.Duration(f * unit), true
}
