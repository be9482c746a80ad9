package supervisor

import (
	"math"
	"time"

	"github.com/goagents/memorykit"
)

// BackoffPolicy says how long the supervisor waits before restarting a failed
// actor and when it stops trying. Every field is required; a zero or partial
// policy is rejected by Validate rather than filled in.
type BackoffPolicy struct {
	// Initial is the wait before the first restart after a failure.
	Initial time.Duration
	// Max caps every wait. It is also the healthy run time after which an
	// actor's consecutive-failure count starts again from zero.
	Max time.Duration
	// Multiplier grows the wait from one consecutive restart to the next.
	// It must be at least 1 (1 means a constant wait).
	Multiplier float64
	// MaxRestarts is how many consecutive restarts an actor gets. The
	// failure that would need restart number MaxRestarts+1 makes the
	// supervisor give up on that actor instead.
	MaxRestarts int
}

// Validate reports the first missing or out-of-range field as an
// ErrInvalidConfig *memorykit.Error naming the field.
func (p BackoffPolicy) Validate() error {
	bad := func(field, reason string) error {
		return memorykit.ConfigError("supervisor.backoff", field, reason)
	}
	switch {
	case p.Initial <= 0:
		return bad("backoff.initial", "not_positive")
	case p.Max <= 0:
		return bad("backoff.max", "not_positive")
	case p.Max < p.Initial:
		return bad("backoff.max", "below_initial")
	case math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0):
		return bad("backoff.multiplier", "not_finite")
	case p.Multiplier <= 0:
		return bad("backoff.multiplier", "not_positive")
	case p.Multiplier < 1:
		return bad("backoff.multiplier", "below_one")
	case p.MaxRestarts <= 0:
		return bad("backoff.max_restarts", "not_positive")
	}
	return nil
}

// Delay returns the wait before consecutive restart number restart
// (counting from 1): Initial * Multiplier^(restart-1), capped at Max. A
// restart below 1 is treated as 1. The policy must be valid.
func (p BackoffPolicy) Delay(restart int) time.Duration {
	d := float64(p.Initial)
	limit := float64(p.Max)
	for i := 1; i < restart && d < limit; i++ {
		d *= p.Multiplier
	}
	if d >= limit {
		return p.Max
	}
	return time.Duration(d)
}
