package runtime

import (
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/runtimehooks"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// Stores are the caller-owned stores a Runtime uses. One storekit.Store
// (memorystore or pgstore) fills every field; see StoresOf.
type Stores struct {
	Lifecycle  storekit.LifecycleStore
	Recall     storekit.RecallStore
	Embeddings storekit.EmbeddingStore
	Jobs       storekit.JobStore
}

// StoresOf uses one Store for every role.
func StoresOf(s storekit.Store) Stores {
	return Stores{Lifecycle: s, Recall: s, Embeddings: s, Jobs: s}
}

// Config is everything a Runtime needs. Every field but Claims, Admission
// (which has a documented preset) and Embedder (under a LexicalOnly Policy)
// is required:
// there is no permissive default, no allow-all authorizer and no fallback
// policy.
type Config struct {
	// Guard holds the validated Limits and the Host's ContentValidator. Pass
	// the same guard the stores were built with.
	Guard *memorykit.WriteGuard
	// Policy is the versioned RecallPolicy.
	Policy memorykit.RecallPolicy
	// Embedder must match Policy.EmbeddingProfile and EmbeddingDimension.
	// It must be nil with a LexicalOnly Policy, and then no embedding
	// worker starts.
	Embedder memorykit.Embedder
	// Authorizer is the Host's fail-closed project authorizer.
	Authorizer memorykit.Authorizer
	// Extractor proposes candidates from finished turns.
	Extractor memorykit.Extractor
	// Stores are caller-owned; the Runtime never closes them.
	Stores Stores
	// Clock drives every deadline, lease, retry and backoff.
	Clock clock.Clock
	// WorkerID identifies this Runtime's workers on every lease; it must be
	// unique among the Runtimes sharing a database.
	WorkerID string
	// Logger receives content-free logs, named per component.
	Logger *zap.Logger
	// Events receives content-free events.
	Events memorykit.EventSink
	// Workers sets leases, retries and the worker schedule.
	Workers Workers
	// Tools bounds the memory tools' arguments and results.
	Tools memorytools.Limits
	// Admission bounds the concurrent request-path store calls (see
	// Admission). The zero value means DefaultAdmission(); a partly set
	// value is validated as given.
	Admission Admission
	// Claims is the Host's detector of false "memory saved" claims, which
	// Session.ValidateOutput consults after a failed write. Optional: nil
	// means memorytools.DefaultClaimDetector().
	Claims memorytools.ClaimDetector
	// Outbox bounds the outbox that keeps turns whose extraction enqueue
	// failed recoverably, and retries them.
	Outbox Outbox
	// Mode says whether this Runtime serves requests, runs the workers, or
	// both (ModeAll).
	Mode Mode

	// hooks are test seams, set only through package runtimetest.
	hooks runtimehooks.Hooks
}

func init() {
	runtimehooks.Set = func(cfg any, h runtimehooks.Hooks) { cfg.(*Config).hooks = h }
}

// Actor names, as a test hook of package runtimetest sees them.
const (
	ActorEmbed   = "embed"
	ActorExtract = "extract"
	ActorReap    = "reap"
)

// Workers sets the background actors' leases, retries and schedule.
type Workers struct {
	// LeaseTTL is how long a worker holds a lease. It must exceed both
	// EmbedDeadline and JobDeadline.
	LeaseTTL time.Duration
	// EmbedBatch is how many records one Embed call gets.
	EmbedBatch int
	// EmbedPoll is the embedding worker's wait after an empty round.
	EmbedPoll time.Duration
	// EmbedDeadline bounds one Embed call.
	EmbedDeadline time.Duration
	// EmbedRetry sets when a recoverably failed embedding is tried again.
	EmbedRetry memorykit.Backoff
	// ExtractBatch is how many jobs one extraction round leases.
	ExtractBatch int
	// ExtractPoll is the extraction worker's wait after an empty round.
	ExtractPoll time.Duration
	// JobDeadline bounds one Extractor call.
	JobDeadline time.Duration
	// JobRetry sets when a failed job is tried again.
	JobRetry memorykit.Backoff
	// JobMaxAttempts bounds the failed attempts (the Extractor returned an
	// error) of every enqueued job.
	JobMaxAttempts int
	// JobMaxReaps bounds the leases of every enqueued job that end without
	// a result: reaped because the worker died, or handed back on drain.
	// These do not count toward JobMaxAttempts.
	JobMaxReaps int
	// ReapInterval is how often expired leases are returned.
	ReapInterval time.Duration
	// StoreBackoff sets every worker's wait after recoverable store errors.
	StoreBackoff memorykit.Backoff
	// HandBackTimeout bounds handing leases back when work is cancelled.
	HandBackTimeout time.Duration
	// Restart sets the supervisor's waits before restarting a failed
	// actor (see supervisor.Config.Backoff).
	Restart memorykit.Backoff
	// MaxRestarts is how many consecutive restarts an actor gets after
	// non-recoverable failures before the supervisor gives up on it (see
	// supervisor.Config.MaxRestarts).
	MaxRestarts int
}

func missing(field string) error {
	return memorykit.ConfigError("runtime.new", field, "missing")
}

func invalid(field, reason string) error {
	return memorykit.ConfigError("runtime.new", field, reason)
}

// validate checks every part; the worker packages re-check their own parts.
func (c Config) validate() error {
	switch {
	case c.Guard == nil:
		return missing("guard")
	case c.Authorizer == nil:
		return missing("authorizer")
	case c.Extractor == nil:
		return missing("extractor")
	case c.Stores.Lifecycle == nil:
		return missing("stores.lifecycle")
	case c.Stores.Recall == nil:
		return missing("stores.recall")
	case c.Stores.Embeddings == nil:
		return missing("stores.embeddings")
	case c.Stores.Jobs == nil:
		return missing("stores.jobs")
	case c.Clock == nil:
		return missing("clock")
	case c.Logger == nil:
		return missing("logger")
	case c.Events == nil:
		return missing("events")
	}
	if err := c.Guard.Limits().Validate(); err != nil {
		return err
	}
	if err := c.Policy.Validate(); err != nil {
		return err
	}
	if err := recall.CheckEmbedder("runtime.new", c.Policy, c.Embedder); err != nil {
		return err
	}
	if err := c.Tools.Validate(); err != nil {
		return err
	}
	if err := c.Outbox.validate(); err != nil {
		return err
	}
	if err := c.Mode.validate(); err != nil {
		return err
	}
	if err := storekit.ValidateID("runtime.new", "worker_id", c.WorkerID); err != nil {
		return invalid("worker_id", memorykit.ReasonCode(err))
	}
	if err := c.Admission.effective().validate(); err != nil {
		return err
	}
	return c.Workers.validate()
}

func (w Workers) validate() error {
	durations := []struct {
		name string
		d    time.Duration
	}{
		{"workers.lease_ttl", w.LeaseTTL},
		{"workers.embed_poll", w.EmbedPoll},
		{"workers.embed_deadline", w.EmbedDeadline},
		{"workers.extract_poll", w.ExtractPoll},
		{"workers.job_deadline", w.JobDeadline},
		{"workers.reap_interval", w.ReapInterval},
		{"workers.hand_back_timeout", w.HandBackTimeout},
	}
	for _, d := range durations {
		if d.d <= 0 {
			return invalid(d.name, "must_be_positive")
		}
	}
	if w.LeaseTTL <= w.EmbedDeadline || w.LeaseTTL <= w.JobDeadline {
		return invalid("workers.lease_ttl", "must_exceed_deadlines")
	}
	for _, n := range []struct {
		name string
		v    int
	}{
		{"workers.embed_batch", w.EmbedBatch},
		{"workers.extract_batch", w.ExtractBatch},
		{"workers.job_max_attempts", w.JobMaxAttempts},
		{"workers.job_max_reaps", w.JobMaxReaps},
	} {
		if n.v <= 0 {
			return invalid(n.name, "must_be_positive")
		}
	}
	for _, b := range []struct {
		name string
		b    memorykit.Backoff
	}{
		{"workers.embed_retry", w.EmbedRetry},
		{"workers.job_retry", w.JobRetry},
		{"workers.store_backoff", w.StoreBackoff},
	} {
		if err := storekit.PrefixField("runtime.new", b.name, b.b.Validate()); err != nil {
			return err
		}
	}
	if err := storekit.PrefixField("runtime.new", "workers.restart", w.Restart.Validate()); err != nil {
		return err
	}
	if w.MaxRestarts <= 0 {
		return invalid("workers.max_restarts", "must_be_positive")
	}
	return nil
}
