// Package reviewer implements governed review of memory: listing candidates
// with review hints, activating (which supersedes the active record with
// the same Scope, kind and key), rejecting, correcting, forgetting,
// erasing, and reading the audit history.
//
// Every call is authorized for the principal on the Scope before the store
// is touched: PermReview for everything except Erase and Purge, which need
// PermErase.
//
// # Review hints
//
// [Reviewer.ListCandidates] returns each candidate as a [Candidate] with
// two hints, so a reviewer does not decide blind:
//
//   - Supersedes: the active record activation would replace (same Scope,
//     kind and key, found with the store's own key comparison,
//     [storekit.LifecycleStore.FindActive]), shown when it is currently
//     effective;
//   - Similar: up to [MaxHints] other active, currently effective records
//     of the same Scope, ranked by the recall engine (package recall)
//     against the candidate's key and content, each with its fused score
//     and a content-free reason code ([HintSameKeyOtherKind],
//     [HintSimilarKey], [HintSimilarContent]).
//
// Hints come only from the Scope the caller is authorized to review, under
// the same PermReview check: the hint recall asks the Host's Authorizer for
// PermReview, not PermRead. A candidate, rejected, forgotten, superseded,
// erased, not yet effective or expired record is never a hint, and a
// candidate is never its own hint. A page of N candidates costs at most N
// recalls, each within the RecallPolicy's deadline and budgets. A recall
// that fails or degrades leaves that candidate without similar records,
// sets [Candidate.HintsDegraded] to a reason code and emits a content-free
// [memorykit.EventReviewHintsDegraded] event; it never fails the listing.
// A denied authorization or an invalid Scope still fails the call, and so
// does the caller's context ending.
package reviewer

import (
	"context"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// Config holds a Reviewer's parts. Every field is required.
type Config struct {
	Store      storekit.LifecycleStore
	Authorizer memorykit.Authorizer
	Events     memorykit.EventSink
	Clock      clock.Clock
	// Hints ranks the similar records shown with each candidate.
	Hints HintConfig
}

// HintConfig is what the review hints need: a recall engine of their own,
// built from these parts and the Config's Authorizer, Clock and Events.
// Every field is required, except that Embedder must be nil exactly when
// Policy is LexicalOnly; there is no default policy.
type HintConfig struct {
	// Store runs the recall channels; usually the same store as
	// Config.Store.
	Store storekit.RecallStore
	// Embedder embeds the candidate for the vector channel; its profile
	// and dimension must match Policy's.
	Embedder memorykit.Embedder
	// Policy is the versioned RecallPolicy the hints are ranked under
	// (channels, budgets, deadline); it must pass Validate.
	Policy memorykit.RecallPolicy
	// Logger receives the hint recall's content-free diagnostics. Pass
	// zap.NewNop() to discard them.
	Logger *zap.Logger
}

// Reviewer runs review actions.
type Reviewer struct {
	store  storekit.LifecycleStore
	az     memorykit.Authorizer
	events memorykit.EventSink
	clock  clock.Clock
	engine *recall.Engine
}

// New validates cfg and returns a Reviewer.
func New(cfg Config) (*Reviewer, error) {
	missing := func(field string) error {
		return memorykit.ConfigError("reviewer.new", field, "missing")
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
	case cfg.Hints.Store == nil:
		return nil, missing("hints.store")
	case cfg.Hints.Logger == nil:
		return nil, missing("hints.logger")
	}
	engine, err := recall.New(recall.Config{
		Store:      cfg.Hints.Store,
		Embedder:   cfg.Hints.Embedder,
		Authorizer: reviewAuthorizer{az: cfg.Authorizer},
		Policy:     cfg.Hints.Policy,
		Clock:      cfg.Clock,
		Events:     cfg.Events,
		Logger:     cfg.Hints.Logger.Named("hints"),
	})
	if err != nil {
		return nil, err
	}
	return &Reviewer{store: cfg.Store, az: cfg.Authorizer, events: cfg.Events, clock: cfg.Clock, engine: engine}, nil
}

// Page selects a page of a listing.
type Page struct {
	// Limit must be 1..Limits.MaxListSize.
	Limit int
	// AfterID continues after this record ID.
	AfterID string
}

// Decision is the common input of a review action on one record.
type Decision struct {
	ID string
	// ExpectVersion, when non-zero, must equal the record's current version.
	ExpectVersion int64
	// Reason is an audit note; stored, never logged.
	Reason string
}

// CorrectionInput replaces a record's content and sources.
type CorrectionInput struct {
	Decision
	Content string
	Sources []memorykit.Source
	// Metadata replaces the metadata when non-nil.
	Metadata map[string]string
}

// ListCandidates lists candidate records waiting for review, by ID, each
// with its review hints (see the package documentation).
func (r *Reviewer) ListCandidates(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, page Page) ([]Candidate, error) {
	recs, err := r.List(ctx, p, scope, []memorykit.Status{memorykit.StatusCandidate}, page)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, len(recs))
	for i, rec := range recs {
		c, err := r.hints(ctx, p, scope, rec)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// List lists records of the given statuses (all when empty), by ID.
func (r *Reviewer) List(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, statuses []memorykit.Status, page Page) ([]memorykit.Record, error) {
	if err := memorykit.Authorize(ctx, r.az, p, memorykit.PermReview, scope); err != nil {
		return nil, err
	}
	recs, err := r.store.List(ctx, storekit.ListFilter{Scope: scope, Statuses: statuses, Limit: page.Limit, AfterID: page.AfterID})
	return recs, storekit.Contain("reviewer.list", err)
}

// Get returns one record of any status, for review.
func (r *Reviewer) Get(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, id string) (memorykit.Record, error) {
	if err := memorykit.Authorize(ctx, r.az, p, memorykit.PermReview, scope); err != nil {
		return memorykit.Record{}, err
	}
	rec, err := r.store.Get(ctx, scope, id)
	return rec, storekit.Contain("reviewer.get", err)
}

// History returns a record's audit trail, oldest first.
func (r *Reviewer) History(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, id string) ([]storekit.Revision, error) {
	if err := memorykit.Authorize(ctx, r.az, p, memorykit.PermReview, scope); err != nil {
		return nil, err
	}
	revs, err := r.store.Revisions(ctx, scope, id)
	return revs, storekit.Contain("reviewer.history", err)
}

// Activate turns a candidate active, superseding the active record with the
// same Scope, kind and key.
func (r *Reviewer) Activate(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, d Decision) (memorykit.Record, error) {
	return r.transition(ctx, p, scope, d, memorykit.PermReview, memorykit.ActionActivate, r.store.Activate)
}

// Reject turns a candidate down.
func (r *Reviewer) Reject(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, d Decision) (memorykit.Record, error) {
	return r.transition(ctx, p, scope, d, memorykit.PermReview, memorykit.ActionReject, r.store.Reject)
}

// Forget turns an active record inactive: it leaves every recall path at
// once while its content and audit are kept.
func (r *Reviewer) Forget(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, d Decision) (memorykit.Record, error) {
	return r.transition(ctx, p, scope, d, memorykit.PermReview, memorykit.ActionForget, r.store.Forget)
}

// Erase scrubs an inactive, rejected or superseded record to a tombstone.
// It needs PermErase.
func (r *Reviewer) Erase(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, d Decision) (memorykit.Record, error) {
	return r.transition(ctx, p, scope, d, memorykit.PermErase, memorykit.ActionErase, r.store.Erase)
}

// Purge erases the whole project Scope (storekit.Purger): every record in
// every status, every extraction job, every embedding, and returns the
// deletion report. It needs PermErase, and a store that implements
// storekit.Purger (else ErrInvalidConfig, reason "purge_unsupported").
// reason must be a reason code. A purge cut short finishes on the next
// call; until then writes to the Scope get the recoverable ErrPurging.
func (r *Reviewer) Purge(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, reason string) (memorykit.PurgeReport, error) {
	const op = "reviewer.purge"
	if err := memorykit.Authorize(ctx, r.az, p, memorykit.PermErase, scope); err != nil {
		return memorykit.PurgeReport{}, err
	}
	pg, ok := r.store.(storekit.Purger)
	if !ok {
		return memorykit.PurgeReport{}, memorykit.NewError(op, memorykit.ErrInvalidConfig, "purge_unsupported")
	}
	rep, err := pg.Purge(ctx, scope, p.Actor, reason)
	e := memorykit.Event{
		Kind: memorykit.EventLifecycle, At: r.clock.Now(), Action: memorykit.ActionPurge,
		Actor: string(p.Actor.Kind) + ":" + p.Actor.ID, Count: rep.Records, Reason: "ok",
	}.WithScope(scope)
	if err != nil {
		e.Count, e.Reason = 0, memorykit.ReasonCode(err)
	}
	r.events.Emit(e)
	return rep, err
}

// Correct replaces an active or candidate record's content and sources with
// a new revision; the old embedding stops being used.
func (r *Reviewer) Correct(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, c CorrectionInput) (memorykit.Record, error) {
	if err := memorykit.Authorize(ctx, r.az, p, memorykit.PermReview, scope); err != nil {
		return memorykit.Record{}, err
	}
	rec, err := r.store.Correct(ctx, storekit.Correction{
		Transition: r.toTransition(p, scope, c.Decision),
		Content:    c.Content,
		Sources:    c.Sources,
		Metadata:   c.Metadata,
	})
	r.emit(scope, p, memorykit.ActionCorrect, c.ID, err)
	return rec, storekit.Contain("reviewer.correct", err)
}

func (r *Reviewer) transition(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, d Decision,
	perm memorykit.Permission, action memorykit.Action,
	do func(context.Context, storekit.Transition) (memorykit.Record, error),
) (memorykit.Record, error) {
	if err := memorykit.Authorize(ctx, r.az, p, perm, scope); err != nil {
		return memorykit.Record{}, err
	}
	rec, err := do(ctx, r.toTransition(p, scope, d))
	r.emit(scope, p, action, d.ID, err)
	return rec, storekit.Contain("reviewer."+string(action), err)
}

func (r *Reviewer) toTransition(p memorykit.Principal, scope memorykit.Scope, d Decision) storekit.Transition {
	return storekit.Transition{Scope: scope, ID: d.ID, Actor: p.Actor, Reason: d.Reason, ExpectVersion: d.ExpectVersion}
}

func (r *Reviewer) emit(scope memorykit.Scope, p memorykit.Principal, action memorykit.Action, id string, err error) {
	e := memorykit.Event{
		Kind:   memorykit.EventLifecycle,
		At:     r.clock.Now(),
		Action: action,
		Actor:  string(p.Actor.Kind) + ":" + p.Actor.ID,
		Count:  1,
		Reason: "ok",
	}.WithScope(scope)
	if storekit.ValidateID("", "", id) == nil {
		e.RecordIDs = []string{id}
	}
	if err != nil {
		e.Count = 0
		e.Reason = memorykit.ReasonCode(err)
	}
	r.events.Emit(e)
}
