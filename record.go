package memorykit

import (
	"time"
)

// Kind classifies a memory. The set is closed; an unknown kind is rejected.
type Kind string

const (
	// KindFact is a statement about the project ("the API runs in eu-west-1").
	KindFact Kind = "fact"
	// KindPreference is how the team likes things done.
	KindPreference Kind = "preference"
	// KindDecision records a decision and, usually, why.
	KindDecision Kind = "decision"
	// KindProcedure is a how-to or a runbook step.
	KindProcedure Kind = "procedure"
	// KindNote is anything else worth keeping.
	KindNote Kind = "note"
)

// Kinds lists every valid Kind.
func Kinds() []Kind {
	return []Kind{KindFact, KindPreference, KindDecision, KindProcedure, KindNote}
}

// Valid reports whether k is one of Kinds().
func (k Kind) Valid() bool {
	switch k {
	case KindFact, KindPreference, KindDecision, KindProcedure, KindNote:
		return true
	}
	return false
}

// Status is a record's lifecycle state. A record is created active or
// candidate and moves only by the lifecycle rules (storekit.LifecycleRule, the
// Rule* values):
//
//	candidate -> active | rejected
//	active    -> superseded | inactive
//	inactive | rejected | superseded -> erased (tombstone)
//
// A correction keeps an active or candidate record's status; erased is
// final.
type Status string

const (
	// StatusCandidate is proposed memory waiting for review. Never recalled.
	StatusCandidate Status = "candidate"
	// StatusActive is memory in effect. The only recallable status.
	StatusActive Status = "active"
	// StatusRejected is a candidate a reviewer turned down.
	StatusRejected Status = "rejected"
	// StatusSuperseded is a formerly active record replaced by another active
	// record with the same Scope, kind and key.
	StatusSuperseded Status = "superseded"
	// StatusInactive is forgotten memory: out of every recall path, audit kept.
	StatusInactive Status = "inactive"
	// StatusErased is a tombstone: identity and audit only, content scrubbed.
	StatusErased Status = "erased"
)

// Statuses lists every valid Status.
func Statuses() []Status {
	return []Status{StatusCandidate, StatusActive, StatusRejected, StatusSuperseded, StatusInactive, StatusErased}
}

// Valid reports whether s is one of Statuses().
func (s Status) Valid() bool {
	switch s {
	case StatusCandidate, StatusActive, StatusRejected, StatusSuperseded, StatusInactive, StatusErased:
		return true
	}
	return false
}

// ActorKind says what kind of party acted.
type ActorKind string

const (
	// ActorUser is a human acting through the Host.
	ActorUser ActorKind = "user"
	// ActorTool is a trusted, deterministic tool or integration.
	ActorTool ActorKind = "tool"
	// ActorModel is an LLM acting through the memory tools.
	ActorModel ActorKind = "model"
	// ActorProjection is a deterministic trusted projection of Host state.
	ActorProjection ActorKind = "projection"
	// ActorReviewer is a human or process reviewing memory.
	ActorReviewer ActorKind = "reviewer"
	// ActorOperator is an operator using administrative tooling.
	ActorOperator ActorKind = "operator"
	// ActorWorker is a background worker (extraction, embedding).
	ActorWorker ActorKind = "worker"
)

// Valid reports whether k is a known ActorKind.
func (k ActorKind) Valid() bool {
	switch k {
	case ActorUser, ActorTool, ActorModel, ActorProjection, ActorReviewer, ActorOperator, ActorWorker:
		return true
	}
	return false
}

// Actor identifies who performed an action. Hosts set it from authenticated
// identity; models never choose it.
type Actor struct {
	Kind ActorKind
	ID   string
}

// Validate checks the actor's kind and identifier.
func (a Actor) Validate() error {
	if !a.Kind.Valid() {
		return FieldError("actor.validate", "actor.kind", "unknown")
	}
	return ValidateID("actor.validate", "actor.id", a.ID)
}

// Source says where a memory came from, such as {"conversation", "run-42/turn-3"}.
type Source struct {
	Kind string
	Ref  string
}

// Record is one governed memory.
type Record struct {
	ID          string
	Scope       Scope
	Kind        Kind
	Key         string // canonical form, see NormalizeKey
	Content     string
	Metadata    map[string]string
	Sources     []Source
	Status      Status
	Version     int64 // 1 on create; +1 for every lifecycle action on this record
	ContentHash string
	// EffectiveFrom is when the record starts to apply.
	EffectiveFrom time.Time
	// EffectiveUntil is when it stops applying; zero means open-ended.
	EffectiveUntil time.Time
	// CreatedBy is the original author.
	CreatedBy Actor
	// TouchedBy is the actor of the latest lifecycle action.
	TouchedBy Actor
	CreatedAt time.Time
	UpdatedAt time.Time
}

// EffectiveAt reports whether the record's effective window contains now.
func (r Record) EffectiveAt(now time.Time) bool {
	if now.Before(r.EffectiveFrom) {
		return false
	}
	return r.EffectiveUntil.IsZero() || now.Before(r.EffectiveUntil)
}

// Recallable reports whether the record may reach a model for a request in
// scope at now: active, currently effective and in the same Scope.
func (r Record) Recallable(scope Scope, now time.Time) bool {
	return r.Status == StatusActive && r.Scope == scope && r.EffectiveAt(now)
}

// EmbeddingText is the text an Embedder sees for the record. The key is
// immutable, so ContentHash alone decides whether an embedding is current.
func (r Record) EmbeddingText() string {
	return EmbeddingText(r.Key, r.Content)
}

// EmbeddingText joins a canonical key and content into the embedded text.
func EmbeddingText(key, content string) string {
	return key + "\n" + content
}

// Clone returns a deep copy, so callers cannot mutate a store's state.
func (r Record) Clone() Record {
	if r.Metadata != nil {
		m := make(map[string]string, len(r.Metadata))
		for k, v := range r.Metadata {
			m[k] = v
		}
		r.Metadata = m
	}
	if r.Sources != nil {
		r.Sources = append([]Source(nil), r.Sources...)
	}
	return r
}

// Action is a lifecycle action recorded in a Revision.
type Action string

const (
	// ActionCreate creates a record (active or candidate).
	ActionCreate Action = "create"
	// ActionActivate turns a candidate active.
	ActionActivate Action = "activate"
	// ActionReject turns a candidate down.
	ActionReject Action = "reject"
	// ActionSupersede marks an active record replaced by a newer one.
	ActionSupersede Action = "supersede"
	// ActionCorrect replaces content and sources.
	ActionCorrect Action = "correct"
	// ActionForget makes an active record inactive.
	ActionForget Action = "forget"
	// ActionErase scrubs a record down to a tombstone.
	ActionErase Action = "erase"
)

// Revision is one entry of a record's audit trail. Content, Sources, Metadata
// and ContentHash are the snapshot after the action; Erase scrubs them from
// every revision of the record.
type Revision struct {
	RecordID    string
	Version     int64
	Action      Action
	Actor       Actor
	Reason      string
	Status      Status
	ContentHash string
	Content     string
	Metadata    map[string]string
	Sources     []Source
	At          time.Time
}

// Clone returns a deep copy.
func (v Revision) Clone() Revision {
	if v.Metadata != nil {
		m := make(map[string]string, len(v.Metadata))
		for k, val := range v.Metadata {
			m[k] = val
		}
		v.Metadata = m
	}
	if v.Sources != nil {
		v.Sources = append([]Source(nil), v.Sources...)
	}
	return v
}

// NewRecord is the input for creating a record.
type NewRecord struct {
	// ID is optional. Empty: the store generates a random ID. Set: creation
	// is idempotent; if the ID exists the store returns ErrAlreadyExists
	// together with the existing record when it is in the same Scope.
	ID       string
	Scope    Scope
	Kind     Kind
	Key      string // canonicalised with NormalizeKey before storing
	Content  string
	Metadata map[string]string
	Sources  []Source
	// Status must be StatusActive or StatusCandidate. Creating an active
	// record supersedes the active record with the same Scope, kind and key
	// in the same transaction.
	Status Status
	// EffectiveFrom defaults to the store's clock now when zero.
	EffectiveFrom time.Time
	// EffectiveUntil is zero for open-ended, else must be after EffectiveFrom.
	EffectiveUntil time.Time
	Actor          Actor
	Reason         string
	// Expect, for active creates, is an optimistic condition on the active
	// record currently holding the Scope/kind/key. When it does not hold the
	// store returns ErrVersionConflict and changes nothing.
	Expect *ActiveExpectation
}

// ActiveExpectation is a condition on the current active record for a
// Scope/kind/key.
type ActiveExpectation struct {
	// None requires that no active record holds the key.
	None bool
	// ID and Version require that exactly this record, at this version, is
	// the active one.
	ID      string
	Version int64
	// KeyOwner, when non-nil, also requires that the canonical key is not
	// governed against this actor anywhere in the Scope: no record with the
	// key, under any kind, carries another actor's decision (see
	// GovernsKeyAgainst). The store checks it in the same atomic step as
	// the create; a governed key is ErrVersionConflict with reason
	// ReasonKeyGoverned. The model write path sets it. CreateBatch does not
	// take it (ErrInvalidInput).
	KeyOwner *Actor
}

// ReasonKeyGoverned is the reason code of the ErrVersionConflict a Create
// returns when its ActiveExpectation.KeyOwner condition fails.
const ReasonKeyGoverned = "key_governed"

// GovernsKeyAgainst reports whether rec, a record holding some canonical
// key in a Scope (under any kind), makes that key governed against actor:
// whether rec carries a decision by anyone but actor. This is the rule
// behind ActiveExpectation.KeyOwner, and so behind the model write: a
// model's write is active at once only while no record of its key governs
// it.
//
//   - A candidate never governs: it is a pending proposal, not a decision.
//   - actor's own history does not govern: a record actor created that no
//     one else touched since (version 1), or that actor's own later write
//     superseded (version 2, superseded, touched by actor).
//   - Anything else governs: an active record another actor wrote,
//     reviewed, activated or corrected; and a record that anyone else
//     superseded, rejected, forgot or erased. So a key a person forgot,
//     erased or rejected is not new to the model.
//
// Stores evaluate the same rule in their own terms (pgstore in SQL); the
// storetest lifecycle suite checks that they agree.
func GovernsKeyAgainst(rec Record, actor Actor) bool {
	if rec.Status == StatusCandidate {
		return false
	}
	if rec.CreatedBy != actor || rec.TouchedBy != actor {
		return true
	}
	own := rec.Version == 1 || rec.Status == StatusSuperseded && rec.Version == 2
	return !own
}

// Transition is the input for a lifecycle action on one record.
type Transition struct {
	Scope Scope
	ID    string
	Actor Actor
	// Reason is a short human note for the audit trail. It is stored, never
	// logged.
	Reason string
	// ExpectVersion, when non-zero, must equal the record's current version.
	ExpectVersion int64
}

// Correction is the input for replacing a record's content and sources.
type Correction struct {
	Transition
	Content string
	Sources []Source
	// Metadata replaces the metadata when non-nil.
	Metadata map[string]string
}

// ListFilter selects records for List.
type ListFilter struct {
	Scope Scope
	// Statuses to include; empty means every status.
	Statuses []Status
	// Kind, when set, restricts to one kind.
	Kind Kind
	// Key, when set, restricts to one canonical key. It also matches the
	// erased tombstones of that key, which keep only its keyed digest
	// (TombstoneKeyer.Digest), so a lookup by key still finds them.
	Key string
	// Limit must be 1..Limits.MaxListSize.
	Limit int
	// AfterID continues a listing after this record ID (order: ID ascending).
	AfterID string
}
