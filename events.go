package memorykit

import "time"

// EventKind names what happened.
type EventKind string

// Event kinds. Every event is content-free: identifiers, counts and reason
// codes only. Each constant's name spells its value: EventX for "x",
// EventXY for "x.y".
const (
	EventRecallDegraded          EventKind = "recall.degraded"
	EventRecallCompleted         EventKind = "recall.completed"
	EventWriteFailed             EventKind = "write.failed"
	EventWriteStored             EventKind = "write.stored"
	EventCandidateStored         EventKind = "candidate.stored"
	EventExtractionEnqueued      EventKind = "extraction.enqueued"
	EventExtractionEnqueueFailed EventKind = "extraction.enqueue_failed"
	EventJobCompleted            EventKind = "job.completed"
	EventJobRetry                EventKind = "job.retry"
	EventJobFailed               EventKind = "job.failed"
	EventCandidateInvalid        EventKind = "candidate.invalid"
	EventEmbeddingStored         EventKind = "embedding.stored"
	EventEmbeddingRetry          EventKind = "embedding.retry"
	EventEmbeddingFailed         EventKind = "embedding.failed"
	EventLeasesReaped            EventKind = "leases.reaped"
	EventActorRestarted          EventKind = "actor.restarted"
	EventActorGaveUp             EventKind = "actor.gave_up"
	EventActorStopped            EventKind = "actor.stopped"
	EventWorkerError             EventKind = "worker.error"
	EventLifecycle               EventKind = "lifecycle"
	// EventExtractionUsage: one extraction model call's token usage, in
	// InputTokens and OutputTokens.
	EventExtractionUsage EventKind = "extraction.usage"
	// EventExtractionDropped: an extraction engine dropped Count of a
	// job's proposals for the reason code in Reason (one event per reason).
	EventExtractionDropped EventKind = "extraction.dropped"
	// EventExtractionRelatedFailed: the related-memory lookup for a job
	// failed (Reason); the job went on with no related memories.
	EventExtractionRelatedFailed EventKind = "extraction.related_failed"

	// Actor health events, emitted by the supervisor when an actor enters or
	// leaves its backing_off state (see supervisor.ActorHealth).

	// EventActorDegraded: an actor failed and now keeps retrying on its
	// backoff; Reason is the failure's code, Attempt the failure count.
	EventActorDegraded EventKind = "actor.degraded"
	// EventActorRecovered: an actor left backing_off and runs again;
	// Count is how many consecutive failures it went through.
	EventActorRecovered EventKind = "actor.recovered"

	// EventReviewHintsDegraded: the review hints of one candidate could not
	// be computed in full (reviewer.ListCandidates); RecordIDs holds the
	// candidate's ID and Reason the failure's code. The listing itself went on.
	EventReviewHintsDegraded EventKind = "review.hints_degraded"
)

// Event is a content-free operational record. It has no field that can hold
// memory content, query text, vectors, headers or provider payloads: only
// identifiers (validated by their producers), counts and reason codes.
type Event struct {
	Kind        EventKind
	At          time.Time
	TenantID    string
	SubjectType SubjectType
	SubjectID   string
	Channel     Channel
	RecordIDs   []string
	JobID       string
	WorkerID    string
	Actor       string // "kind:id" of the acting party, if any
	Action      Action
	Count       int
	Attempt     int
	Reason      string // a reason code, see CheckReasonCode
	// Duration is how long the reported operation took, on the producer's
	// clock. recall.completed and recall.degraded (the whole-recall event,
	// with no Channel) carry it; other events leave it zero.
	Duration time.Duration
	// InputTokens and OutputTokens are a model call's token usage;
	// extraction.usage carries them, other events leave them zero.
	InputTokens  int64
	OutputTokens int64
}

// WithScope returns e with the Scope's identifiers filled in.
func (e Event) WithScope(s Scope) Event {
	e.TenantID, e.SubjectType, e.SubjectID = s.TenantID, s.SubjectType, s.SubjectID
	return e
}

// DiscardEvents is an EventSink that drops every event. It exists for tests
// and tools that have no use for events; production compositions should
// pass a real sink.
type DiscardEvents struct{}

// Emit drops e.
func (DiscardEvents) Emit(Event) {}
