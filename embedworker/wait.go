package embedworker

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
)

// Wait reasons passed to the OnWait hooks.
const (
	// WaitIdle: the last round found no work; the actor polls again after
	// the poll interval.
	WaitIdle = "idle"
	// WaitStoreBackoff: claiming work failed with a recoverable store error;
	// the actor tries again after a backoff.
	WaitStoreBackoff = "store_backoff"
	// WaitStoreRetry: recording the outcome of leased work failed with a
	// recoverable store error; the worker, still holding the lease, tries
	// again after a backoff.
	WaitStoreRetry = "store_retry"
)

// Wait describes a wait an actor is about to make. It is what the OnWait
// hooks receive.
type Wait struct {
	// Reason is WaitIdle, WaitStoreBackoff or WaitStoreRetry.
	Reason string
	// Delay is how long the actor waits on its clock.
	Delay time.Duration
}

// sleep waits d on clk. The timer is armed before hook runs, so a test that
// advances a mock clock only after the hook fires is sure to wake the
// sleeper. It reports false when ctx ended first.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration, hook func(Wait), reason string) bool {
	t := clk.Timer(d)
	defer t.Stop()
	if hook != nil {
		hook(Wait{Reason: reason, Delay: d})
	}
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// handBackContext returns a context for handing leases back after the work
// context ended: it ignores parent's cancellation (keeping its values) and
// ends after d on clk. Its Deadline is hidden, so a database driver never
// mixes the injected clock's instants with wall-clock time; Done still
// fires on time.
func handBackContext(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := withClockTimeout(context.WithoutCancel(parent), clk, d)
	return noDeadline{ctx}, cancel
}

// noDeadline hides a context's deadline but keeps its cancellation.
type noDeadline struct{ context.Context }

// Deadline reports no deadline.
func (noDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

// withClockTimeout is context.WithTimeout measured on clk: the context ends
// with context.DeadlineExceeded once clk has advanced by d. It is built on
// the standard library's cancellation, so it is safe for concurrent use
// with any clock.
func withClockTimeout(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	timer := clk.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return clockDeadline{Context: ctx, deadline: clk.Now().Add(d)}, func() {
		timer.Stop()
		cancel(context.Canceled)
	}
}

// clockDeadline reports the clock's deadline and says DeadlineExceeded
// when its own timer ended it.
type clockDeadline struct {
	context.Context
	deadline time.Time
}

// Deadline returns the instant, on the injected clock, the context ends.
func (c clockDeadline) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Err is context.DeadlineExceeded once the clock deadline has passed.
func (c clockDeadline) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}
