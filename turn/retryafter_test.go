package turn_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/goagents/memorykit/turn"
)

var retryNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestRetryAfter(t *testing.T) {
	const limit = time.Hour
	for _, c := range []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"padded", map[string]string{"Retry-After": "  3 "}, 3 * time.Second},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{"unreadable milliseconds fall back", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "9"}, 9 * time.Second},
		{"http date", map[string]string{"Retry-After": retryNow.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"rfc850 date", map[string]string{"Retry-After": retryNow.Add(time.Minute).Format(time.RFC850)}, time.Minute},
		{"past date", map[string]string{"Retry-After": retryNow.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"date years ahead", map[string]string{"Retry-After": retryNow.AddDate(5, 0, 0).Format(http.TimeFormat)}, limit},
		{"negative", map[string]string{"Retry-After": "-5"}, 0},
		{"zero", map[string]string{"Retry-After": "0"}, 0},
		{"nan", map[string]string{"Retry-After": "NaN"}, 0},
		{"infinity", map[string]string{"Retry-After": "+Inf"}, limit},
		{"overflow", map[string]string{"Retry-After": "1e400"}, limit},
		{"huge seconds", map[string]string{"Retry-After": "9223372036854775807"}, limit},
		{"garbage", map[string]string{"Retry-After": "tomorrow, maybe"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.h {
				h.Set(k, v)
			}
			if got := turn.RetryAfter(h, retryNow, limit); got != c.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", c.h, got, c.want)
			}
		})
	}
	h := http.Header{"Retry-After": {"30"}}
	if got := turn.RetryAfter(h, retryNow, 0); got != 0 {
		t.Errorf("limit 0: %v", got)
	}
	if got := turn.RetryAfter(h, retryNow, 10*time.Second); got != 10*time.Second {
		t.Errorf("limit 10s: %v", got)
	}
}

// FuzzRetryAfter: whatever a provider puts in the headers, the wait is
// within [0, limit] and the same for the same input.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "7", "1.5", "-1", "NaN", "Inf", "1e400", "0x1p10", "Thu, 01 Jan 2026 12:01:00 GMT", "Sun Nov  6 08:49:37 1994", "\x00", "9223372036854775807"} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, ms, ra string) {
		h := http.Header{}
		h.Set("Retry-After-Ms", ms)
		h.Set("Retry-After", ra)
		const limit = 10 * time.Minute
		got := turn.RetryAfter(h, retryNow, limit)
		if got < 0 || got > limit {
			t.Fatalf("RetryAfter(%q, %q) = %v outside [0, %v]", ms, ra, got, limit)
		}
		if again := turn.RetryAfter(h, retryNow, limit); again != got {
			t.Fatalf("not deterministic: %v then %v", got, again)
		}
	})
}
