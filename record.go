package memorykit

import (
	"time"

	"github.com/goagents/memorykit/internal/plumbing/textrule"
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
	return validateID("actor.validate", "actor.id", a.ID)
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
	return textrule.EmbeddingText(r.Key, r.Content)
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

// Action is a lifecycle action recorded in a storekit.Revision.
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
	// ActionPurge erases a record as part of a project purge
	// (storekit.Purger). It may start from any status but erased.
	ActionPurge Action = "purge"
)

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
	// storekit.GovernsKeyAgainst). The store checks it in the same atomic step as
	// the create; a governed key is ErrVersionConflict with reason
	// ReasonKeyGoverned. The model write path sets it. CreateBatch does not
	// take it (ErrInvalidInput).
	KeyOwner *Actor
}

// Check tests the expectation against the active record holding the
// Scope, kind and key now, given by its ID and version (holderID empty
// when no record holds it). A failed expectation is ErrVersionConflict
// with reason "active_record_changed".
func (x ActiveExpectation) Check(op, holderID string, holderVersion int64) error {
	held := holderID != ""
	if x.None && !held || !x.None && held && holderID == x.ID && holderVersion == x.Version {
		return nil
	}
	return NewError(op, ErrVersionConflict, "active_record_changed")
}
