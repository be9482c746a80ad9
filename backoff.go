package memorykit

import (
	"math"
	"time"
)

// Backoff is an exponential wait policy, measured on the injected clock by
// whoever uses it. The wait before retry number n (counting from 1) is
// Initial * Multiplier^(n-1), capped at Max. Every field is required.
type Backoff struct {
	// Initial is the first wait; it must be positive.
	Initial time.Duration
	// Max caps every wait; it must be at least Initial.
	Max time.Duration
	// Multiplier grows the wait from one retry to the next; a finite number
	// of at least 1 (1 keeps the wait constant).
	Multiplier float64
}

// Validate reports an ErrInvalidConfig *Error (op "backoff", field
// "initial", "max" or "multiplier") when the policy is zero, partial or
// out of range. A configuration holding a Backoff names it with
// storekit.PrefixField.
func (b Backoff) Validate() error {
	bad := func(field, reason string) error {
		return ConfigError("backoff", field, reason)
	}
	switch {
	case b.Initial <= 0:
		return bad("initial", "not_positive")
	case b.Max <= 0:
		return bad("max", "not_positive")
	case b.Max < b.Initial:
		return bad("max", "below_initial")
	case math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0):
		return bad("multiplier", "not_finite")
	case b.Multiplier <= 0:
		return bad("multiplier", "not_positive")
	case b.Multiplier < 1:
		return bad("multiplier", "below_one")
	}
	return nil
}

// Delay returns the wait before retry number n (n < 1 counts as 1). It
// never overflows: growth stops at Max.
func (b Backoff) Delay(n int) time.Duration {
	d := float64(b.Initial)
	limit := float64(b.Max)
	for i := 1; i < n && d < limit; i++ {
		d *= b.Multiplier
	}
	if d >= limit {
		return b.Max
	}
	return time.Duration(d)
}
