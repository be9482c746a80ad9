package writer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// Tests for the model write rule per canonical key across kinds (issue 10,
// holes 1 and 3). Each runs on memorystore and pgstore.

func input(kind memorykit.Kind, key, content string) writer.Input {
	return writer.Input{Kind: kind, Key: key, Content: content}
}

// activeWithKey lists the active records of b's Scope holding key (any
// kind).
func (b *bundle) activeWithKey(t *testing.T, key string) []memorykit.Record {
	t.Helper()
	recs, err := b.store.List(context.Background(), storekit.ListFilter{
		Scope: b.scope, Key: key, Statuses: []memorykit.Status{memorykit.StatusActive}, Limit: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func (b *bundle) modelWrite(t *testing.T, in writer.Input) writer.Result {
	t.Helper()
	res, err := b.w.WriteModel(context.Background(), b.model, b.scope, in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Hole 1: a user's fact must not be shadowed by the model's active record
// of the same key under another kind.
func TestModelWriteCannotShadowUserKeyUnderAnotherKind(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		b := setupOn(t, be)
		ctx := context.Background()
		user, err := b.w.WriteExplicit(ctx, b.user, b.scope, input(memorykit.KindFact, "billing owner", "Team Blue owns billing."))
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []memorykit.Kind{memorykit.KindDecision, memorykit.KindPreference, memorykit.KindNote, memorykit.KindProcedure, memorykit.KindFact} {
			res := b.modelWrite(t, input(kind, "Billing  OWNER", "Team Red owns billing."))
			if res.Outcome != writer.OutcomeCandidate || res.Record.Status != memorykit.StatusCandidate {
				t.Fatalf("model write under %s: outcome %s status %s, want a candidate", kind, res.Outcome, res.Record.Status)
			}
		}
		active := b.activeWithKey(t, "billing owner")
		if len(active) != 1 || active[0].ID != user.Record.ID {
			t.Fatalf("active records with the key = %d, want only the user's", len(active))
		}

		// Another model's active record governs the key for this model too.
		other := testkit.Principal("acme", memorykit.ActorModel, "agent-2")
		b.az.Grant("agent-2", b.scope, memorykit.PermModelWrite)
		if res, err := b.w.WriteModel(ctx, other, b.scope, input(memorykit.KindNote, "on call", "Bob is on call.")); err != nil || res.Outcome != writer.OutcomeActive {
			t.Fatalf("another model's first write = %v, %v", res.Outcome, err)
		}
		if res := b.modelWrite(t, input(memorykit.KindDecision, "on call", "Eve is on call.")); res.Outcome != writer.OutcomeCandidate {
			t.Fatalf("write over another model's key under another kind: %s, want candidate", res.Outcome)
		}

		// The model's own untouched write of a key does not govern it:
		// the same model may add the key under another kind.
		if res := b.modelWrite(t, input(memorykit.KindNote, "build tool", "We build with Bazel.")); res.Outcome != writer.OutcomeActive {
			t.Fatalf("first model write of a new key: %s", res.Outcome)
		}
		if res := b.modelWrite(t, input(memorykit.KindDecision, "build tool", "We decided on Bazel.")); res.Outcome != writer.OutcomeActive {
			t.Fatalf("model write beside its own untouched write: %s, want active", res.Outcome)
		}
		if res := b.modelWrite(t, input(memorykit.KindNote, "build tool", "We build with Bazel 7.")); res.Outcome != writer.OutcomeActive {
			t.Fatalf("model replacing its own untouched write: %s, want active", res.Outcome)
		}
	})
}

// Hole 1, atomicity: a user write under another kind that lands between the
// model write's read and its create must turn the model write into a
// candidate.
func TestModelWriteKeyCheckIsAtomicWithCreate(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		b := setupOn(t, be)
		ctx := context.Background()
		var userRecord memorykit.Record
		rs := &racingStore{LifecycleStore: b.store}
		rs.once = func() {
			res, err := b.w.WriteExplicit(ctx, b.user, b.scope, input(memorykit.KindDecision, "region", "eu-west-1"))
			if err != nil {
				t.Error(err)
			}
			userRecord = res.Record
		}
		w, err := writer.New(writer.Config{Store: rs, Authorizer: b.az, Events: b.sink, Clock: testkit.NewClock()})
		if err != nil {
			t.Fatal(err)
		}
		res, err := w.WriteModel(ctx, b.model, b.scope, input(memorykit.KindFact, "region", "ap-south-1"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != writer.OutcomeCandidate {
			t.Fatalf("a user write under another kind landed first: model write must become a candidate, got %s", res.Outcome)
		}
		if _, err := b.store.FindActive(ctx, b.scope, memorykit.KindFact, "region"); !errors.Is(err, memorykit.ErrNotFound) {
			t.Fatalf("the model's fact must not be active: %v", err)
		}
		active := b.activeWithKey(t, "region")
		if len(active) != 1 || active[0].ID != userRecord.ID {
			t.Fatalf("active records with the key = %d, want only the user's", len(active))
		}
	})
}

// Hole 3: a key whose record a person forgot, erased or rejected is not new
// to the model, under the same kind or another.
func TestForgottenKeyStaysGoverned(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// prepare leaves no active record with key "region" but some
		// record a reviewer decided on.
		prepare func(t *testing.T, b *bundle)
	}{
		{"user write forgotten", func(t *testing.T, b *bundle) {
			res, err := b.w.WriteExplicit(ctx, b.user, b.scope, input(memorykit.KindFact, "region", "eu-west-1"))
			if err != nil {
				t.Fatal(err)
			}
			b.forget(t, res.Record.ID)
		}},
		{"model write forgotten", func(t *testing.T, b *bundle) {
			b.forget(t, b.modelWrite(t, input(memorykit.KindFact, "region", "eu-west-1")).Record.ID)
		}},
		{"model write erased", func(t *testing.T, b *bundle) {
			id := b.modelWrite(t, input(memorykit.KindFact, "region", "eu-west-1")).Record.ID
			b.forget(t, id)
			if _, err := b.store.Erase(ctx, storekit.Transition{Scope: b.scope, ID: id, Actor: b.review.Actor}); err != nil {
				t.Fatal(err)
			}
		}},
		{"model candidate rejected", func(t *testing.T, b *bundle) {
			cand, err := b.store.Create(ctx, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindFact, Key: "region",
				Content: "eu-west-1", Status: memorykit.StatusCandidate, Actor: b.model.Actor})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.store.Reject(ctx, storekit.Transition{Scope: b.scope, ID: cand.ID, Actor: b.review.Actor}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		for _, kind := range []memorykit.Kind{memorykit.KindFact, memorykit.KindNote} {
			t.Run(tc.name+"/"+string(kind), func(t *testing.T) {
				// Each backend gets a store (and pgstore schema) of its own.
				testkit.Each(t, func(t *testing.T, be testkit.Backend) {
					b := setupOn(t, be)
					tc.prepare(t, b)
					res := b.modelWrite(t, input(kind, "Region", "ap-south-1"))
					if res.Outcome != writer.OutcomeCandidate {
						t.Fatalf("model write after %s: %s, want candidate", tc.name, res.Outcome)
					}
					if n := len(b.activeWithKey(t, "region")); n != 0 {
						t.Fatalf("%d active records with the key, want none", n)
					}
				})
			})
		}
	}
}

func (b *bundle) forget(t *testing.T, id string) {
	t.Helper()
	if _, err := b.store.Forget(context.Background(), storekit.Transition{Scope: b.scope, ID: id, Actor: b.review.Actor}); err != nil {
		t.Fatal(err)
	}
}

// Hole 2: keys that render like a user's key are that key, so the model
// cannot slip past the rule with invisible characters.
func TestInvisibleCharactersDoNotMakeANewKey(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		b := setupOn(t, be)
		ctx := context.Background()
		for _, key := range []string{"deploy region", "deployregion"} {
			if _, err := b.w.WriteExplicit(ctx, b.user, b.scope, input(memorykit.KindFact, key, "eu-west-1")); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range []string{"deploy\u200bregion", "deploy region\u200b", "deploy\u00adregion", "deploy\u2060region", "deploy\u00a0region"} {
			for _, kind := range []memorykit.Kind{memorykit.KindFact, memorykit.KindDecision} {
				res := b.modelWrite(t, input(kind, key, "ap-south-1"))
				if res.Outcome != writer.OutcomeCandidate {
					t.Fatalf("model write of %+q (%s): %s, want candidate", key, kind, res.Outcome)
				}
				if res.Record.Key != "deploy region" && res.Record.Key != "deployregion" {
					t.Fatalf("model write of %+q stored key %+q", key, res.Record.Key)
				}
			}
		}
		for _, key := range []string{"deploy region", "deployregion"} {
			if n := len(b.activeWithKey(t, key)); n != 1 {
				t.Fatalf("%d active records with key %q, want the user's only", n, key)
			}
		}
	})
}
