package reviewer

import (
	"context"
	"errors"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// hintsOp names the hints path in errors.
const hintsOp = "reviewer.hints"

// MaxHints is the most similar records shown with one candidate.
const MaxHints = 3

// Reason codes of a Hint. They say why a record was shown, never what it
// holds.
const (
	// HintSameKeyOtherKind: the record has the candidate's canonical key
	// (by the store's key comparison) under another kind, so activation
	// would not supersede it and both would be active.
	HintSameKeyOtherKind = "same_key_other_kind"
	// HintSimilarKey: the record's key equals the candidate's key or one
	// of the words of its text (the exact recall channel matched it).
	HintSimilarKey = "similar_key"
	// HintSimilarContent: the record shares words (full text) or meaning
	// (vector) with the candidate.
	HintSimilarContent = "similar_content"
)

// Reason codes of Candidate.HintsDegraded that are not an error's code.
const (
	// HintsRecallDegraded: the hint recall degraded as a whole (its
	// deadline passed or the recall store had a recoverable failure).
	HintsRecallDegraded = "recall_degraded"
	// HintsRecallFailed: the hint recall failed with an error that names
	// no reason code of its own.
	HintsRecallFailed = "recall_failed"
	// HintsSupersedeFailed: the supersede lookup failed with an error that
	// names no reason code of its own.
	HintsSupersedeFailed = "supersede_lookup_failed"
)

// Candidate is one candidate record waiting for review, with its review
// hints.
type Candidate struct {
	// Record is the candidate itself.
	Record memorykit.Record
	// Supersedes is the active, currently effective record of the same
	// Scope, kind and key that activating the candidate would supersede,
	// or nil. An active record outside its effective window is not shown,
	// although activation supersedes it too.
	Supersedes *memorykit.Record
	// Similar are up to MaxHints other active, currently effective records
	// of the same Scope, best first (the recall engine's order: fused
	// score, then newer EffectiveFrom, then ID). Supersedes is not repeated
	// here.
	Similar []Hint
	// HintsDegraded is empty when the hints are complete, else the reason
	// code of what failed: Similar is then empty, and so is Supersedes
	// when it was the supersede lookup that failed.
	HintsDegraded string
}

// Hint is one similar record, as the recall engine returned it.
type Hint struct {
	ID   string
	Kind memorykit.Kind
	// Key and Content are the record's, cut to the RecallPolicy's
	// MaxEntryRunes runes each; Truncated reports a cut.
	Key       string
	Content   string
	Truncated bool
	// Version is the record's version when it was ranked.
	Version int64
	// Score is the fused Reciprocal Rank Fusion score.
	Score float64
	// Reason is one of the Hint reason codes.
	Reason string
}

// reviewAuthorizer is the hint recall's authorizer: the recall engine asks
// for PermRead, and the hints answer to exactly the check the listing
// made, PermReview on the same Scope, through the Host's Authorizer. Any
// other permission is refused.
type reviewAuthorizer struct{ az memorykit.Authorizer }

var errHintPermission = errors.New("the hint recall asks only for read")

// Authorize implements memorykit.Authorizer.
func (a reviewAuthorizer) Authorize(ctx context.Context, p memorykit.Principal, perm memorykit.Permission, scope memorykit.Scope) error {
	if perm != memorykit.PermRead {
		return errHintPermission
	}
	return memorykit.Authorize(ctx, a.az, p, memorykit.PermReview, scope)
}

// hints builds one candidate's hints: one FindActive for Supersedes, one
// recall for Similar, and a FindActive for each similar record of another
// kind that matched the exact channel (at most MaxHints). A failure other
// than the caller's context ending, a denial or an invalid Scope degrades
// the hints instead of failing the listing.
func (r *Reviewer) hints(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, cand memorykit.Record) (Candidate, error) {
	const op = hintsOp
	out := Candidate{Record: cand}
	now := r.clock.Now()
	sup, err := r.store.FindActive(ctx, scope, cand.Kind, cand.Key)
	switch {
	case err == nil:
		if sup.ID != cand.ID && sup.Recallable(scope, now) {
			out.Supersedes = &sup
		}
	case errors.Is(err, memorykit.ErrNotFound):
	default:
		if stop := fatalHintError(ctx, err); stop != nil {
			return Candidate{}, stop
		}
		code := memorykit.ReasonCode(storekit.ContainAs(op, memorykit.ErrUnavailable, HintsSupersedeFailed, err))
		return r.degrade(scope, p, out, code), nil
	}

	res, err := r.engine.Recall(ctx, recall.Request{
		Principal: p,
		Scope:     scope,
		Query:     cand.Key + "\n" + cand.Content,
		Keys:      []string{cand.Key},
		// Supersedes may take one of the places.
		MaxItems: MaxHints + 1,
	})
	if err != nil {
		if stop := fatalHintError(ctx, err); stop != nil {
			return Candidate{}, stop
		}
		code := memorykit.ReasonCode(storekit.ContainAs(op, memorykit.ErrUnavailable, HintsRecallFailed, err))
		return r.degrade(scope, p, out, code), nil
	}
	if res.Degraded {
		return r.degrade(scope, p, out, HintsRecallDegraded), nil
	}
	for _, en := range res.Entries {
		if len(out.Similar) == MaxHints {
			break
		}
		if en.ID == cand.ID || (out.Supersedes != nil && en.ID == out.Supersedes.ID) {
			continue
		}
		h := Hint{ID: en.ID, Kind: en.Kind, Key: en.Key, Content: en.Content, Truncated: en.Truncated,
			Version: en.Version, Score: en.Score, Reason: HintSimilarContent}
		if _, exact := en.Ranks[memorykit.ChannelExact]; exact {
			h.Reason = HintSimilarKey
			if en.Kind != cand.Kind {
				same, err := r.store.FindActive(ctx, scope, en.Kind, cand.Key)
				switch {
				case err == nil && same.ID == en.ID:
					h.Reason = HintSameKeyOtherKind
				case err != nil && !errors.Is(err, memorykit.ErrNotFound):
					if stop := fatalHintError(ctx, err); stop != nil {
						return Candidate{}, stop
					}
					// The store could not say; the exact match stands.
				}
			}
		}
		out.Similar = append(out.Similar, h)
	}
	return out, nil
}

// fatalHintError returns the error a hint failure ends the listing with:
// the caller's context ending, a denied authorization or an invalid Scope.
// Every other failure degrades the hints (nil).
func fatalHintError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return memorykit.WrapError(hintsOp, memorykit.ErrUnavailable, "context_done", ctx.Err())
	case errors.Is(err, memorykit.ErrForbidden), errors.Is(err, memorykit.ErrInvalidScope):
		return storekit.Contain(hintsOp, err)
	}
	return nil
}

// degrade marks c's hints degraded for reason and emits the content-free
// event.
func (r *Reviewer) degrade(scope memorykit.Scope, p memorykit.Principal, c Candidate, reason string) Candidate {
	c.Similar, c.HintsDegraded = nil, reason
	r.events.Emit(memorykit.Event{
		Kind:      memorykit.EventReviewHintsDegraded,
		At:        r.clock.Now(),
		Actor:     string(p.Actor.Kind) + ":" + p.Actor.ID,
		RecordIDs: []string{c.Record.ID},
		Reason:    reason,
	}.WithScope(scope))
	return c
}
