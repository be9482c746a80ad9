package embedworker

import (
	"context"
	"errors"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/worker"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

// ErrStalled means RunUntilEmpty stopped because records stayed pending
// while no round could lease any: they are parked (a permanent Embedder
// failure; DeleteEmbeddings resets them), waiting for a retry time, or held
// by another worker. It comes wrapped in a memorykit.ErrUnavailable
// *memorykit.Error with reason "stalled".
var ErrStalled = errors.New("embedding rebuild stalled")

// RebuildOptions tunes RunUntilEmpty.
type RebuildOptions struct {
	// MaxIdleRounds is how many rounds in a row may lease nothing while
	// records are still pending before RunUntilEmpty gives up with
	// ErrStalled. Between idle rounds it waits PollInterval on the clock,
	// so retry times can come and expired leases can be reaped. It must be
	// positive.
	MaxIdleRounds int
	// OnProgress, if set, is called after every round with the running
	// totals. It must return quickly.
	OnProgress func(Progress)
}

// Progress is RunUntilEmpty's running account.
type Progress struct {
	// Rounds run so far (idle ones included).
	Rounds int
	// Totals of every round's counts.
	Round
	// Pending is how many records were pending before the most recent
	// round (and, at the end, after it). PendingEmbeddings is counted
	// before the first round, after every round that leased less than a
	// full batch and whenever the estimate reaches zero; after other
	// rounds it is the last count less the vectors stored since, so a
	// long rebuild does not make a pass over the queue every round.
	Pending int
}

// pending counts what RunUntilEmpty waits for: the profile's pending
// records, in Config.Scope only when it is set.
func (w *Worker) pending(ctx context.Context) (int, error) {
	if w.cfg.Scope == nil {
		return w.cfg.Store.PendingEmbeddings(ctx, w.profile)
	}
	c, ok := w.cfg.Store.(storekit.ScopedPendingCounter)
	if !ok {
		return 0, memorykit.ConfigError("embedworker.pending", "store", "no_scoped_pending_count")
	}
	return c.PendingEmbeddingsIn(ctx, *w.cfg.Scope, w.profile)
}

// RunUntilEmpty runs rounds until PendingEmbeddings for the worker's
// profile (in Config.Scope only, when it is set) is zero, for an operator rebuild: delete the profile's
// embeddings (or let corrected content make them stale), then call it.
// It returns the final Progress and nil once nothing is pending; a store
// error, the end of ctx, or ErrStalled otherwise. It must not run while
// the same Worker runs as an actor.
func (w *Worker) RunUntilEmpty(ctx context.Context, opts RebuildOptions) (Progress, error) {
	const op = "embedworker.run_until_empty"
	var p Progress
	if opts.MaxIdleRounds <= 0 {
		return p, memorykit.FieldError(op, "max_idle_rounds", "not_positive")
	}
	idle, count := 0, true
	for {
		if count {
			pending, err := w.pending(ctx)
			if err != nil {
				return p, storekit.Contain(op, err)
			}
			p.Pending = pending
		}
		if p.Pending == 0 {
			return p, nil
		}
		if idle >= opts.MaxIdleRounds {
			return p, &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "stalled", Err: ErrStalled}
		}
		if idle > 0 && !worker.Sleep(ctx, w.cfg.Clock, w.cfg.PollInterval, w.cfg.OnWait, supervisor.WaitIdle) {
			return p, memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", ctx.Err())
		}
		r, err := w.round(ctx, ctx)
		p.Rounds++
		p.add(r)
		if opts.OnProgress != nil {
			opts.OnProgress(p)
		}
		if err != nil {
			return p, err
		}
		if r.Leased == 0 {
			idle++
		} else {
			idle = 0
		}
		// A full batch with more left to do is not counted again.
		count = r.Leased < w.cfg.BatchSize || p.Pending-r.Stored <= 0
		if !count {
			p.Pending -= r.Stored
		}
	}
}
