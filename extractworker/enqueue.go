package extractworker

import (
	"context"
	"errors"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// EnqueuerConfig holds everything an Enqueuer needs. Every field is
// required.
type EnqueuerConfig struct {
	// Store is the durable job queue.
	Store storekit.JobStore
	// Authorizer is the Host's fail-closed project authorizer; every
	// enqueue needs memorykit.PermExtract on the Scope.
	Authorizer memorykit.Authorizer
	// Clock stamps events.
	Clock clock.Clock
	// Logger receives content-free logs; the enqueuer names it
	// "extractworker.enqueue".
	Logger *zap.Logger
	// Events receives EventExtractionEnqueued and EventExtractionEnqueueFailed.
	Events memorykit.EventSink
	// MaxAttempts is every new job's limit on failed attempts (the
	// Extractor returned an error). It must be positive.
	MaxAttempts int
	// MaxReaps is every new job's limit on leases that ended without a
	// result (reaped after the worker died, or handed back on drain). It
	// must be positive.
	MaxReaps int
}

// Enqueuer hands an Agent run's finished turn to extraction as a durable
// job. It is safe for concurrent use.
//
// Enqueue never fails the run: the turn already succeeded, and losing its
// extraction only costs candidate memories. A Host must therefore not fail
// or roll back the turn on an EnqueueFailed status; the failure is reported
// as a content-free EventExtractionEnqueueFailed for operator follow-up.
type Enqueuer struct {
	cfg EnqueuerConfig
	log *zap.Logger
}

// NewEnqueuer validates cfg and returns an Enqueuer. A missing part or an
// invalid value is an ErrInvalidConfig *memorykit.Error naming the field.
func NewEnqueuer(cfg EnqueuerConfig) (*Enqueuer, error) {
	const op = "extractworker.new_enqueuer"
	missing := func(field string) error {
		return memorykit.ConfigError(op, field, "missing")
	}
	switch {
	case cfg.Store == nil:
		return nil, missing("store")
	case cfg.Authorizer == nil:
		return nil, missing("authorizer")
	case cfg.Clock == nil:
		return nil, missing("clock")
	case cfg.Logger == nil:
		return nil, missing("logger")
	case cfg.Events == nil:
		return nil, missing("events")
	case cfg.MaxAttempts <= 0:
		return nil, memorykit.ConfigError(op, "max_attempts", "not_positive")
	case cfg.MaxReaps <= 0:
		return nil, memorykit.ConfigError(op, "max_reaps", "not_positive")
	}
	return &Enqueuer{cfg: cfg, log: cfg.Logger.Named("extractworker.enqueue")}, nil
}

// Turn is one finished Agent turn to extract from. Principal and Scope come
// from the Host's trusted request metadata, never from a model.
type Turn struct {
	Principal memorykit.Principal
	Scope     memorykit.Scope
	// RunRef names the unit of Host work, such as "run-42/turn-3": 1 to
	// storekit.MaxIDBytes bytes of ASCII letters, digits and ". _ - : @ /".
	// The job's identity is storekit.ExtractionJobID(Scope, RunRef), so
	// enqueuing the same turn twice stores one job.
	RunRef string
	// Payload is the turn's text. It is stored in the job and never logged.
	Payload string
}

// EnqueueStatus says what Enqueue did.
type EnqueueStatus string

const (
	// EnqueueQueued: a new job was stored.
	EnqueueQueued EnqueueStatus = "queued"
	// EnqueueDuplicate: the turn's job already exists; nothing changed.
	EnqueueDuplicate EnqueueStatus = "duplicate"
	// EnqueueFailed: nothing was stored. The turn stands; see Reason.
	EnqueueFailed EnqueueStatus = "failed"
	// EnqueueDeferred: storing failed recoverably and the turn is held in
	// the Runtime's outbox, which stores it later (runtime.Outbox). Only
	// runtime.Session.FinishTurn reports it.
	EnqueueDeferred EnqueueStatus = "deferred"
	// EnqueueDropped: storing failed recoverably and the Runtime's outbox
	// was full or closed, so the turn was not kept; see Reason. Only
	// runtime.Session.FinishTurn reports it.
	EnqueueDropped EnqueueStatus = "dropped"
)

// EnqueueResult is Enqueue's content-free report.
type EnqueueResult struct {
	Status EnqueueStatus
	// JobID is the turn's job identity, empty when the Scope or RunRef was
	// unusable.
	JobID string
	// Reason is a reason code when Status is EnqueueFailed, such as
	// "forbidden", "too_long" or "connection_lost".
	Reason string
	// Err is the typed, content-free error behind a failure, for
	// errors.Is; nil otherwise. It is informational: it must not fail the
	// turn.
	Err error
}

// Enqueue authorizes the turn with memorykit.PermExtract and stores its
// extraction job. It never panics on bad input and never returns an error
// to propagate: every failure (denied, invalid Scope or RunRef, payload
// over the limit, store unavailable) comes back as EnqueueFailed with a
// reason code, together with an EventExtractionEnqueueFailed. The Host logs or counts
// it and carries on with the turn.
func (e *Enqueuer) Enqueue(ctx context.Context, t Turn) EnqueueResult {
	const op = "extractworker.enqueue"
	if err := memorykit.Authorize(ctx, e.cfg.Authorizer, t.Principal, memorykit.PermExtract, t.Scope); err != nil {
		return e.failed(t.Scope, "", err)
	}
	if err := storekit.CheckRunRef(op, t.RunRef); err != nil {
		return e.failed(t.Scope, "", err)
	}
	id := storekit.ExtractionJobID(t.Scope, t.RunRef)
	job, err := e.cfg.Store.EnqueueJob(ctx, storekit.NewJob{
		ID: id, Scope: t.Scope, RunRef: t.RunRef, Payload: t.Payload, MaxAttempts: e.cfg.MaxAttempts, MaxReaps: e.cfg.MaxReaps,
	})
	switch {
	case err == nil:
		e.log.Info("extraction enqueued", zap.String("job_id", id), zap.String("tenant_id", t.Scope.TenantID),
			zap.String("subject_id", t.Scope.SubjectID))
		e.cfg.Events.Emit(e.event(memorykit.EventExtractionEnqueued, t.Scope, id, job.MaxAttempts, ""))
		return EnqueueResult{Status: EnqueueQueued, JobID: id}
	case errors.Is(err, memorykit.ErrAlreadyExists) && job.ID == id:
		e.log.Debug("extraction already enqueued", zap.String("job_id", id))
		return EnqueueResult{Status: EnqueueDuplicate, JobID: id}
	}
	return e.failed(t.Scope, id, err)
}

func (e *Enqueuer) failed(scope memorykit.Scope, jobID string, err error) EnqueueResult {
	reason := memorykit.ReasonCode(err)
	e.log.Warn("extraction not enqueued; the turn stands", zap.String("job_id", jobID),
		zap.String("reason", reason), zap.String("kind", memorykit.KindCode(err)),
		zap.Bool("recoverable", memorykit.IsRecoverable(err)))
	ev := e.event(memorykit.EventExtractionEnqueueFailed, memorykit.Scope{}, jobID, 0, reason)
	if scope.Validate() == nil {
		ev = ev.WithScope(scope)
	}
	e.cfg.Events.Emit(ev)
	return EnqueueResult{Status: EnqueueFailed, JobID: jobID, Reason: reason, Err: storekit.Contain("extractworker.enqueue", err)}
}

func (e *Enqueuer) event(kind memorykit.EventKind, scope memorykit.Scope, jobID string, count int, reason string) memorykit.Event {
	return memorykit.Event{Kind: kind, At: e.cfg.Clock.Now(), JobID: jobID, Count: count, Reason: reason}.WithScope(scope)
}
