package extractworker

import (
	"context"
	"errors"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/worker"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

// LeaseStore is what the Reaper needs: both lease queues' reapers. A
// storekit.Store satisfies it.
type LeaseStore interface {
	// ReapJobLeases returns expired job leases to the queue (see
	// storekit.JobStore).
	ReapJobLeases(ctx context.Context) (int, error)
	// ReapEmbeddingLeases returns expired embedding leases to the pool
	// (see storekit.EmbeddingStore).
	ReapEmbeddingLeases(ctx context.Context) (int, error)
}

// ReaperConfig holds everything a Reaper needs. Every field but OnWait is
// required.
type ReaperConfig struct {
	// Store holds the job and embedding leases.
	Store LeaseStore
	// Clock drives the interval and the backoff; lease expiry is judged on
	// the store's clock.
	Clock clock.Clock
	// Logger receives content-free logs; the reaper names it "reaper".
	Logger *zap.Logger
	// Events receives one EventLeasesReaped per queue that had expired
	// leases in a round.
	Events memorykit.EventSink
	// Interval is the wait between rounds.
	Interval time.Duration
	// StoreBackoff sets the waits after recoverable store errors.
	StoreBackoff memorykit.Backoff
	// OnWait, if set, is called on the reaper's goroutine right after a
	// wait's timer has been armed (see Config.OnWait).
	OnWait func(supervisor.Wait)
}

// ReaperName is the Reaper's actor name.
const ReaperName = "lease_reaper"

// Event reasons of EventLeasesReaped.
const (
	// ReapedJobLeases marks the count of reaped extraction-job leases.
	ReapedJobLeases = "job_leases"
	// ReapedEmbeddingLeases marks the count of reaped embedding leases.
	ReapedEmbeddingLeases = "embedding_leases"
)

// Reaper is the actor that returns expired leases to their queues. A job
// whose lease expired has its attempt counted: it is queued again if
// attempts remain and becomes a failed tombstone otherwise. An expired
// embedding lease makes its record leasable again.
type Reaper struct {
	cfg ReaperConfig
	log *zap.Logger
}

// NewReaper validates cfg and returns a Reaper. A missing part or an
// invalid value is an ErrInvalidConfig *memorykit.Error naming the field.
func NewReaper(cfg ReaperConfig) (*Reaper, error) {
	const op = "extractworker.new_reaper"
	missing := func(field string) error {
		return memorykit.ConfigError(op, field, "missing")
	}
	switch {
	case cfg.Store == nil:
		return nil, missing("store")
	case cfg.Clock == nil:
		return nil, missing("clock")
	case cfg.Logger == nil:
		return nil, missing("logger")
	case cfg.Events == nil:
		return nil, missing("events")
	case cfg.Interval <= 0:
		return nil, memorykit.ConfigError(op, "interval", "not_positive")
	}
	if err := storekit.PrefixField(op, "store_backoff", cfg.StoreBackoff.Validate()); err != nil {
		return nil, err
	}
	return &Reaper{cfg: cfg, log: cfg.Logger.Named("reaper")}, nil
}

// Name returns ReaperName (see supervisor.Actor).
func (r *Reaper) Name() string { return ReaperName }

// Reaped counts one round's reaped leases.
type Reaped struct {
	// Jobs is how many expired job leases were reaped.
	Jobs int
	// Embeddings is how many expired embedding leases were reaped.
	Embeddings int
}

// RunOnce reaps both queues once. Each queue is tried even when the other
// fails; the counts are what succeeded and the error joins the failures.
func (r *Reaper) RunOnce(ctx context.Context) (Reaped, error) {
	var out Reaped
	jobs, jerr := r.cfg.Store.ReapJobLeases(ctx)
	if jerr == nil {
		out.Jobs = jobs
		r.report(ReapedJobLeases, jobs)
	}
	embs, eerr := r.cfg.Store.ReapEmbeddingLeases(ctx)
	if eerr == nil {
		out.Embeddings = embs
		r.report(ReapedEmbeddingLeases, embs)
	}
	return out, storekit.Contain("extractworker.reap", errors.Join(jerr, eerr))
}

func (r *Reaper) report(reason string, n int) {
	if n <= 0 {
		return
	}
	r.log.Info("expired leases reaped", zap.String("queue", reason), zap.Int("count", n))
	r.cfg.Events.Emit(memorykit.Event{
		Kind:   memorykit.EventLeasesReaped,
		At:     r.cfg.Clock.Now(),
		Actor:  string(memorykit.ActorWorker) + ":" + ReaperName,
		Count:  n,
		Reason: reason,
	})
}

// Run is the supervisor.Actor loop: it reaps every Interval while fetchCtx
// lives. Reaping is one short store call per queue, so it runs under
// fetchCtx and there is never work to hand back. Recoverable store errors
// are logged as reason codes and retried after StoreBackoff; others are
// returned to the supervisor.
func (r *Reaper) Run(fetchCtx, workCtx context.Context) error {
	poll := worker.Poll{Clock: r.cfg.Clock, Interval: r.cfg.Interval, Backoff: r.cfg.StoreBackoff,
		OnWait: r.cfg.OnWait, Logger: r.log, What: "reap"}
	return poll.Run(fetchCtx, workCtx, func() (bool, error) {
		_, err := r.RunOnce(fetchCtx)
		return false, err
	})
}
