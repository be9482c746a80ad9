package supervisor

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit/internal/clockctx"
)

// Wait reasons actors report to their OnWait hooks.
const (
	// WaitIdle: the last round found no work; the actor polls again after
	// its poll interval.
	WaitIdle = "idle"
	// WaitStoreBackoff: claiming work failed with a recoverable store
	// error; the actor tries again after a backoff.
	WaitStoreBackoff = "store_backoff"
	// WaitStoreRetry: recording the outcome of leased work failed with a
	// recoverable store error; the actor, still holding the lease, tries
	// again after a backoff.
	WaitStoreRetry = "store_retry"
)

// Wait describes a wait an actor is about to make on its clock. Actors hand
// it to their OnWait test hooks.
type Wait struct {
	// Reason is WaitIdle, WaitStoreBackoff or WaitStoreRetry.
	Reason string
	// Delay is how long the actor waits on its clock.
	Delay time.Duration
}

// Sleep waits d on clk for an actor. The timer is armed before hook runs
// (when non-nil), so a test that advances a mock clock only after the hook
// fires is sure to wake the actor. It reports false when ctx ended first.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration, hook func(Wait), reason string) bool {
	var armed func()
	if hook != nil {
		armed = func() { hook(Wait{Reason: reason, Delay: d}) }
	}
	return clockctx.Sleep(ctx, clk, d, armed)
}
