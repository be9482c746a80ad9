package supervisor

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
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

// Poll is the loop of a polling actor. It calls round while fetchCtx is
// live; after a round that did work (busy) it calls round again at once,
// after an idle round it waits Interval, and after a recoverable error it
// waits Backoff.Delay(n) for the n-th consecutive failure, for as long as
// the failures last (it never gives up on a recoverable error; the wait
// stays at the backoff's maximum). Under a Supervisor, the first
// recoverable failure marks the actor backing_off in Health (one
// memorykit.EventActorDegraded) and the next successful round marks it
// running again (one memorykit.EventActorRecovered). A
// non-recoverable error is logged (as a reason code) and returned, so the
// supervisor restarts the actor. Poll returns nil once fetchCtx or workCtx
// ends. Every wait is measured on Clock and reported to OnWait.
type Poll struct {
	Clock    clock.Clock
	Interval time.Duration
	Backoff  interface{ Delay(n int) time.Duration }
	OnWait   func(Wait)
	Logger   *zap.Logger
	// What names the polled operation in logs, such as "lease" or "reap".
	What string
}

// Run runs the loop; see Poll.
func (p Poll) Run(fetchCtx, workCtx context.Context, round func() (busy bool, err error)) error {
	failures := 0
	for fetchCtx.Err() == nil {
		busy, err := round()
		if fetchCtx.Err() != nil || workCtx.Err() != nil {
			return nil
		}
		wait, reason := p.Interval, WaitIdle
		switch {
		case err != nil && !memorykit.IsRecoverable(err):
			p.Logger.Error(p.What+" failed; returning to the supervisor",
				zap.String("reason", memorykit.ReasonCode(err)), zap.String("kind", memorykit.KindCode(err)))
			return err
		case err != nil:
			if failures < maxCountedFailures {
				failures++
			}
			wait, reason = p.Backoff.Delay(failures), WaitStoreBackoff
			p.Logger.Warn(p.What+" failed; backing off",
				zap.String("reason", memorykit.ReasonCode(err)), zap.Int("consecutive_failures", failures),
				zap.Duration("backoff", wait))
			ReportBackingOff(fetchCtx, memorykit.ReasonCode(err), failures)
		case busy:
			failures = 0
			ReportRunning(fetchCtx)
			continue
		default:
			failures = 0
			ReportRunning(fetchCtx)
		}
		if !Sleep(fetchCtx, p.Clock, wait, p.OnWait, reason) {
			return nil
		}
	}
	return nil
}
