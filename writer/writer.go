// Package writer implements memorykit's write paths: the trusted explicit
// write (a user or a trusted tool), the deterministic trusted projection, and
// the model write behind the remember_project_memory tool.
//
// Every path authorizes first and fails closed; the store's WriteGuard then
// validates content against Limits and the Host's ContentValidator.
//
// A model write takes effect immediately only for a key that is new to the
// model or holds nothing but the same model's own, untouched earlier
// writes. The rule is per canonical key within the Scope, across every
// kind: if anyone else wrote, reviewed or corrected an active record with
// the key under any kind, or forgot, erased or rejected a record with it,
// the write is stored as a candidate for review and what is in effect
// stays. The store decides this in the same atomic step as the create (see
// memorykit.ActiveExpectation.KeyOwner and storekit.GovernsKeyAgainst).
package writer

import (
	"context"
	"errors"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Config holds a Writer's parts. Every field is required.
type Config struct {
	Store      storekit.LifecycleStore
	Authorizer memorykit.Authorizer
	Events     memorykit.EventSink
	Clock      clock.Clock
}

// Writer runs the write paths.
type Writer struct {
	store  storekit.LifecycleStore
	az     memorykit.Authorizer
	events memorykit.EventSink
	clock  clock.Clock
}

// New validates cfg and returns a Writer.
func New(cfg Config) (*Writer, error) {
	missing := func(field string) error {
		return memorykit.ConfigError("writer.new", field, "missing")
	}
	switch {
	case cfg.Store == nil:
		return nil, missing("store")
	case cfg.Authorizer == nil:
		return nil, missing("authorizer")
	case cfg.Events == nil:
		return nil, missing("events")
	case cfg.Clock == nil:
		return nil, missing("clock")
	}
	return &Writer{store: cfg.Store, az: cfg.Authorizer, events: cfg.Events, clock: cfg.Clock}, nil
}

// Input is the content of one write. Scope and actor never come from here:
// they come from the Host's trusted principal and route.
type Input struct {
	Kind     memorykit.Kind
	Key      string
	Content  string
	Metadata map[string]string
	Sources  []memorykit.Source
	// EffectiveFrom and EffectiveUntil bound when the memory applies; zero
	// values mean "from now" and "open-ended".
	EffectiveFrom  time.Time
	EffectiveUntil time.Time
	// Reason is an optional audit note.
	Reason string
}

// Outcome says what a write did.
type Outcome string

const (
	// OutcomeActive means the write is in effect now.
	OutcomeActive Outcome = "active"
	// OutcomeCandidate means the write waits for review; any active record
	// for the key stays in effect.
	OutcomeCandidate Outcome = "candidate"
)

// Result is a successful write.
type Result struct {
	Record  memorykit.Record
	Outcome Outcome
}

// WriteExplicit is the trusted explicit write of a user or a trusted tool:
// after authorization (PermWrite) and validation the record is active at
// once, superseding the active record with the same kind and key.
func (w *Writer) WriteExplicit(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, in Input) (Result, error) {
	const op = "writer.explicit"
	if p.Actor.Kind != memorykit.ActorUser && p.Actor.Kind != memorykit.ActorTool {
		return Result{}, w.fail(op, scope, p, &memorykit.Error{Op: op, Kind: memorykit.ErrForbidden, Reason: "actor_kind_not_trusted"})
	}
	return w.writeActive(ctx, op, p, memorykit.PermWrite, scope, in)
}

// WriteProjection is a deterministic trusted projection of Host state (for
// example the project's configured language): active at once, no model
// involved. The principal's actor must be of kind projection.
func (w *Writer) WriteProjection(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, in Input) (Result, error) {
	const op = "writer.projection"
	if p.Actor.Kind != memorykit.ActorProjection {
		return Result{}, w.fail(op, scope, p, &memorykit.Error{Op: op, Kind: memorykit.ErrForbidden, Reason: "actor_kind_not_projection"})
	}
	return w.writeActive(ctx, op, p, memorykit.PermWrite, scope, in)
}

func (w *Writer) writeActive(ctx context.Context, op string, p memorykit.Principal, perm memorykit.Permission, scope memorykit.Scope, in Input) (Result, error) {
	if err := memorykit.Authorize(ctx, w.az, p, perm, scope); err != nil {
		return Result{}, w.fail(op, scope, p, err)
	}
	rec, err := w.store.Create(ctx, w.newRecord(scope, p.Actor, memorykit.StatusActive, in, nil))
	if err != nil {
		return Result{}, w.fail(op, scope, p, err)
	}
	w.emit(memorykit.EventWriteStored, scope, p, rec.ID, "active")
	return Result{Record: rec, Outcome: OutcomeActive}, nil
}

// maxModelWriteAttempts bounds the optimistic retry loop when the active
// record changes between the read and the conditional create.
const maxModelWriteAttempts = 3

// WriteModel is the model's write through remember_project_memory. It needs
// PermModelWrite and a principal whose actor is a model. The write is active
// at once only when its canonical key is not governed against the model in
// the Scope under any kind (storekit.GovernsKeyAgainst), replacing the
// model's own untouched earlier write of the same kind if there is one;
// otherwise it becomes a candidate. The store checks the key in the same
// atomic step as the create, so a write by someone else that lands between
// this method's read and its create turns it into a candidate.
func (w *Writer) WriteModel(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, in Input) (Result, error) {
	const op = "writer.model"
	if p.Actor.Kind != memorykit.ActorModel {
		return Result{}, w.fail(op, scope, p, &memorykit.Error{Op: op, Kind: memorykit.ErrForbidden, Reason: "actor_kind_not_model"})
	}
	if err := memorykit.Authorize(ctx, w.az, p, memorykit.PermModelWrite, scope); err != nil {
		return Result{}, w.fail(op, scope, p, err)
	}
	key := storekit.NormalizeKey(in.Key)
	for attempt := 0; attempt < maxModelWriteAttempts; attempt++ {
		cur, err := w.store.FindActive(ctx, scope, in.Kind, key)
		var expect *memorykit.ActiveExpectation
		switch {
		case errors.Is(err, memorykit.ErrNotFound):
			expect = &memorykit.ActiveExpectation{None: true}
		case err != nil:
			return Result{}, w.fail(op, scope, p, err)
		case OwnUntouched(cur, p.Actor):
			expect = &memorykit.ActiveExpectation{ID: cur.ID, Version: cur.Version}
		default:
			return w.writeCandidate(ctx, op, scope, p, in)
		}
		owner := p.Actor
		expect.KeyOwner = &owner
		rec, err := w.store.Create(ctx, w.newRecord(scope, p.Actor, memorykit.StatusActive, in, expect))
		if errors.Is(err, memorykit.ErrVersionConflict) {
			if memorykit.ReasonCode(err) == storekit.ReasonKeyGoverned {
				return w.writeCandidate(ctx, op, scope, p, in)
			}
			continue // the active record changed under us; decide again
		}
		if err != nil {
			return Result{}, w.fail(op, scope, p, err)
		}
		w.emit(memorykit.EventWriteStored, scope, p, rec.ID, "active")
		return Result{Record: rec, Outcome: OutcomeActive}, nil
	}
	// Still contended: the safe answer is a candidate for review.
	return w.writeCandidate(ctx, op, scope, p, in)
}

func (w *Writer) writeCandidate(ctx context.Context, op string, scope memorykit.Scope, p memorykit.Principal, in Input) (Result, error) {
	rec, err := w.store.Create(ctx, w.newRecord(scope, p.Actor, memorykit.StatusCandidate, in, nil))
	if err != nil {
		return Result{}, w.fail(op, scope, p, err)
	}
	w.emit(memorykit.EventCandidateStored, scope, p, rec.ID, "needs_review")
	return Result{Record: rec, Outcome: OutcomeCandidate}, nil
}

// OwnUntouched reports whether rec is actor's own untouched write: created
// by actor, and no lifecycle action (review, correction, activation by
// someone else) since.
func OwnUntouched(rec memorykit.Record, actor memorykit.Actor) bool {
	return rec.Version == 1 && rec.CreatedBy == actor && rec.TouchedBy == actor
}

func (w *Writer) newRecord(scope memorykit.Scope, actor memorykit.Actor, status memorykit.Status, in Input, expect *memorykit.ActiveExpectation) memorykit.NewRecord {
	return memorykit.NewRecord{
		Scope:          scope,
		Kind:           in.Kind,
		Key:            in.Key,
		Content:        in.Content,
		Metadata:       in.Metadata,
		Sources:        in.Sources,
		Status:         status,
		EffectiveFrom:  in.EffectiveFrom,
		EffectiveUntil: in.EffectiveUntil,
		Actor:          actor,
		Reason:         in.Reason,
		Expect:         expect,
	}
}

func (w *Writer) fail(op string, scope memorykit.Scope, p memorykit.Principal, err error) error {
	scope = safeScope(scope)
	if refusedBeforeAuthorization(err) {
		// The Scope is the caller's choice until authorization succeeds,
		// so a refused write names no project.
		scope = memorykit.Scope{}
	}
	w.events.Emit(memorykit.Event{
		Kind:   memorykit.EventWriteFailed,
		At:     w.clock.Now(),
		Actor:  actorLabel(p.Actor),
		Reason: memorykit.ReasonCode(err),
	}.WithScope(scope))
	return storekit.Contain(op, err)
}

func (w *Writer) emit(kind memorykit.EventKind, scope memorykit.Scope, p memorykit.Principal, id, reason string) {
	w.events.Emit(memorykit.Event{
		Kind:      kind,
		At:        w.clock.Now(),
		RecordIDs: []string{id},
		Actor:     actorLabel(p.Actor),
		Count:     1,
		Reason:    reason,
	}.WithScope(scope))
}

func actorLabel(a memorykit.Actor) string {
	if storekit.ValidateID("", "", a.ID) != nil || !a.Kind.Valid() {
		return "invalid"
	}
	return string(a.Kind) + ":" + a.ID
}

// refusedBeforeAuthorization reports an error of the checks that come
// before authorization succeeds (actor kind, Scope shape, the grant).
func refusedBeforeAuthorization(err error) bool {
	return errors.Is(err, memorykit.ErrForbidden) || errors.Is(err, memorykit.ErrInvalidScope)
}

// safeScope keeps only identifiers that pass validation, so a hostile Scope
// value never reaches an event.
func safeScope(s memorykit.Scope) memorykit.Scope {
	if s.Validate() == nil {
		return s
	}
	return memorykit.Scope{}
}
