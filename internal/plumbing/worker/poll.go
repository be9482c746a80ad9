// Package worker holds the plumbing the leasing actors (embedworker,
// extractworker and its reaper) share: the polling loop, waits on the
// injected clock, the lease settings every worker validates the same way,
// and the retry of store calls made while a lease is held. Supervision
// itself (Start, Drain, Stop, restarts, Health) stays in package
// supervisor.
package worker

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/clockctx"
	"github.com/goagents/memorykit/supervisor"
)

// Sleep waits d on clk for an actor. The timer is armed before hook runs
// (when non-nil), so a test that advances a mock clock only after the hook
// fires is sure to wake the actor. It reports false when ctx ended first.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration, hook func(supervisor.Wait), reason string) bool {
	var armed func()
	if hook != nil {
		armed = func() { hook(supervisor.Wait{Reason: reason, Delay: d}) }
	}
	return clockctx.Sleep(ctx, clk, d, armed)
}

// maxCountedFailures caps the consecutive-failure count of an actor that
// fails recoverably for a very long time; its wait is long at Max by then.
const maxCountedFailures = 1 << 20

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
	Backoff  memorykit.Backoff
	OnWait   func(supervisor.Wait)
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
		wait, reason := p.Interval, supervisor.WaitIdle
		switch {
		case err != nil && !memorykit.IsRecoverable(err):
			p.Logger.Error(p.What+" failed; returning to the supervisor",
				zap.String("reason", memorykit.ReasonCode(err)), zap.String("kind", memorykit.KindCode(err)))
			return err
		case err != nil:
			if failures < maxCountedFailures {
				failures++
			}
			wait, reason = p.Backoff.Delay(failures), supervisor.WaitStoreBackoff
			p.Logger.Warn(p.What+" failed; backing off",
				zap.String("reason", memorykit.ReasonCode(err)), zap.Int("consecutive_failures", failures),
				zap.Duration("backoff", wait))
			supervisor.ReportBackingOff(fetchCtx, memorykit.ReasonCode(err), failures)
		case busy:
			failures = 0
			supervisor.ReportRunning(fetchCtx)
			continue
		default:
			failures = 0
			supervisor.ReportRunning(fetchCtx)
		}
		if !Sleep(fetchCtx, p.Clock, wait, p.OnWait, reason) {
			return nil
		}
	}
	return nil
}
