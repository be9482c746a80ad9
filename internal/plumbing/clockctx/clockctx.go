// Package clockctx measures deadlines and waits on an injected clock.Clock.
//
// memorykit reads every timer from the Host's clock, which in tests is a
// mock far from wall-clock time. A deadline measured on that clock is
// therefore expressed as a cancellation (with context.DeadlineExceeded as
// its error and cause) and never as a context deadline: a driver or HTTP
// client below would otherwise compare the mock instant with the wall clock.
package clockctx

import (
	"context"
	"errors"
	"time"

	"github.com/benbjohnson/clock"
)

// WithTimeout returns a context that ends once clk has advanced by d, with
// Err and Cause reporting context.DeadlineExceeded, or when parent ends. It
// reports no Deadline. Call cancel to release the timer.
func WithTimeout(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	timer := clk.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return timeoutCtx{ctx}, func() {
		timer.Stop()
		cancel(context.Canceled)
	}
}

// Detached returns a context that keeps parent's values but not its
// cancellation, and ends once clk has advanced by d. Workers use it to hand
// leases back after their work context has ended.
func Detached(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	return WithTimeout(context.WithoutCancel(parent), clk, d)
}

// Expired reports whether ctx ended because its own clock timeout passed.
func Expired(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// timeoutCtx hides any deadline and reports DeadlineExceeded from Err when
// its clock timer ended it.
type timeoutCtx struct{ context.Context }

// Deadline reports none: see the package comment.
func (timeoutCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Err is context.DeadlineExceeded once the clock timeout has passed.
func (c timeoutCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// Sleep waits d on clk, or until ctx ends. The timer is armed before armed
// runs (when non-nil), so a test that advances a mock clock only after
// armed is called is sure to wake the sleeper. It reports false when ctx
// ended first.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration, armed func()) bool {
	t := clk.Timer(d)
	defer t.Stop()
	if armed != nil {
		armed()
	}
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}
