// Package embedworker runs the embedding actor: it leases active records
// whose embedding for the Embedder's profile is missing or stale, embeds
// them in batches with the Host's Embedder, and stores each vector guarded
// by the content hash it was computed from.
//
// A record corrected between lease and store is not given a stale vector:
// the store answers ErrStale, which the worker counts and moves past (the
// record is pending again at its new hash). A recoverable Embedder failure
// releases the batch with a retry time from Config.Retry; a non-recoverable
// one parks the records (they stay pending, and counted, for the operator)
// and emits EventEmbeddingFailed. When the work context ends mid-batch, the
// leases are handed back. Records whose worker died keep their lease until
// it expires and the lease reaper (extractworker.Reaper) returns them.
//
// Exact and full-text recall never depend on this worker: while vectors
// are missing only the vector channel has less to offer.
//
// For an operator rebuild, delete the profile's embeddings
// (EmbeddingStore.DeleteEmbeddings) and call RunUntilEmpty, which runs
// rounds until PendingEmbeddings is zero and reports progress counts.
//
// Logs, events and errors carry identifiers, counts and reason codes only;
// record text, vectors and the text of Embedder errors never reach them.
package embedworker

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/clockctx"
	"github.com/goagents/memorykit/internal/plumbing/worker"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

// Config holds everything a Worker needs. Every field but OnWait,
// OnRound and Scope is required; New rejects a Config that lacks one.
type Config struct {
	// Store tracks pending embeddings and stores vectors.
	Store storekit.EmbeddingStore
	// Embedder is the Host's embedder; its Profile names the embeddings.
	Embedder memorykit.Embedder
	// Clock drives leases, deadlines, retries, polling and backoff.
	Clock clock.Clock
	// Logger receives content-free logs; the worker names it
	// "embedworker".
	Logger *zap.Logger
	// Events receives content-free events.
	Events memorykit.EventSink
	// WorkerID is this worker's identity on every lease: a valid memorykit
	// identifier, unique among the workers sharing a store.
	WorkerID string
	// LeaseTTL is how long a lease lasts. It must exceed EmbedDeadline.
	LeaseTTL time.Duration
	// BatchSize is how many records one Embed call gets. The store bounds
	// it by its Limits.MaxListSize.
	BatchSize int
	// PollInterval is the wait after a round that found nothing to embed.
	PollInterval time.Duration
	// EmbedDeadline bounds one Embed call.
	EmbedDeadline time.Duration
	// Retry sets when a record whose embedding failed recoverably may be
	// leased again: RetryAt = now + Retry.Delay(attempt).
	Retry memorykit.Backoff
	// StoreBackoff sets the waits after recoverable store errors: the n-th
	// consecutive failure waits StoreBackoff.Delay(n).
	StoreBackoff memorykit.Backoff
	// HandBackTimeout bounds the store calls that must not be cut short by
	// a cancelled context: a lease call (an interrupted one could grant
	// leases the worker never learns of) and handing leases back once the
	// work context has ended.
	HandBackTimeout time.Duration
	// OnWait, if set, is called on the worker's goroutine right after a
	// wait's timer has been armed on Clock and before the worker blocks on
	// it. A test that advances a mock clock only after this call knows the
	// timer sees the advance. It must return quickly.
	OnWait func(supervisor.Wait)
	// Scope, if set, restricts the worker to that Scope's records: it
	// leases only them, and RunUntilEmpty counts only them (which needs a
	// Store that implements storekit.ScopedPendingCounter). For an
	// operator's rebuild of one project; a runtime's worker leaves it nil.
	Scope *memorykit.Scope
	// OnRound, if set, is called on the worker's goroutine after every
	// round of Run, with what the round did (an empty Round when it found
	// nothing or failed). The runtime uses it to wake callers waiting for
	// a Scope's embeddings. It must return quickly.
	OnRound func(Round)
}

// namePrefix prefixes the WorkerID in the actor's name.
const namePrefix = "embed:"

func (cfg Config) validate(op string) error {
	missing := func(field string) error {
		return memorykit.ConfigError(op, field, "missing")
	}
	switch {
	case cfg.Store == nil:
		return missing("store")
	case cfg.Embedder == nil:
		return missing("embedder")
	case cfg.Clock == nil:
		return missing("clock")
	case cfg.Logger == nil:
		return missing("logger")
	case cfg.Events == nil:
		return missing("events")
	}
	if err := storekit.ValidateProfile(op, cfg.Embedder.Profile()); err != nil {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidConfig, Field: "embedder.profile", Reason: memorykit.ReasonCode(err), Err: err}
	}
	if cfg.Embedder.Dimension() <= 0 {
		return memorykit.ConfigError(op, "embedder.dimension", "not_positive")
	}
	if cfg.Scope != nil {
		if err := cfg.Scope.Validate(); err != nil {
			return memorykit.ConfigError(op, "scope", memorykit.ReasonCode(err))
		}
	}
	return worker.LeaseSettings{
		NamePrefix: namePrefix, WorkerID: cfg.WorkerID, LeaseTTL: cfg.LeaseTTL,
		Deadline: cfg.EmbedDeadline, DeadlineField: "embed_deadline", BatchSize: cfg.BatchSize,
		PollInterval: cfg.PollInterval, HandBackTimeout: cfg.HandBackTimeout,
		Retry: cfg.Retry, StoreBackoff: cfg.StoreBackoff,
	}.Check(op)
}

// Worker is the embedding actor. One Worker should run at most one Run or
// RunUntilEmpty at a time: its lease identity is its WorkerID.
type Worker struct {
	cfg     Config
	log     *zap.Logger
	profile string
	dim     int
	// outages counts outcomes left to expire because the store failed
	// recoverably (a handled outage, logged at WARN).
	outages atomic.Int64
}

// StoreOutages returns how many record outcomes this worker could not
// store because the store failed recoverably; each lease was left for the
// reaper, so the record is embedded again.
func (w *Worker) StoreOutages() int64 { return w.outages.Load() }

// New validates cfg and returns a Worker. A missing part or an invalid
// value is an ErrInvalidConfig *memorykit.Error naming the field.
func New(cfg Config) (*Worker, error) {
	const op = "embedworker.new"
	if err := cfg.validate(op); err != nil {
		return nil, err
	}
	return &Worker{
		cfg:     cfg,
		log:     cfg.Logger.Named("embedworker").With(zap.String("worker_id", cfg.WorkerID)),
		profile: cfg.Embedder.Profile(),
		dim:     cfg.Embedder.Dimension(),
	}, nil
}

// Name returns "embed:" followed by the WorkerID (see supervisor.Actor).
func (w *Worker) Name() string { return namePrefix + w.cfg.WorkerID }

// Profile returns the embedding profile the worker fills.
func (w *Worker) Profile() string { return w.profile }

// Round counts what one round did with the records it leased.
type Round struct {
	// Leased is how many records the round leased.
	Leased int
	// Stored vectors are current now.
	Stored int
	// Stale records changed (or left the active status) between lease and
	// store; they got no vector and are pending again if still active.
	Stale int
	// Retried records failed recoverably and wait for their retry time.
	Retried int
	// Parked records failed for good and wait for the operator.
	Parked int
	// HandedBack records were released because the work context ended.
	HandedBack int
	// Abandoned records keep this worker's lease until the reaper returns
	// them: their outcome could not be stored.
	Abandoned int
}

func (r *Round) add(o Round) {
	r.Leased += o.Leased
	r.Stored += o.Stored
	r.Stale += o.Stale
	r.Retried += o.Retried
	r.Parked += o.Parked
	r.HandedBack += o.HandedBack
	r.Abandoned += o.Abandoned
}

// Run is the supervisor.Actor loop. It leases records while fetchCtx
// lives, embeds and stores each batch under workCtx, and waits
// PollInterval on the clock after a round that found nothing. Recoverable
// store errors are logged as reason codes and retried after StoreBackoff;
// a non-recoverable one is returned, so the supervisor restarts the worker
// after its own backoff. Run returns nil once fetchCtx has ended and the
// batch in progress is stored or handed back. A panicking Embedder is not
// recovered: the supervisor restarts the worker and the reaper returns its
// leases once they expire.
func (w *Worker) Run(fetchCtx, workCtx context.Context) error {
	poll := worker.Poll{Clock: w.cfg.Clock, Interval: w.cfg.PollInterval, Backoff: w.cfg.StoreBackoff,
		OnWait: w.cfg.OnWait, Logger: w.log, What: "lease"}
	return poll.Run(fetchCtx, workCtx, func() (bool, error) {
		r, err := w.round(fetchCtx, workCtx)
		if w.cfg.OnRound != nil {
			w.cfg.OnRound(r)
		}
		return r.Leased > 0, err
	})
}

// RunOnce leases one batch with ctx and embeds and stores it under ctx:
// one round of Run, for tests and operator tools. The error is the
// lease's; what happened to each record is in the Round and the events.
func (w *Worker) RunOnce(ctx context.Context) (Round, error) {
	return w.round(ctx, ctx)
}

// Reason codes the worker records on releases and in events.
const (
	// ReasonDeadline: the Embedder did not answer within EmbedDeadline.
	ReasonDeadline = "deadline"
	// ReasonBadVectors: the Embedder answered with the wrong number of
	// vectors, a wrong dimension, or a value that is not finite.
	ReasonBadVectors = "bad_vectors"
	// ReasonWorkerStopped: the work context ended and the lease was handed
	// back.
	ReasonWorkerStopped = "worker_stopped"
)

// round leases one batch if fetchCtx is live and processes it under
// workCtx.
//
// The lease call itself is not cut short by either context (only bounded
// by HandBackTimeout): a lease interrupted midway may have been granted
// without the worker learning of it, which would strand the records until
// the reaper. If the work context ended meanwhile, the batch is handed
// back.
func (w *Worker) round(fetchCtx, workCtx context.Context) (Round, error) {
	leasedAt := w.cfg.Clock.Now()
	tasks, err := worker.Lease(fetchCtx, workCtx, w.cfg.Clock, w.cfg.HandBackTimeout, "embedworker.lease",
		func(ctx context.Context) ([]storekit.EmbeddingTask, error) {
			return w.cfg.Store.LeaseEmbeddings(ctx, storekit.EmbeddingLease{
				Profile: w.profile, WorkerID: w.cfg.WorkerID, TTL: w.cfg.LeaseTTL, Max: w.cfg.BatchSize,
				Scope: w.cfg.Scope,
			})
		})
	if err != nil {
		return Round{}, err
	}
	r := Round{Leased: len(tasks)}
	if len(tasks) == 0 {
		return r, nil
	}
	b := &batch{w: w, tasks: tasks, expiry: leasedAt.Add(w.cfg.LeaseTTL), workCtx: workCtx, r: &r}
	w.log.Debug("leased records", zap.Int("count", len(tasks)))

	var (
		vecs    [][]float32
		stopped = workCtx.Err() != nil
	)
	if !stopped {
		vecs, stopped, err = w.embed(workCtx, tasks)
	}
	switch {
	case stopped:
		b.handBack()
	case err != nil && memorykit.IsRecoverable(err):
		b.release(err, false)
	case err != nil:
		b.release(err, true)
	default:
		b.put(vecs)
	}
	return r, nil
}

// embed calls the Embedder under EmbedDeadline and checks its answer.
// stopped reports that the work context ended meanwhile.
func (w *Worker) embed(workCtx context.Context, tasks []storekit.EmbeddingTask) (vecs [][]float32, stopped bool, err error) {
	const op = "embedworker.embed"
	texts := make([]string, len(tasks))
	for i, t := range tasks {
		texts[i] = t.Text
	}
	ctx, cancel := clockctx.WithTimeout(workCtx, w.cfg.Clock, w.cfg.EmbedDeadline)
	defer cancel()
	vecs, err = w.cfg.Embedder.Embed(ctx, texts)
	switch {
	case workCtx.Err() != nil:
		return nil, true, nil
	case ctx.Err() != nil:
		// The deadline passed; a late answer is not used either.
		return nil, false, &memorykit.Error{Op: op, Kind: memorykit.ErrDeadline, Reason: ReasonDeadline, Retry: true}
	case err != nil:
		return nil, false, err
	}
	if len(vecs) != len(tasks) {
		return nil, false, &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: ReasonBadVectors}
	}
	for _, v := range vecs {
		if len(v) != w.dim {
			return nil, false, &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: ReasonBadVectors}
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, false, &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: ReasonBadVectors}
			}
		}
	}
	return vecs, false, nil
}

// batch is one round's leased records and what became of them.
type batch struct {
	w       *Worker
	tasks   []storekit.EmbeddingTask
	expiry  time.Time // no later than the leases' expiry
	workCtx context.Context
	r       *Round
}

// put stores each vector. A stale record is counted and skipped; a vector
// the store refuses parks its record.
func (b *batch) put(vecs [][]float32) {
	w := b.w
	puts := make([]storekit.EmbeddingPut, len(b.tasks))
	for i, t := range b.tasks {
		puts[i] = storekit.EmbeddingPut{
			Scope: t.Scope, RecordID: t.RecordID, Profile: t.Profile, ContentHash: t.ContentHash,
			Vector: vecs[i], WorkerID: w.cfg.WorkerID, LeaseToken: t.LeaseToken,
		}
	}
	errs := b.putAll(puts)
	var stored, parked []storekit.EmbeddingTask
	for i, t := range b.tasks {
		err := errs[i]
		switch {
		case err == nil:
			b.r.Stored++
			stored = append(stored, t)
		case isStale(err):
			b.r.Stale++
			w.log.Debug("record changed before its vector was stored", zap.String("record_id", t.RecordID))
		case b.workCtx.Err() != nil:
			b.handBackOne(t)
		case errors.Is(err, memorykit.ErrInvalidInput):
			if b.releaseOne(t, memorykit.ReasonCode(err), true) {
				parked = append(parked, t)
			}
		default:
			b.abandon(t, "put", err)
		}
	}
	b.emit(memorykit.EventEmbeddingStored, stored, "")
	b.emit(memorykit.EventEmbeddingFailed, parked, "store_refused")
}

// putAll stores the puts and returns each one's outcome. A store that
// implements storekit.EmbeddingBatchPutter gets them in one call (retried
// as a whole while the store is unavailable); a call it refuses as a whole
// for its size, and any other store, gets one PutEmbedding per put.
func (b *batch) putAll(puts []storekit.EmbeddingPut) []error {
	w := b.w
	errs := make([]error, len(puts))
	if bp, ok := w.cfg.Store.(storekit.EmbeddingBatchPutter); ok {
		var got []error
		err := b.retryStore(func(ctx context.Context) error {
			var err error
			got, err = bp.PutEmbeddings(ctx, puts)
			return err
		})
		switch {
		case err == nil && len(got) == len(puts):
			return got
		case err == nil:
			err = memorykit.NewError("embedworker.put", memorykit.ErrIntegrity, "result_count_mismatch")
			fallthrough
		case !errors.Is(err, memorykit.ErrInvalidInput):
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
		w.log.Debug("batch put refused as a whole; storing one by one", zap.Int("count", len(puts)),
			zap.String("reason", memorykit.ReasonCode(err)))
	}
	for i, p := range puts {
		errs[i] = b.retryStore(func(ctx context.Context) error {
			return w.cfg.Store.PutEmbedding(ctx, p)
		})
	}
	return errs
}

// release hands every record back after a failed Embed: with a retry time
// for a recoverable failure, parked for a permanent one.
func (b *batch) release(cause error, park bool) {
	w := b.w
	reason := memorykit.ReasonCode(cause)
	var done []storekit.EmbeddingTask
	for _, t := range b.tasks {
		if b.releaseOne(t, reason, park) {
			done = append(done, t)
		}
	}
	if park {
		w.log.Error("embedding failed for good; records parked", zap.Int("count", len(done)),
			zap.String("reason", reason), zap.String("kind", memorykit.KindCode(cause)))
		b.emit(memorykit.EventEmbeddingFailed, done, reason)
		return
	}
	w.log.Warn("embedding failed; retrying later", zap.Int("count", len(done)), zap.String("reason", reason))
	b.emit(memorykit.EventEmbeddingRetry, done, reason)
}

// releaseOne releases one lease with a retry time or parked, and reports
// whether it did.
func (b *batch) releaseOne(t storekit.EmbeddingTask, reason string, park bool) bool {
	w := b.w
	rel := storekit.EmbeddingRelease{
		Scope: t.Scope, RecordID: t.RecordID, Profile: t.Profile, ContentHash: t.ContentHash,
		WorkerID: w.cfg.WorkerID, LeaseToken: t.LeaseToken, Reason: reason, Park: park,
	}
	err := b.retryStore(func(ctx context.Context) error {
		if !park {
			rel.RetryAt = w.cfg.Clock.Now().Add(w.cfg.Retry.Delay(t.Attempt))
		}
		return w.cfg.Store.ReleaseEmbedding(ctx, rel)
	})
	switch {
	case err == nil:
		if park {
			b.r.Parked++
		} else {
			b.r.Retried++
		}
		return true
	case isStale(err):
		b.r.Stale++
	case b.workCtx.Err() != nil:
		b.handBackOne(t)
	default:
		b.abandon(t, "release", err)
	}
	return false
}

// handBack releases every lease of the batch because the work context
// ended.
func (b *batch) handBack() {
	for _, t := range b.tasks {
		b.handBackOne(t)
	}
}

// handBackOne releases one lease, available at once, with a context that
// outlives the ended work context by at most HandBackTimeout.
func (b *batch) handBackOne(t storekit.EmbeddingTask) {
	w := b.w
	ctx, cancel := clockctx.Detached(b.workCtx, w.cfg.Clock, w.cfg.HandBackTimeout)
	defer cancel()
	err := w.cfg.Store.ReleaseEmbedding(ctx, storekit.EmbeddingRelease{
		Scope: t.Scope, RecordID: t.RecordID, Profile: t.Profile, ContentHash: t.ContentHash,
		WorkerID: w.cfg.WorkerID, LeaseToken: t.LeaseToken, Reason: ReasonWorkerStopped,
	})
	switch {
	case err == nil:
		b.r.HandedBack++
		w.log.Info("lease handed back", zap.String("record_id", t.RecordID))
	case isStale(err):
		b.r.Stale++
	default:
		b.r.Abandoned++
		w.log.Warn("hand-back failed; the lease will expire", zap.String("record_id", t.RecordID),
			zap.String("reason", memorykit.ReasonCode(err)))
	}
}

// abandon leaves a lease to expire after the store refused an outcome.
func (b *batch) abandon(t storekit.EmbeddingTask, step string, err error) {
	w := b.w
	b.r.Abandoned++
	reason := memorykit.ReasonCode(err)
	if memorykit.IsRecoverable(err) {
		n := w.outages.Add(1)
		w.log.Warn("could not store the record's outcome; the lease will expire", zap.String("record_id", t.RecordID),
			zap.String("step", step), zap.String("reason", reason), zap.String("kind", memorykit.KindCode(err)),
			zap.Int64("store_outages", n))
	} else {
		w.log.Error("could not store the record's outcome; the lease will expire", zap.String("record_id", t.RecordID),
			zap.String("step", step), zap.String("reason", reason), zap.String("kind", memorykit.KindCode(err)))
	}
	b.emit(memorykit.EventWorkerError, []storekit.EmbeddingTask{t}, reason)
}

// retryStore runs op until it succeeds, fails for a reason other than a
// recoverable one, the work context ends, or the leases run out. Waits
// follow StoreBackoff on the clock.
func (b *batch) retryStore(op func(context.Context) error) error {
	w := b.w
	return worker.StoreRetry{Clock: w.cfg.Clock, Backoff: w.cfg.StoreBackoff, OnWait: w.cfg.OnWait, Logger: w.log}.
		Do(b.workCtx, b.expiry, op)
}

// emit sends one event per Scope among tasks, naming their records.
func (b *batch) emit(kind memorykit.EventKind, tasks []storekit.EmbeddingTask, reason string) {
	w := b.w
	var order []memorykit.Scope
	groups := make(map[memorykit.Scope][]storekit.EmbeddingTask)
	for _, t := range tasks {
		if _, ok := groups[t.Scope]; !ok {
			order = append(order, t.Scope)
		}
		groups[t.Scope] = append(groups[t.Scope], t)
	}
	for _, s := range order {
		g := groups[s]
		e := memorykit.Event{
			Kind:     kind,
			At:       w.cfg.Clock.Now(),
			Channel:  memorykit.ChannelVector,
			WorkerID: w.cfg.WorkerID,
			Actor:    string(memorykit.ActorWorker) + ":" + w.cfg.WorkerID,
			Count:    len(g),
			Reason:   reason,
		}.WithScope(s)
		for _, t := range g {
			e.RecordIDs = append(e.RecordIDs, t.RecordID)
			e.Attempt = max(e.Attempt, t.Attempt)
		}
		w.cfg.Events.Emit(e)
	}
}

// isStale reports that a record changed, left the active status or
// disappeared since it was leased: it no longer wants this vector.
func isStale(err error) bool {
	return errors.Is(err, memorykit.ErrStale) || errors.Is(err, memorykit.ErrNotFound)
}
