package worker

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

// StoreRetry retries the store calls a worker makes while it holds a lease
// (storing a result, releasing or failing the leased work). Every wait is
// measured on Clock, follows Backoff and is reported to OnWait as
// supervisor.WaitStoreRetry.
type StoreRetry struct {
	Clock   clock.Clock
	Backoff memorykit.Backoff
	OnWait  func(supervisor.Wait)
	Logger  *zap.Logger
}

// Do runs op with workCtx until it succeeds, fails for a reason other than
// a recoverable one, workCtx ends, or the next wait would reach expiry
// (when the lease runs out); it returns op's last error. Each retry is
// logged at WARN with fields first, then the reason code, the try number
// and the wait.
func (r StoreRetry) Do(workCtx context.Context, expiry time.Time, op func(context.Context) error, fields ...zap.Field) error {
	for n := 1; ; n++ {
		err := op(workCtx)
		if err == nil || !memorykit.IsRecoverable(err) || workCtx.Err() != nil {
			return err
		}
		d := r.Backoff.Delay(n)
		if !r.Clock.Now().Add(d).Before(expiry) {
			return err
		}
		r.Logger.Warn("store unavailable; retrying", append(fields[:len(fields):len(fields)],
			zap.String("reason", memorykit.ReasonCode(err)), zap.Int("try", n), zap.Duration("backoff", d))...)
		if !Sleep(workCtx, r.Clock, d, r.OnWait, supervisor.WaitStoreRetry) {
			return err
		}
	}
}
