package worker

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/clockctx"
	"github.com/goagents/memorykit/storekit"
)

// Lease makes a worker's lease call, op naming it in errors. It refuses
// with an ErrUnavailable error once fetchCtx has ended. Otherwise lease
// runs under a context that is not cut short by fetchCtx or workCtx, only
// bounded by handBack on clk: a lease interrupted midway may have been
// granted without the worker learning of it, which would strand the work
// until the reaper. A call that outlived handBack is reported as
// recoverable, so the worker backs off and tries again instead of being
// restarted; a lease granted as the call was cut short returns to the
// queue when it expires.
func Lease[T any](fetchCtx, workCtx context.Context, clk clock.Clock, handBack time.Duration, op string,
	lease func(context.Context) ([]T, error)) ([]T, error) {
	if err := fetchCtx.Err(); err != nil {
		return nil, memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", err)
	}
	ctx, cancel := clockctx.Detached(workCtx, clk, handBack)
	got, err := lease(ctx)
	expired := clockctx.Expired(ctx)
	cancel()
	switch {
	case err != nil && expired:
		return nil, storekit.Contain(op, memorykit.Recoverable(err))
	case err != nil:
		return nil, storekit.Contain(op, err)
	}
	return got, nil
}
