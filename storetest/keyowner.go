package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// The ActiveExpectation.KeyOwner condition: the model write rule per
// canonical key across kinds (storekit.GovernsKeyAgainst), checked in the
// same atomic step as the create. Part of RunLifecycleConformance.

// ownerCreate builds the model's active create of a key under kind, with
// Expect None and KeyOwner modelAct.
func (e *env) ownerCreate(kind memorykit.Kind, key string) memorykit.NewRecord {
	in := e.active(kind, key, "the model's version")
	in.Actor = modelAct
	owner := modelAct
	in.Expect = &memorykit.ActiveExpectation{None: true, KeyOwner: &owner}
	return in
}

// keyGovernedRefused runs in, which must fail with ErrVersionConflict and
// reason storekit.ReasonKeyGoverned and change nothing.
func (e *env) keyGovernedRefused(t *testing.T, what string, in memorykit.NewRecord) {
	t.Helper()
	var err error
	e.refused(t, what, memorykit.ErrVersionConflict, func() error {
		_, err = e.s.Create(e.ctx, in)
		return err
	})
	if got := memorykit.ReasonCode(err); got != storekit.ReasonKeyGoverned {
		t.Fatalf("%s: reason %q, want %q", what, got, storekit.ReasonKeyGoverned)
	}
}

// testKeyOwnerAcrossKinds (issue 10, hole 1): an active record of the key
// under another kind that anyone but the owner wrote, reviewed or
// corrected governs the key.
func testKeyOwnerAcrossKinds(t *testing.T, e *env) {
	other := memorykit.Actor{Kind: memorykit.ActorModel, ID: "model-2"}
	asModel := func(in memorykit.NewRecord, a memorykit.Actor) memorykit.NewRecord {
		in.Actor = a
		return in
	}
	cases := []struct {
		name     string
		prepare  func(key string)
		governed bool
	}{
		{"nothing", func(string) {}, false},
		{"user active other kind", func(k string) { e.create(e.active(memorykit.KindFact, k, "user fact")) }, true},
		{"user active other spelling", func(k string) { e.create(e.active(memorykit.KindDecision, "  "+k+"  ", "user decision")) }, true},
		{"another model active other kind", func(k string) {
			e.create(asModel(e.active(memorykit.KindFact, k, "other model"), other))
		}, true},
		{"own active other kind", func(k string) {
			e.create(asModel(e.active(memorykit.KindFact, k, "own"), modelAct))
		}, false},
		{"own superseded by own", func(k string) {
			e.create(asModel(e.active(memorykit.KindFact, k, "own v1"), modelAct))
			e.create(asModel(e.active(memorykit.KindFact, k, "own v2"), modelAct))
		}, false},
		{"own active corrected by reviewer", func(k string) {
			r := e.create(asModel(e.active(memorykit.KindFact, k, "own"), modelAct))
			e.must(actCorrect, tr(e.scope, r.ID, reviewer))
		}, true},
		{"own active corrected by itself", func(k string) {
			// Version 2 and active: a correction is a decision, even the
			// owner's own, so only a superseded version 2 is own history.
			r := e.create(asModel(e.active(memorykit.KindFact, k, "own"), modelAct))
			e.must(actCorrect, tr(e.scope, r.ID, modelAct))
		}, true},
		{"own corrected by itself then superseded by own", func(k string) {
			// Superseded at version 3: the correction before it governs.
			r := e.create(asModel(e.active(memorykit.KindFact, k, "own v1"), modelAct))
			e.must(actCorrect, tr(e.scope, r.ID, modelAct))
			e.create(asModel(e.active(memorykit.KindFact, k, "own v2"), modelAct))
			if got := e.get(e.scope, r.ID); got.Status != memorykit.StatusSuperseded || got.Version != 3 || got.TouchedBy != modelAct {
				t.Fatalf("setup: the corrected record is %s at version %d touched by %v; want superseded at 3 by the model",
					got.Status, got.Version, got.TouchedBy)
			}
		}, true},
		{"own candidate activated by reviewer", func(k string) {
			c := e.create(asModel(e.candidate(memorykit.KindFact, k, "own"), modelAct))
			e.must(actActivate, tr(e.scope, c.ID, reviewer))
		}, true},
		{"own superseded by user", func(k string) {
			e.create(asModel(e.active(memorykit.KindFact, k, "own"), modelAct))
			e.create(e.active(memorykit.KindFact, k, "user"))
		}, true},
		{"user candidate only", func(k string) { e.create(e.candidate(memorykit.KindFact, k, "pending")) }, false},
		{"user active in another scope", func(k string) {
			in := e.active(memorykit.KindFact, k, "elsewhere")
			in.Scope = Scope(t, "tenant-a", "project-2")
			e.create(in)
		}, false},
	}
	for i, c := range cases {
		key := fmt.Sprintf("owner key %d", i)
		c.prepare(key)
		in := e.ownerCreate(memorykit.KindNote, key)
		if c.governed {
			e.keyGovernedRefused(t, c.name, in)
			continue
		}
		if _, err := e.s.Create(e.ctx, in); err != nil {
			t.Fatalf("%s: the key is not governed, but Create = %v", c.name, err)
		}
	}

	// KeyOwner adds to an ID/version expectation: the model's own
	// untouched record of the same kind does not lift another kind's hold.
	own := e.create(asModel(e.active(memorykit.KindNote, "mixed", "own note"), modelAct))
	e.create(e.active(memorykit.KindFact, "mixed", "user fact"))
	in := e.ownerCreate(memorykit.KindNote, "mixed")
	in.Expect.None, in.Expect.ID, in.Expect.Version = false, own.ID, 1
	e.keyGovernedRefused(t, "own record held beside a user's", in)

	// A batch does not take the condition.
	if b, ok := e.s.(storekit.BatchCreator); ok {
		e.refused(t, "KeyOwner in a batch", memorykit.ErrInvalidInput, func() error {
			_, err := b.CreateBatch(e.ctx, []storekit.BatchItem{{Record: e.ownerCreate(memorykit.KindNote, "batch key")}})
			return err
		})
	}
}

// testKeyOwnerAfterForgetRejectErase (issue 10, hole 3): a record of the
// key that someone else forgot, erased or rejected governs it, so a
// forgotten key is not new to the model.
func testKeyOwnerAfterForgetRejectErase(t *testing.T, e *env) {
	own := func(in memorykit.NewRecord) memorykit.NewRecord {
		in.Actor = modelAct
		return in
	}
	cases := []struct {
		name    string
		prepare func(key string)
	}{
		{"user record forgotten", func(k string) {
			r := e.create(e.active(memorykit.KindFact, k, "user"))
			e.must(actForget, tr(e.scope, r.ID, reviewer))
		}},
		{"own record forgotten", func(k string) {
			r := e.create(own(e.active(memorykit.KindFact, k, "own")))
			e.must(actForget, tr(e.scope, r.ID, reviewer))
		}},
		{"own record erased", func(k string) {
			r := e.create(own(e.active(memorykit.KindFact, k, "own")))
			e.must(actForget, tr(e.scope, r.ID, reviewer))
			e.must(actErase, tr(e.scope, r.ID, reviewer))
		}},
		{"own candidate rejected", func(k string) {
			c := e.create(own(e.candidate(memorykit.KindFact, k, "own")))
			e.must(actReject, tr(e.scope, c.ID, reviewer))
		}},
		{"user candidate rejected", func(k string) {
			c := e.create(e.candidate(memorykit.KindFact, k, "user"))
			e.must(actReject, tr(e.scope, c.ID, reviewer))
		}},
	}
	for i, c := range cases {
		key := fmt.Sprintf("gone key %d", i)
		c.prepare(key)
		for _, kind := range []memorykit.Kind{memorykit.KindFact, memorykit.KindNote} {
			e.keyGovernedRefused(t, c.name+" then "+string(kind), e.ownerCreate(kind, key))
		}
	}
}

// testConcurrentKeyOwnerCreates: two models create the same new key under
// different kinds at once, each with KeyOwner. Whichever goes first
// governs the key for the other, so at most one of them may succeed per
// key: the check and the insert must be one atomic step across kinds.
func testConcurrentKeyOwnerCreates(t *testing.T, e *env) {
	const keys = 12
	models := []memorykit.Actor{modelAct, {Kind: memorykit.ActorModel, ID: "model-2"}}
	kinds := []memorykit.Kind{memorykit.KindFact, memorykit.KindNote}
	errs := make([][]error, keys)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := 0; k < keys; k++ {
		errs[k] = make([]error, len(models))
		for m := range models {
			in := e.active(kinds[m], fmt.Sprintf("race key %d", k), "model write")
			in.Actor = models[m]
			owner := models[m]
			in.Expect = &memorykit.ActiveExpectation{None: true, KeyOwner: &owner}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[k][m] = e.s.Create(e.ctx, in)
			}()
		}
	}
	close(start)
	wg.Wait()
	for k := 0; k < keys; k++ {
		succeeded := 0
		for m, err := range errs[k] {
			switch {
			case err == nil:
				succeeded++
			case memorykit.ReasonCode(err) == storekit.ReasonKeyGoverned, allowedRaceError(err):
			default:
				t.Fatalf("key %d model %d: unexpected error %v", k, m, err)
			}
		}
		if succeeded > 1 {
			t.Fatalf("key %d: both models' creates went active; the second must see the first govern the key", k)
		}
		active, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Key: fmt.Sprintf("race key %d", k),
			Statuses: []memorykit.Status{memorykit.StatusActive}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(active) != succeeded {
			t.Fatalf("key %d: %d active records for %d successful creates", k, len(active), succeeded)
		}
	}
}

// testInvisibleCharactersInKeys (issue 10, hole 2): a key with characters
// that render as nothing is the key without them, in Create, FindActive,
// the List key filter and the KeyOwner rule; a visible space still makes
// another key.
func testInvisibleCharactersInKeys(t *testing.T, e *env) {
	spaced := e.create(e.active(memorykit.KindFact, "deploy region", "eu-west-1"))
	joined := e.create(e.active(memorykit.KindFact, "deployregion", "us-east-2"))
	if spaced.Key == joined.Key {
		t.Fatal("a visible space must keep two keys apart")
	}
	finds := map[string]string{
		"deploy\u200bregion":        joined.ID,
		"deploy\u00adregion":        joined.ID,
		"deploy\u2060region":        joined.ID,
		"\ufeffDEPLOY\u200dREGION":  joined.ID,
		"deploy region\u200b":       spaced.ID,
		"deploy\u00a0region":        spaced.ID,
		"deploy\u202e region\u202c": spaced.ID,
	}
	for key, want := range finds {
		got, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, key)
		if err != nil || got.ID != want {
			t.Fatalf("FindActive(%+q) = %s, %v; want %s", key, got.ID, err, want)
		}
		listed, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Key: key, Limit: 10})
		if err != nil || len(listed) != 1 || listed[0].ID != want {
			t.Fatalf("List(key %+q) = %d records, %v; want %s", key, len(listed), err, want)
		}
		e.keyGovernedRefused(t, fmt.Sprintf("model write of %+q", key), e.ownerCreate(memorykit.KindNote, key))
	}
	// An explicit write of an invisible variant replaces the record.
	again := e.create(e.active(memorykit.KindFact, "deploy\u2060region\ufe0f", "ap-south-1"))
	if again.Key != joined.Key {
		t.Fatalf("stored key %+q, want %+q", again.Key, joined.Key)
	}
	if st := e.get(e.scope, joined.ID).Status; st != memorykit.StatusSuperseded {
		t.Fatalf("the record of the visible key is %s, want superseded", st)
	}
}
