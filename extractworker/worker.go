package extractworker

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// Config holds everything a Worker needs. Every field but Related and
// OnWait is required; New rejects a Config that lacks one.
type Config struct {
	// Store is the durable job queue. Completion stores candidates in it.
	Store storekit.JobStore
	// Extractor is the Host's model-backed extraction.
	Extractor memorykit.Extractor
	// Guard checks every proposal (Limits and the Host's ContentValidator)
	// before the completion reaches the store. Pass the same guard the
	// store uses.
	Guard *memorykit.WriteGuard
	// Clock drives leases, deadlines, retries, polling and backoff.
	Clock clock.Clock
	// Logger receives content-free logs; the worker names it
	// "extractworker".
	Logger *zap.Logger
	// Events receives content-free events.
	Events memorykit.EventSink
	// WorkerID is this worker's identity on every lease. It must be a
	// valid memorykit identifier, unique among the workers sharing a
	// queue.
	WorkerID string
	// LeaseTTL is how long a lease lasts. It must exceed JobDeadline and
	// should leave room for the store calls that follow an extraction.
	LeaseTTL time.Duration
	// BatchSize is how many jobs one round leases; they are extracted
	// concurrently. It must be 1..Guard.Limits().MaxListSize.
	BatchSize int
	// PollInterval is the wait after a round that found no job.
	PollInterval time.Duration
	// JobDeadline bounds one job's extraction and proposal checks.
	JobDeadline time.Duration
	// Retry sets when a failed attempt may run again:
	// JobFailure.RetryAt = now + Retry.Delay(attempt), or later when the
	// Extractor's recoverable *memorykit.Error carries a longer
	// RetryAfter (capped at MaxRetryAfter).
	Retry memorykit.Backoff
	// StoreBackoff sets the waits after recoverable store errors (the
	// database went away): the n-th consecutive failure waits
	// StoreBackoff.Delay(n).
	StoreBackoff memorykit.Backoff
	// HandBackTimeout bounds the store calls that must not be cut short by
	// a cancelled context: a lease call (an interrupted one could grant
	// leases the worker never learns of) and handing leases back once the
	// work context has ended.
	HandBackTimeout time.Duration
	// Related, if set, looks up the active memories related to a job's
	// transcript; the Extractor receives them as ExtractionInput.Related.
	// It runs within the job's deadline. A failure is not the job's: the
	// worker emits a content-free EventExtractionRelatedFailed and goes on
	// with no related memories. The runtime sets it to a recall over the
	// job's own Scope.
	Related func(ctx context.Context, job storekit.Job) ([]memorykit.RelatedMemory, error)
	// OnWait, if set, is called on the worker's goroutine right after a
	// wait's timer has been armed on Clock and before the worker blocks on
	// it. A test that advances a mock clock only after this call knows the
	// timer sees the advance. It must return quickly.
	OnWait func(supervisor.Wait)
}

// namePrefix prefixes the WorkerID in the actor's name.
const namePrefix = "extract:"

// validate checks cfg; op names the caller.
func (cfg Config) validate(op string) error {
	missing := func(field string) error {
		return memorykit.ConfigError(op, field, "missing")
	}
	switch {
	case cfg.Store == nil:
		return missing("store")
	case cfg.Extractor == nil:
		return missing("extractor")
	case cfg.Guard == nil:
		return missing("guard")
	case cfg.Clock == nil:
		return missing("clock")
	case cfg.Logger == nil:
		return missing("logger")
	case cfg.Events == nil:
		return missing("events")
	}
	if err := (worker.LeaseSettings{
		NamePrefix: namePrefix, WorkerID: cfg.WorkerID, LeaseTTL: cfg.LeaseTTL,
		Deadline: cfg.JobDeadline, DeadlineField: "job_deadline", BatchSize: cfg.BatchSize,
		PollInterval: cfg.PollInterval, HandBackTimeout: cfg.HandBackTimeout,
		Retry: cfg.Retry, StoreBackoff: cfg.StoreBackoff,
	}).Check(op); err != nil {
		return err
	}
	if cfg.BatchSize > cfg.Guard.Limits().MaxListSize {
		return memorykit.ConfigError(op, "batch_size", "above_max_list_size")
	}
	return nil
}

// Worker is the extraction actor. Its methods are safe for concurrent use,
// but one Worker should run at most one Run at a time: its lease identity
// is its WorkerID.
type Worker struct {
	cfg   Config
	log   *zap.Logger
	actor memorykit.Actor
	// outages counts outcomes left to expire because the store failed
	// recoverably (a handled outage, logged at WARN).
	outages atomic.Int64
}

// StoreOutages returns how many job outcomes this worker could not store
// because the store failed recoverably (the database was down or
// restarting); each lease was left for the reaper, so the job runs again.
func (w *Worker) StoreOutages() int64 { return w.outages.Load() }

// New validates cfg and returns a Worker. A missing part or an invalid
// value is an ErrInvalidConfig *memorykit.Error naming the field.
func New(cfg Config) (*Worker, error) {
	const op = "extractworker.new"
	if err := cfg.validate(op); err != nil {
		return nil, err
	}
	return &Worker{
		cfg:   cfg,
		log:   cfg.Logger.Named("extractworker").With(zap.String("worker_id", cfg.WorkerID)),
		actor: memorykit.Actor{Kind: memorykit.ActorWorker, ID: cfg.WorkerID},
	}, nil
}

// Name returns "extract:" followed by the WorkerID (see supervisor.Actor).
func (w *Worker) Name() string { return namePrefix + w.cfg.WorkerID }

// Round counts what one round did.
type Round struct {
	// Leased is how many jobs the round leased.
	Leased int
	// Completed jobs stored their candidates and are done.
	Completed int
	// Candidates is how many candidate records completions newly created.
	Candidates int
	// Retried jobs failed this attempt and are queued again at RetryAt.
	Retried int
	// Failed jobs failed for good and are tombstones now.
	Failed int
	// HandedBack jobs were released without counting the attempt because
	// the work context ended.
	HandedBack int
	// Abandoned jobs are still leased by this worker and wait for the
	// Reaper: their lease was lost or their outcome could not be stored.
	Abandoned int
}

// Run is the supervisor.Actor loop. It leases jobs while fetchCtx lives,
// processes each batch under workCtx, and waits PollInterval on the clock
// after a round that found nothing. A recoverable store error is logged as
// a reason code and retried after StoreBackoff; a non-recoverable one is
// returned, so the supervisor restarts the worker after its own backoff.
// Run returns nil once fetchCtx has ended and the round in progress is
// finished or handed back.
//
// A panicking Extractor is not recovered here: the panic reaches the
// supervisor (which restarts the worker), and the job's lease is left to
// expire so the Reaper returns it, counting the attempt.
func (w *Worker) Run(fetchCtx, workCtx context.Context) error {
	poll := worker.Poll{Clock: w.cfg.Clock, Interval: w.cfg.PollInterval, Backoff: w.cfg.StoreBackoff,
		OnWait: w.cfg.OnWait, Logger: w.log, What: "lease"}
	return poll.Run(fetchCtx, workCtx, func() (bool, error) {
		r, err := w.round(fetchCtx, workCtx)
		return r.Leased > 0, err
	})
}

// RunOnce leases one batch with ctx and processes it to the end under
// ctx. It is what Run does in each round, for tests and operator tools. The
// error is the lease's; what happened to each job is in the Round and the
// events.
func (w *Worker) RunOnce(ctx context.Context) (Round, error) {
	return w.round(ctx, ctx)
}

// outcomeKind is what a job's extraction decided.
type outcomeKind int

const (
	outComplete outcomeKind = iota // store candidates and finish
	outFail                        // record a failed attempt
	outHandBack                    // work context ended: release the lease
	outPanic                       // the Extractor panicked: abandon the lease
)

// outcome is one job's result, ready to be recorded in the store.
type outcome struct {
	job        storekit.Job
	kind       outcomeKind
	candidates []memorykit.NewRecord
	// reason is the failure's reason code; final fails the job for good.
	reason string
	final  bool
	// panicValue is the recovered panic, re-raised after the round.
	panicValue any
	// retryAfter is the least wait before the next attempt that the
	// Extractor's error asked for (memorykit.Error.RetryAfter).
	retryAfter time.Duration
}

// MaxRetryAfter caps the wait an Extractor's error can ask for through
// memorykit.Error.RetryAfter, so a provider cannot park a job for days.
const MaxRetryAfter = time.Hour

// round leases one batch if fetchCtx is live and processes it under
// workCtx.
//
// The lease call itself is not cut short by either context (only bounded
// by HandBackTimeout): a lease interrupted midway may have been granted
// without the worker learning of it, which would strand the jobs until the
// reaper. If the work context ended meanwhile, the batch is handed back.
func (w *Worker) round(fetchCtx, workCtx context.Context) (Round, error) {
	jobs, err := worker.Lease(fetchCtx, workCtx, w.cfg.Clock, w.cfg.HandBackTimeout, "extractworker.lease",
		func(ctx context.Context) ([]storekit.Job, error) {
			return w.cfg.Store.LeaseJobs(ctx, storekit.JobLease{
				WorkerID: w.cfg.WorkerID, TTL: w.cfg.LeaseTTL, Max: w.cfg.BatchSize,
			})
		})
	if err != nil {
		return Round{}, err
	}
	r := Round{Leased: len(jobs)}
	if len(jobs) == 0 {
		return r, nil
	}
	w.log.Debug("leased jobs", zap.Int("count", len(jobs)))

	outs := make([]outcome, len(jobs))
	var wg sync.WaitGroup
	for i, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = w.extract(workCtx, job)
		}()
	}
	wg.Wait()

	var crashed any
	for _, o := range outs {
		switch o.kind {
		case outPanic:
			if crashed == nil {
				crashed = o.panicValue
			}
			r.Abandoned++
			w.log.Error("extractor panicked; leaving the lease to expire",
				zap.String("job_id", o.job.ID), zap.String("panic_type", fmt.Sprintf("%T", o.panicValue)))
			w.emit(o.job, memorykit.EventWorkerError, 0, "extractor_panic")
		case outHandBack:
			w.handBack(workCtx, o.job, &r)
		default:
			w.record(workCtx, o, &r)
		}
	}
	if crashed != nil {
		panic(ExtractorPanic{Type: fmt.Sprintf("%T", crashed)})
	}
	return r, nil
}

// ExtractorPanic is the value a Worker panics with after its Extractor
// panicked. It names only the type of the original panic value, never its
// text. The other jobs of the round have been recorded by then.
type ExtractorPanic struct {
	// Type is the dynamic type of the Extractor's panic value.
	Type string
}

// String returns a content-free description.
func (p ExtractorPanic) String() string { return "extractworker: extractor panicked with a " + p.Type }

// extract runs the Extractor for one job and checks its proposals. It runs
// on its own goroutine and turns a panic into an outPanic outcome.
func (w *Worker) extract(workCtx context.Context, job storekit.Job) (out outcome) {
	out.job = job
	defer func() {
		if v := recover(); v != nil {
			out = outcome{job: job, kind: outPanic, panicValue: v}
		}
	}()
	if workCtx.Err() != nil {
		out.kind = outHandBack
		return out
	}
	ctx, cancel := clockctx.WithTimeout(workCtx, w.cfg.Clock, w.cfg.JobDeadline)
	defer cancel()
	related := w.related(ctx, job)
	proposals, err := w.cfg.Extractor.Extract(ctx, memorykit.ExtractionInput{
		JobID: job.ID, Scope: job.Scope, RunRef: job.RunRef, Payload: job.Payload, Attempt: job.Attempt,
		Related: related,
	})
	if workCtx.Err() != nil {
		out.kind = outHandBack
		return out
	}
	out.kind = outFail
	switch {
	case ctx.Err() != nil:
		// The deadline passed; a late answer is not used either.
		out.reason = ReasonDeadline
		return out
	case err != nil:
		out.reason = ExtractorReason(err)
		out.final = !memorykit.IsRecoverable(err)
		var me *memorykit.Error
		if errors.As(err, &me) && me.Retry && me.RetryAfter > 0 {
			out.retryAfter = min(me.RetryAfter, MaxRetryAfter)
		}
		return out
	}
	cands, err := w.candidates(ctx, job, proposals)
	switch {
	case workCtx.Err() != nil:
		out.kind = outHandBack
	case ctx.Err() != nil:
		out.reason = ReasonDeadline
	case err != nil && isInvalid(err):
		w.rejected(job, len(proposals), err)
		out.reason = ReasonInvalidCandidate
	case err != nil:
		out.reason = memorykit.ReasonCode(err)
		out.final = !memorykit.IsRecoverable(err)
	default:
		out.kind = outComplete
		out.candidates = cands
	}
	return out
}

// related runs the Related lookup for job, if one is configured. A failure
// (or a panic) leaves the job with no related memories and emits a
// content-free EventExtractionRelatedFailed.
func (w *Worker) related(ctx context.Context, job storekit.Job) (out []memorykit.RelatedMemory) {
	if w.cfg.Related == nil {
		return nil
	}
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				out, err = nil, memorykit.NewError("extractworker.related", memorykit.ErrUnavailable, "related_panic")
			}
		}()
		out, err = w.cfg.Related(ctx, job)
	}()
	if err != nil {
		reason := memorykit.ReasonCode(err)
		w.log.Warn("related-memory lookup failed; extracting without related memories",
			zap.String("job_id", job.ID), zap.String("reason", reason))
		w.emit(job, memorykit.EventExtractionRelatedFailed, 0, reason)
		return nil
	}
	return out
}

// Reason codes the worker records on jobs and in events.
const (
	// ReasonDeadline: the Extractor did not answer within JobDeadline.
	ReasonDeadline = "deadline"
	// ReasonInvalidCandidate: a proposal failed its checks; nothing of the
	// attempt was stored.
	ReasonInvalidCandidate = "invalid_candidate"
	// ReasonWorkerStopped: the work context ended and the lease was handed
	// back.
	ReasonWorkerStopped = "worker_stopped"
)

// candidates turns proposals into candidate records and checks each with
// the guard. The first bad proposal fails the whole set.
func (w *Worker) candidates(ctx context.Context, job storekit.Job, proposals []memorykit.Proposal) ([]memorykit.NewRecord, error) {
	const op = "extractworker.candidates"
	if len(proposals) > w.cfg.Guard.Limits().MaxListSize {
		return nil, memorykit.FieldError(op, "proposals", "too_many")
	}
	out := make([]memorykit.NewRecord, 0, len(proposals))
	seen := make(map[string]bool, len(proposals))
	for _, p := range proposals {
		in := memorykit.NewRecord{
			ID:       storekit.CandidateID(job.Scope, job.ID, p.Kind, storekit.NormalizeKey(p.Key)),
			Scope:    job.Scope,
			Kind:     p.Kind,
			Key:      p.Key,
			Content:  p.Content,
			Metadata: cloneMap(p.Metadata),
			Sources:  append([]memorykit.Source(nil), p.Sources...),
			Status:   memorykit.StatusCandidate,
			Actor:    w.actor,
			Reason:   storekit.ExtractionCandidateReason(job.ID),
		}
		checked, err := w.cfg.Guard.CheckNew(ctx, op, in)
		if err != nil {
			return nil, err
		}
		if seen[checked.ID] {
			return nil, memorykit.FieldError(op, "proposals", "duplicate_key")
		}
		seen[checked.ID] = true
		out = append(out, checked)
	}
	return out, nil
}

// isInvalid reports whether err says a proposal's shape or content was
// rejected, rather than that something failed on the way.
func isInvalid(err error) bool {
	return errors.Is(err, memorykit.ErrInvalidInput) || errors.Is(err, memorykit.ErrInvalidScope)
}

// rejected reports a proposal set that failed its checks.
func (w *Worker) rejected(job storekit.Job, proposals int, err error) {
	reason := memorykit.ReasonCode(err)
	w.log.Warn("proposal rejected; failing the attempt",
		zap.String("job_id", job.ID), zap.Int("attempt", job.Attempt),
		zap.Int("proposals", proposals), zap.String("reason", reason))
	e := w.event(job, memorykit.EventCandidateInvalid, proposals, reason)
	w.cfg.Events.Emit(e)
}

// record stores one job's outcome, retrying recoverable store errors
// while the lease lasts.
func (w *Worker) record(workCtx context.Context, o outcome, r *Round) {
	if o.kind == outComplete {
		var created int
		err := w.retryStore(workCtx, o.job, func(ctx context.Context) error {
			n, err := w.cfg.Store.CompleteJob(ctx, storekit.JobCompletion{
				JobID: o.job.ID, WorkerID: w.cfg.WorkerID, LeaseToken: o.job.LeaseToken, Candidates: o.candidates,
			})
			created = n
			return err
		})
		switch {
		case err == nil:
			r.Completed++
			r.Candidates += created
			w.completed(o, created)
			return
		case isInvalid(err):
			// The store's guard disagreed with ours: fail closed.
			w.rejected(o.job, len(o.candidates), err)
			o.kind, o.reason = outFail, ReasonInvalidCandidate
		default:
			w.storeFailed(workCtx, o.job, "complete", err, r)
			return
		}
	}
	w.fail(workCtx, o, r)
}

// completed reports a finished job.
func (w *Worker) completed(o outcome, created int) {
	ids := make([]string, len(o.candidates))
	for i, c := range o.candidates {
		ids[i] = c.ID
	}
	w.log.Info("job completed", zap.String("job_id", o.job.ID), zap.Int("attempt", o.job.Attempt),
		zap.Int("proposals", len(o.candidates)), zap.Int("created", created))
	e := w.event(o.job, memorykit.EventJobCompleted, created, "")
	e.RecordIDs = ids
	w.cfg.Events.Emit(e)
	if created > 0 {
		c := w.event(o.job, memorykit.EventCandidateStored, created, "extraction")
		c.RecordIDs = ids
		w.cfg.Events.Emit(c)
	}
}

// fail records a failed attempt, queuing the job again at its retry time
// or failing it for good.
func (w *Worker) fail(workCtx context.Context, o outcome, r *Round) {
	var job storekit.Job
	err := w.retryStore(workCtx, o.job, func(ctx context.Context) error {
		var err error
		job, err = w.cfg.Store.FailJob(ctx, storekit.JobFailure{
			JobID: o.job.ID, WorkerID: w.cfg.WorkerID, LeaseToken: o.job.LeaseToken, Reason: o.reason, Final: o.final,
			RetryAt: w.cfg.Clock.Now().Add(max(w.cfg.Retry.Delay(o.job.Attempt), o.retryAfter)),
		})
		return err
	})
	if err != nil {
		w.storeFailed(workCtx, o.job, "fail", err, r)
		return
	}
	if job.State == storekit.JobFailed {
		r.Failed++
		w.log.Warn("job failed for good", zap.String("job_id", o.job.ID),
			zap.Int("attempt", o.job.Attempt), zap.Int("max_attempts", job.MaxAttempts), zap.String("reason", o.reason))
		w.cfg.Events.Emit(w.event(o.job, memorykit.EventJobFailed, 0, o.reason))
		return
	}
	r.Retried++
	w.log.Info("job attempt failed; retrying later", zap.String("job_id", o.job.ID),
		zap.Int("attempt", o.job.Attempt), zap.Time("retry_at", job.AvailableAt), zap.String("reason", o.reason))
	w.cfg.Events.Emit(w.event(o.job, memorykit.EventJobRetry, 0, o.reason))
}

// handBack releases a lease without counting the attempt, with a context
// that outlives the ended work context by at most HandBackTimeout.
func (w *Worker) handBack(workCtx context.Context, job storekit.Job, r *Round) {
	ctx, cancel := clockctx.Detached(workCtx, w.cfg.Clock, w.cfg.HandBackTimeout)
	defer cancel()
	if err := w.cfg.Store.ReleaseJob(ctx, storekit.JobRelease{
		JobID: job.ID, WorkerID: w.cfg.WorkerID, LeaseToken: job.LeaseToken,
	}); err != nil {
		r.Abandoned++
		w.log.Warn("hand-back failed; the lease will expire", zap.String("job_id", job.ID),
			zap.String("reason", memorykit.ReasonCode(err)))
		return
	}
	r.HandedBack++
	w.log.Info("lease handed back", zap.String("job_id", job.ID), zap.Int("attempt", job.Attempt))
}

// storeFailed handles an outcome the store would not take. With the work
// context ended, the lease is handed back; otherwise it is left to expire.
func (w *Worker) storeFailed(workCtx context.Context, job storekit.Job, step string, err error, r *Round) {
	if workCtx.Err() != nil && !errors.Is(err, memorykit.ErrLeaseLost) {
		w.handBack(workCtx, job, r)
		return
	}
	r.Abandoned++
	reason := memorykit.ReasonCode(err)
	if errors.Is(err, memorykit.ErrLeaseLost) {
		w.log.Warn("lease lost before the outcome was stored", zap.String("job_id", job.ID),
			zap.String("step", step), zap.String("reason", reason))
	} else if memorykit.IsRecoverable(err) {
		// A handled outage: the reaper returns the job once the lease
		// expires, so this is a warning, counted.
		n := w.outages.Add(1)
		w.log.Warn("could not store the job's outcome; the lease will expire", zap.String("job_id", job.ID),
			zap.String("step", step), zap.String("reason", reason), zap.String("kind", memorykit.KindCode(err)),
			zap.Int64("store_outages", n))
	} else {
		w.log.Error("could not store the job's outcome; the lease will expire", zap.String("job_id", job.ID),
			zap.String("step", step), zap.String("reason", reason), zap.String("kind", memorykit.KindCode(err)))
	}
	w.cfg.Events.Emit(w.event(job, memorykit.EventWorkerError, 0, reason))
}

// retryStore runs op until it succeeds, fails for a reason other than a
// recoverable one, the work context ends, or the lease runs out. Waits
// follow StoreBackoff on the clock.
func (w *Worker) retryStore(workCtx context.Context, job storekit.Job, op func(context.Context) error) error {
	return worker.StoreRetry{Clock: w.cfg.Clock, Backoff: w.cfg.StoreBackoff, OnWait: w.cfg.OnWait, Logger: w.log}.
		Do(workCtx, job.LeaseExpiresAt, op, zap.String("job_id", job.ID))
}

// event builds a content-free event about job.
func (w *Worker) event(job storekit.Job, kind memorykit.EventKind, count int, reason string) memorykit.Event {
	return memorykit.Event{
		Kind:     kind,
		At:       w.cfg.Clock.Now(),
		JobID:    job.ID,
		WorkerID: w.cfg.WorkerID,
		Actor:    string(memorykit.ActorWorker) + ":" + w.cfg.WorkerID,
		Count:    count,
		Attempt:  job.Attempt,
		Reason:   reason,
	}.WithScope(job.Scope)
}

func (w *Worker) emit(job storekit.Job, kind memorykit.EventKind, count int, reason string) {
	w.cfg.Events.Emit(w.event(job, kind, count, reason))
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ExtractorReason is the content-free reason code recorded (as the job's
// LastError and in events) for an Extractor error. A *memorykit.Error
// carrying a valid reason code keeps it: the Host chose it. Any other error
// records "extractor_", its kind (memorykit.KindCode: "forbidden",
// "deadline", ... or "error") and "_recoverable" or "_final" as the error
// says whether trying again may help: a plain error is
// "extractor_error_final", memorykit.Recoverable of one
// "extractor_error_recoverable".
func ExtractorReason(err error) string {
	var me *memorykit.Error
	if errors.As(err, &me) && me.Reason != "" && storekit.CheckReasonCode("", me.Reason) == nil {
		return me.Reason
	}
	suffix := "_final"
	if memorykit.IsRecoverable(err) {
		suffix = "_recoverable"
	}
	return "extractor_" + memorykit.KindCode(err) + suffix
}
