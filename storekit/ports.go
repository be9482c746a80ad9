package storekit

import (
	"context"
	"time"

	"github.com/goagents/memorykit"
)

// Store is every store memorykit needs. memorystore and pgstore implement it
// with the same semantics, checked by the storetest conformance suites.
//
// Common rules for every implementation:
//
//   - Time comes from the store's injected clock.Clock; timestamps are UTC
//     and truncated to microseconds (PostgreSQL's precision).
//   - Every write runs the store's WriteGuard (Limits and the Host's
//     ContentValidator) before touching state; a rejected write returns a
//     typed error and changes nothing.
//   - A record, job or revision outside the requested Scope is ErrNotFound,
//     never another tenant's or project's data.
//   - Errors are *Error values with content-free messages. Failures worth
//     retrying (connection loss, serialization failures) are recoverable.
//   - Every operation honours ctx.
type Store interface {
	LifecycleStore
	RecallStore
	EmbeddingStore
	JobStore
}

// LifecycleStore holds records and their audit trail.
type LifecycleStore interface {
	// Create stores a new active or candidate record with version 1 and a
	// "create" revision. An active create supersedes the active record with
	// the same Scope, kind and key (that record gets a "supersede" revision)
	// in the same atomic step, after checking in.Expect. With in.ID set and
	// taken, it returns ErrAlreadyExists (and the existing record when it is
	// in in.Scope) and changes nothing.
	Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error)

	// Get returns a record of any status in scope.
	Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error)

	// FindActive returns the active record for a Scope, kind and canonical
	// key (regardless of its effective window), or ErrNotFound.
	FindActive(ctx context.Context, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, error)

	// List returns records matching f, ordered by ID, at most f.Limit
	// (which must not exceed Limits.MaxListSize).
	List(ctx context.Context, f ListFilter) ([]memorykit.Record, error)

	// Activate turns a candidate active, superseding the active record with
	// the same Scope, kind and key atomically: concurrent activations leave
	// exactly one active record.
	Activate(ctx context.Context, t Transition) (memorykit.Record, error)

	// Reject turns a candidate rejected.
	Reject(ctx context.Context, t Transition) (memorykit.Record, error)

	// Correct replaces the content, sources (and metadata when non-nil) of
	// an active or candidate record, with a new version, revision and
	// content hash. Embeddings of the old content hash are no longer used.
	Correct(ctx context.Context, c Correction) (memorykit.Record, error)

	// Forget turns an active record inactive: it leaves every recall path
	// at once; content, sources and audit are kept.
	Forget(ctx context.Context, t Transition) (memorykit.Record, error)

	// Erase turns an inactive, rejected or superseded record into an erased
	// tombstone: content, content hash, metadata, sources, search terms,
	// embeddings, embedding leases and queue entries, and the content,
	// hash, metadata and sources of every revision are scrubbed; the key is
	// replaced by its keyed digest (TombstoneKeyer.Digest) and every
	// revision's reason that is not a reason code (storekit.ScrubReason) is dropped.
	// ID, Scope, kind, statuses, actors, reason codes, versions and
	// timestamps remain. The extraction jobs the record came from
	// (storekit.ErasureJobIDs) are scrubbed in the same step: a queued one becomes a
	// failed tombstone with reason ReasonErased; a leased one loses its
	// payload at once and, when its worker hands it back, is finished as
	// such a tombstone (CompleteJob drops its proposals for the erased key
	// and stores the others); those jobs, in any state, lose their RunRef.
	// Any other unfinished job of the Scope whose payload quotes the
	// record's key or the content of any of its versions
	// (storekit.PayloadQuotes) is finished at once as a failed tombstone
	// with reason ReasonErasedContent, payload, lease and RunRef cleared, so
	// a worker holding it loses its lease and stores nothing. A store that rewrites rows in place may keep
	// old row versions on disk until its storage reclaims them (see
	// pgstore).
	Erase(ctx context.Context, t Transition) (memorykit.Record, error)

	// Revisions returns a record's audit trail, oldest first.
	Revisions(ctx context.Context, scope memorykit.Scope, id string) ([]Revision, error)
}

// RecallQuery asks every recall channel at once. Only records that are
// Recallable(q.Scope, now) are ever returned.
type RecallQuery struct {
	Scope memorykit.Scope
	// ExactKeys are canonical keys for the exact channel (see ExactKeys).
	ExactKeys []string
	// Terms are full-text terms (see SearchTerms).
	Terms []string
	// Vector, when non-nil, is the query embedding for Profile; only
	// embeddings of Profile whose content hash equals the record's current
	// content hash take part.
	Vector  []float32
	Profile string
	// Per-channel limits; each must be positive.
	ExactLimit    int
	FullTextLimit int
	VectorLimit   int
}

// Hit is one record's place in one channel.
type Hit struct {
	ID   string
	Rank int // 1-based
	// Score: exact 1; full-text the matched term count; vector the cosine
	// similarity.
	Score float64
	// Weight is the full-text IDF weight (full-text only).
	Weight float64
}

// RecallResult holds each channel's hits, best first, and the records they
// name.
type RecallResult struct {
	// Exact hits are ordered by UpdatedAt (newest first), then ID.
	Exact []Hit
	// FullText hits follow storekit.FullTextRule.
	FullText []Hit
	// FullTextBelow are matches dropped by the full-text threshold (for the
	// recall trace), at most FullTextLimit.
	FullTextBelow []Hit
	// Vector hits are ordered by cosine similarity, then ID.
	Vector []Hit
	// Records holds every record any hit list names (not FullTextBelow).
	Records map[string]memorykit.Record
	// VectorErr is set when only the vector channel failed; it is
	// recoverable when the failure was.
	VectorErr error
}

// RecallStore runs the recall channels. Recall should cost one round trip
// where the backend allows it.
type RecallStore interface {
	Recall(ctx context.Context, q RecallQuery) (RecallResult, error)
}

// EmbeddingTask is one record whose embedding for a profile is missing or
// stale, leased to a worker.
type EmbeddingTask struct {
	RecordID    string
	Scope       memorykit.Scope
	Profile     string
	ContentHash string
	// Text is Record.EmbeddingText() at ContentHash.
	Text string
	// Attempt counts leases of this record at this content hash, including
	// this one.
	Attempt int
	// LeaseToken is this lease's fencing token: it is greater than the
	// token of every earlier lease of the record and profile. PutEmbedding
	// and ReleaseEmbedding must carry it; once the record is leased again
	// (after the reaper took this lease back) calls with this token are
	// refused with ErrLeaseLost, even from the same worker ID.
	LeaseToken int64
}

// EmbeddingLease asks for up to Max pending embeddings of Profile.
type EmbeddingLease struct {
	Profile  string
	WorkerID string
	TTL      time.Duration
	Max      int
	// Scope, when set, restricts the lease to that Scope's records (an
	// operator's rebuild of one project); nil leases from every Scope.
	Scope *memorykit.Scope
}

// EmbeddingPut stores one vector.
type EmbeddingPut struct {
	Scope       memorykit.Scope
	RecordID    string
	Profile     string
	ContentHash string
	Vector      []float32
	WorkerID    string
	// LeaseToken is the EmbeddingTask's fencing token. A put whose token
	// is older than the latest lease of the record and profile at
	// ContentHash is ErrLeaseLost and stores nothing. Zero means the put
	// holds no lease: it is accepted only while the record has never been
	// leased at ContentHash.
	LeaseToken int64
}

// EmbeddingRelease hands a lease back after a failure.
type EmbeddingRelease struct {
	Scope       memorykit.Scope
	RecordID    string
	Profile     string
	ContentHash string
	WorkerID    string
	// LeaseToken is the EmbeddingTask's fencing token; it must be the
	// token of the record's current lease.
	LeaseToken int64
	// RetryAt is when the record may be leased again (recoverable failure).
	RetryAt time.Time
	// Park marks a non-recoverable failure: the record stays pending (and
	// counted) but is not leased again until DeleteEmbeddings resets it.
	Park bool
	// Reason is a reason code (see CheckReasonCode).
	Reason string
}

// EmbeddingStore tracks which active records need an embedding for a
// profile and stores vectors guarded by content hash.
type EmbeddingStore interface {
	// LeaseEmbeddings leases active records with no embedding of the
	// profile at their current content hash, which are not leased, not
	// parked and whose retry time has come, in p.Scope only when it is
	// set. The lease expires after TTL on the store's clock.
	LeaseEmbeddings(ctx context.Context, p EmbeddingLease) ([]EmbeddingTask, error)

	// PutEmbedding stores the vector if the record is still active at
	// p.ContentHash, else returns ErrStale and stores nothing. A put whose
	// LeaseToken is older than the record's latest lease at that hash is
	// ErrLeaseLost and stores nothing. It clears the record's lease and
	// retry state. Putting the same vector twice is a no-op.
	PutEmbedding(ctx context.Context, p EmbeddingPut) error

	// ReleaseEmbedding clears the worker's lease, recording a retry time or
	// parking the record. A lease held by another worker, or by the same
	// worker under another LeaseToken, is ErrLeaseLost and nothing changes.
	ReleaseEmbedding(ctx context.Context, r EmbeddingRelease) error

	// PendingEmbeddings counts active records with no current embedding of
	// the profile, parked ones included.
	PendingEmbeddings(ctx context.Context, profile string) (int, error)

	// DeleteEmbeddings deletes the profile's embeddings and lease/park
	// state in one Scope, for a rebuild of that Scope. It returns the
	// number of embeddings deleted.
	DeleteEmbeddings(ctx context.Context, profile string, scope memorykit.Scope) (int, error)

	// DeleteAllEmbeddings deletes the profile's embeddings and lease/park
	// state in every Scope, for a rebuild of the whole store. It returns
	// the number of embeddings deleted.
	DeleteAllEmbeddings(ctx context.Context, profile string) (int, error)

	// ReapEmbeddingLeases returns expired embedding leases to the pool and
	// reports how many.
	ReapEmbeddingLeases(ctx context.Context) (int, error)
}

// JobState is an extraction job's state.
type JobState string

const (
	// JobQueued waits for a worker (possibly until AvailableAt).
	JobQueued JobState = "queued"
	// JobLeased is held by a worker until LeaseExpiresAt.
	JobLeased JobState = "leased"
	// JobDone finished; only a content-free tombstone remains.
	JobDone JobState = "done"
	// JobFailed failed for good; only a content-free tombstone remains.
	JobFailed JobState = "failed"
)

// Job is a durable extraction job.
type Job struct {
	ID    string
	Scope memorykit.Scope
	// RunRef is the Host's reference of the turn the job was enqueued for
	// (see NewJob.RunRef). It holds no memory content and stays on a
	// finished job's tombstone, except that erase drops it from every job
	// it scrubs and purge from every job of the Scope: a turn id can name
	// the conversation an erased memory came from.
	RunRef string
	// Payload is the finished turn's text; empty once the job is done or
	// failed.
	Payload string
	State   JobState
	// Attempt counts leases so far; a lease handed back (ReleaseJob) is
	// not counted.
	Attempt int
	// Failures counts attempts that ended in a failure the attempt itself
	// reported (FailJob: the Extractor returned an error or proposed
	// invalid candidates). MaxAttempts bounds it.
	Failures    int
	MaxAttempts int
	// Reaps counts leases taken back after expiry (the worker died or
	// stalled) and HandBacks leases handed back unfinished (ReleaseJob, a
	// drain). Neither counts toward MaxAttempts; MaxReaps bounds their
	// sum, so a job that always kills its worker still ends.
	Reaps          int
	HandBacks      int
	MaxReaps       int
	AvailableAt    time.Time
	LeasedBy       string
	LeaseExpiresAt time.Time
	// LeaseToken is the fencing token of the job's latest lease (0 before
	// the first): every lease gets a greater one. CompleteJob, FailJob and
	// ReleaseJob must carry the token of the lease they act on.
	LeaseToken int64
	// LastError is a reason code.
	LastError  string
	Candidates int // candidates stored on completion
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// NewJob is the input for enqueuing a job.
type NewJob struct {
	// ID is required; use ExtractionJobID for a deterministic identity.
	ID    string
	Scope memorykit.Scope
	// RunRef, optional, is the Host's reference of the finished turn, such
	// as "run-42/turn-3" (see CheckRunRef); the Extractor sees it in
	// ExtractionInput.
	RunRef      string
	Payload     string
	MaxAttempts int
	// MaxReaps bounds the job's leases that end without a result (reaped
	// after expiry or handed back); it must be positive.
	MaxReaps int
}

// JobLease asks for up to Max queued, available jobs.
type JobLease struct {
	WorkerID string
	TTL      time.Duration
	Max      int
}

// JobCompletion finishes a leased job, storing its candidates atomically.
type JobCompletion struct {
	JobID    string
	WorkerID string
	// LeaseToken is the fencing token LeaseJobs returned with the job.
	LeaseToken int64
	// Candidates must be candidate records in the job's Scope; IDs should be
	// CandidateID values. A candidate whose ID exists is skipped.
	Candidates []memorykit.NewRecord
}

// JobFailure records a failed attempt.
type JobFailure struct {
	JobID    string
	WorkerID string
	// LeaseToken is the fencing token LeaseJobs returned with the job.
	LeaseToken int64
	// Reason is a reason code.
	Reason string
	// RetryAt is when the job may be leased again, if attempts remain.
	RetryAt time.Time
	// Final fails the job for good regardless of attempts left.
	Final bool
}

// JobRelease hands a leased job back without an attempt's result.
type JobRelease struct {
	JobID    string
	WorkerID string
	// LeaseToken is the fencing token LeaseJobs returned with the job.
	LeaseToken int64
}

// JobCounts counts jobs by state.
type JobCounts struct {
	Queued, Leased, Done, Failed int
}

// JobStore is the durable, leased extraction queue. Jobs are leased across
// every Scope with FOR UPDATE SKIP LOCKED semantics: a job is held by at most
// one worker at a time.
type JobStore interface {
	// EnqueueJob stores a queued job available now. An existing ID returns
	// ErrAlreadyExists (with the existing job when in the same Scope) and
	// changes nothing.
	EnqueueJob(ctx context.Context, j NewJob) (Job, error)

	// LeaseJobs leases queued jobs whose AvailableAt has come, oldest
	// AvailableAt first then ID, incrementing Attempt and setting LeasedBy,
	// LeaseExpiresAt = now + TTL and a new, greater LeaseToken.
	LeaseJobs(ctx context.Context, p JobLease) ([]Job, error)

	// CompleteJob stores the candidates and marks the job done, scrubbing
	// its payload, in one atomic step, only if c.WorkerID still holds an
	// unexpired lease under c.LeaseToken; otherwise ErrLeaseLost and
	// nothing changes. It returns how many candidates were newly created.
	// For a job that erase or purge scrubbed while it was leased,
	// candidates for the erased keys (every candidate, after a purge) are
	// dropped (see storekit.DropErasedProposals); a completion with candidates for a
	// Scope whose purge is unfinished is ErrPurging.
	CompleteJob(ctx context.Context, c JobCompletion) (int, error)

	// FailJob records a failed attempt by the lease holder (worker ID and
	// LeaseToken, else ErrLeaseLost and nothing changes), incrementing
	// Failures. While Failures < MaxAttempts (and not Final) the job is
	// queued again at RetryAt; otherwise it becomes a failed tombstone with
	// its payload scrubbed. A job that erase or purge scrubbed while it was
	// leased becomes a failed tombstone with reason ReasonErased instead,
	// here, in ReleaseJob and in ReapJobLeases.
	FailJob(ctx context.Context, f JobFailure) (Job, error)

	// ReleaseJob hands a lease back without counting the attempt: Attempt
	// is decremented, HandBacks incremented, and the job is queued and
	// available now (unless erase scrubbed it; see FailJob), or, once
	// Reaps + HandBacks reaches MaxReaps, a failed tombstone (reason
	// ReasonHandBackLimit). Only the holder under r.LeaseToken may release;
	// otherwise ErrLeaseLost and nothing changes.
	ReleaseJob(ctx context.Context, r JobRelease) error

	// ReapJobLeases handles leases past their expiry, incrementing Reaps
	// (not Failures): jobs with Reaps + HandBacks below MaxReaps are queued
	// and available now, the others become failed tombstones (reason
	// ReasonLeaseExpired). It returns how many leases it reaped.
	ReapJobLeases(ctx context.Context) (int, error)

	// GetJob returns a job in scope.
	GetJob(ctx context.Context, scope memorykit.Scope, id string) (Job, error)

	// CountJobs counts jobs by state across every Scope.
	CountJobs(ctx context.Context) (JobCounts, error)
}
