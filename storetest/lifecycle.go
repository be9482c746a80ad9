package storetest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// RunLifecycleConformance checks records and their audit trail: create,
// get, list, find, activate/supersede, reject, correct, forget, erase,
// invalid transitions, optimistic concurrency, concurrent activation, the
// erase canary and the KeyOwner condition (the model write rule per key).
func RunLifecycleConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"CreateActive", testCreateActive},
		{"CreateCandidate", testCreateCandidate},
		{"CreateDefaultsAndWindow", testCreateWindow},
		{"CreateGeneratesIDs", testCreateGeneratesIDs},
		{"CreateWithIDIsIdempotent", testCreateIdempotent},
		{"CreateActiveSupersedes", testCreateSupersedes},
		{"CreateExpectNone", testCreateExpectNone},
		{"CreateExpectIDVersion", testCreateExpectIDVersion},
		{"DeepCopies", testDeepCopies},
		{"GetUnknown", testGetUnknown},
		{"FindActive", testFindActive},
		{"ListOrderFiltersPaging", testList},
		{"ListLimitBound", testListLimit},
		{"ActivateSupersedes", testActivate},
		{"Reject", testReject},
		{"Correct", testCorrect},
		{"CorrectCandidate", testCorrectCandidate},
		{"Forget", testForget},
		{"Erase", testErase},
		{"InvalidTransitions", testInvalidTransitions},
		{"ExpectVersion", testExpectVersion},
		{"RevisionTrail", testRevisionTrail},
		{"CreateRevisionKeptThroughChanges", testCreateRevisionKept},
		{"EraseCanary", testEraseCanary},
		{"KeyOwnerAcrossKinds", testKeyOwnerAcrossKinds},
		{"KeyOwnerAfterForgetRejectErase", testKeyOwnerAfterForgetRejectErase},
		{"InvisibleCharactersInKeys", testInvisibleCharactersInKeys},
		{"LookAlikeKeys", testLookAlikeKeys},
	})
	runSessionCases(t, h, []tcase{
		{"ConcurrentActivation", testConcurrentActivation},
		{"ConcurrentActiveCreates", testConcurrentCreates},
		{"ConcurrentKeyOwnerCreates", testConcurrentKeyOwnerCreates},
	})
}

func testCreateActive(t *testing.T, e *env) {
	in := e.active(memorykit.KindFact, "  Deploy   REGION ", "The API runs in eu-west-1.")
	in.Metadata = map[string]string{"team": "platform", "ticket": "ops-12"}
	in.Sources = []memorykit.Source{{Kind: "conversation", Ref: "run-1/turn-2"}, {Kind: "doc", Ref: "runbook"}}
	in.Reason = "user asked to remember"
	r := e.create(in)
	now := e.now()
	if err := storekit.ValidateID("test", "id", r.ID); err != nil {
		t.Fatalf("generated ID %q is not a valid ID: %v", r.ID, err)
	}
	want := memorykit.Record{
		ID: r.ID, Scope: e.scope, Kind: memorykit.KindFact, Key: "deploy region",
		Content: in.Content, Metadata: in.Metadata, Sources: in.Sources,
		Status: memorykit.StatusActive, Version: 1, ContentHash: storekit.ContentHash(in.Content),
		EffectiveFrom: now, CreatedBy: author, TouchedBy: author, CreatedAt: now, UpdatedAt: now,
	}
	diffRecord(t, "Create result", r, want)
	if r.CreatedAt.Location() != time.UTC || r.EffectiveFrom.Location() != time.UTC {
		t.Fatalf("timestamps are not UTC: created %v, effective %v", r.CreatedAt.Location(), r.EffectiveFrom.Location())
	}
	if r.CreatedAt.Nanosecond()%1000 != 0 {
		t.Fatalf("CreatedAt %s is not truncated to microseconds", r.CreatedAt.Format(time.RFC3339Nano))
	}
	diffRecord(t, "Get", e.get(e.scope, r.ID), want)
	revs := e.revisions(e.scope, r.ID)
	wantRevs := []storekit.Revision{{
		RecordID: r.ID, Version: 1, Action: memorykit.ActionCreate, Actor: author, Reason: in.Reason,
		Status: memorykit.StatusActive, ContentHash: want.ContentHash, Content: in.Content,
		Metadata: in.Metadata, Sources: in.Sources, At: now,
	}}
	if d := cmp.Diff(wantRevs, revs, equateEmpty); d != "" {
		t.Fatalf("revisions (-want +got):\n%s", d)
	}
	got, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, "deploy region")
	if err != nil {
		t.Fatalf("FindActive: %v", err)
	}
	diffRecord(t, "FindActive", got, want)
}

func testCreateCandidate(t *testing.T, e *env) {
	in := e.candidate(memorykit.KindPreference, "review style", "Prefer small pull requests.")
	in.Actor = modelAct
	r := e.create(in)
	if r.Status != memorykit.StatusCandidate || r.Version != 1 || r.ContentHash != storekit.ContentHash(in.Content) {
		t.Fatalf("candidate: status %s version %d hash %q", r.Status, r.Version, r.ContentHash)
	}
	if r.CreatedBy != modelAct || r.TouchedBy != modelAct {
		t.Fatalf("candidate actors: created %v touched %v", r.CreatedBy, r.TouchedBy)
	}
	revs := e.revisions(e.scope, r.ID)
	if len(revs) != 1 || revs[0].Action != memorykit.ActionCreate || revs[0].Status != memorykit.StatusCandidate ||
		revs[0].Version != 1 || revs[0].Actor != modelAct || revs[0].Content != in.Content {
		t.Fatalf("candidate revisions: %+v", revs)
	}
	_, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindPreference, "review style")
	wantErr(t, err, memorykit.ErrNotFound)
}

func testCreateWindow(t *testing.T, e *env) {
	zone := time.FixedZone("UTC+9", 9*3600)
	from := Epoch.Add(time.Hour).In(zone)
	until := Epoch.Add(48 * time.Hour).In(zone)
	in := e.active(memorykit.KindDecision, "freeze window", "No deploys during the freeze.")
	in.EffectiveFrom, in.EffectiveUntil = from, until
	r := e.create(in)
	wantTime(t, "EffectiveFrom", r.EffectiveFrom, from.Truncate(time.Microsecond))
	wantTime(t, "EffectiveUntil", r.EffectiveUntil, until.Truncate(time.Microsecond))
	if r.EffectiveFrom.Location() != time.UTC || r.EffectiveUntil.Location() != time.UTC {
		t.Fatalf("effective window not stored in UTC: %v %v", r.EffectiveFrom.Location(), r.EffectiveUntil.Location())
	}
	diffRecord(t, "Get", e.get(e.scope, r.ID), r)

	// A defaulted start is "now"; the end must still come after it.
	in2 := e.active(memorykit.KindNote, "short lived", "Only for today.")
	in2.EffectiveUntil = Epoch.Add(-time.Minute)
	e.refused(t, "Create with EffectiveUntil before the defaulted start", memorykit.ErrInvalidInput, func() error {
		_, err := e.s.Create(e.ctx, in2)
		return err
	})
	in2.EffectiveUntil = Epoch.Add(time.Hour)
	r2 := e.create(in2)
	wantTime(t, "defaulted EffectiveFrom", r2.EffectiveFrom, e.now())
}

func testCreateGeneratesIDs(t *testing.T, e *env) {
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		r := e.create(e.candidate(memorykit.KindNote, "same key", fmt.Sprintf("note %d", i)))
		if seen[r.ID] {
			t.Fatalf("ID %s generated twice", r.ID)
		}
		seen[r.ID] = true
	}
}

func testCreateIdempotent(t *testing.T, e *env) {
	in := e.active(memorykit.KindFact, "db engine", "PostgreSQL 16.")
	in.ID = "mem-fixed-1"
	first := e.create(in)
	if first.ID != "mem-fixed-1" {
		t.Fatalf("Create kept ID %q, want mem-fixed-1", first.ID)
	}
	e.advance(time.Minute)
	retries := []memorykit.NewRecord{in, in, in}
	retries[1].Content = "MySQL 8."
	retries[2].Status, retries[2].Key, retries[2].Kind = memorykit.StatusCandidate, "other key", memorykit.KindNote
	for i, again := range retries {
		before := e.dump()
		got, err := e.s.Create(e.ctx, again)
		wantErr(t, err, memorykit.ErrAlreadyExists)
		diffRecord(t, fmt.Sprintf("retry %d returned record", i), got, first)
		e.unchanged(t, before, "an idempotent re-create")
	}
	// ErrAlreadyExists wins over a failing Expect: the retry of an
	// expectant create must still be recognised.
	exp := in
	exp.Expect = &memorykit.ActiveExpectation{None: true}
	_, err := e.s.Create(e.ctx, exp)
	wantErr(t, err, memorykit.ErrAlreadyExists)
}

func testCreateSupersedes(t *testing.T, e *env) {
	a := e.create(e.active(memorykit.KindFact, "region", "eu-west-1"))
	other := e.create(e.active(memorykit.KindDecision, "region", "a decision, not a fact"))
	e.advance(time.Second)
	in := e.active(memorykit.KindFact, "Region", "us-east-2")
	in.Actor, in.Reason = operator, "moved"
	b := e.create(in)
	now := e.now()

	oldA := e.get(e.scope, a.ID)
	if oldA.Status != memorykit.StatusSuperseded || oldA.Version != 2 || oldA.TouchedBy != operator {
		t.Fatalf("replaced record: status %s version %d touched %v", oldA.Status, oldA.Version, oldA.TouchedBy)
	}
	wantTime(t, "superseded UpdatedAt", oldA.UpdatedAt, now)
	if oldA.Content != a.Content || oldA.ContentHash != a.ContentHash {
		t.Fatal("superseding changed the old record's content")
	}
	revs := e.revisions(e.scope, a.ID)
	if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate, memorykit.ActionSupersede}, actions(revs)); d != "" {
		t.Fatalf("old record actions (-want +got):\n%s", d)
	}
	sup := revs[1]
	if sup.Version != 2 || sup.Status != memorykit.StatusSuperseded || sup.Actor != operator || sup.Reason != "moved" || sup.Content != a.Content {
		t.Fatalf("supersede revision: %+v", sup)
	}
	wantTime(t, "supersede revision At", sup.At, now)
	if b.Status != memorykit.StatusActive || b.Version != 1 {
		t.Fatalf("new record: status %s version %d", b.Status, b.Version)
	}
	got, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, "region")
	if err != nil || got.ID != b.ID {
		t.Fatalf("FindActive = %s, %v; want %s", got.ID, err, b.ID)
	}
	if st := e.get(e.scope, other.ID).Status; st != memorykit.StatusActive {
		t.Fatalf("record of another kind with the same key became %s", st)
	}
}

func testCreateExpectNone(t *testing.T, e *env) {
	in := e.active(memorykit.KindProcedure, "rollback", "Run make rollback.")
	in.Expect = &memorykit.ActiveExpectation{None: true}
	first := e.create(in)
	in.Content = "Run make rollback-v2."
	e.refused(t, "Expect None with an active record", memorykit.ErrVersionConflict, func() error {
		_, err := e.s.Create(e.ctx, in)
		return err
	})
	if got := e.get(e.scope, first.ID); got.Status != memorykit.StatusActive {
		t.Fatalf("first record became %s", got.Status)
	}
	// A candidate never holds the key.
	e.create(e.candidate(memorykit.KindProcedure, "restart", "Restart the pod."))
	in2 := e.active(memorykit.KindProcedure, "restart", "Restart the deployment.")
	in2.Expect = &memorykit.ActiveExpectation{None: true}
	e.create(in2)
}

func testCreateExpectIDVersion(t *testing.T, e *env) {
	a := e.create(e.active(memorykit.KindFact, "owner", "Team Blue."))
	in := e.active(memorykit.KindFact, "owner", "Team Green.")
	in.Expect = &memorykit.ActiveExpectation{ID: a.ID, Version: 1}
	b := e.create(in)
	if got := e.get(e.scope, a.ID); got.Status != memorykit.StatusSuperseded {
		t.Fatalf("expected record is %s, want superseded", got.Status)
	}
	conflicts := []struct {
		name string
		x    memorykit.ActiveExpectation
	}{
		{"superseded record", memorykit.ActiveExpectation{ID: a.ID, Version: 1}},
		{"wrong version", memorykit.ActiveExpectation{ID: b.ID, Version: 2}},
		{"unknown record", memorykit.ActiveExpectation{ID: "mem-nope", Version: 1}},
		{"None while held", memorykit.ActiveExpectation{None: true}},
	}
	for _, c := range conflicts {
		x := c.x
		in := e.active(memorykit.KindFact, "owner", "Team Red.")
		in.Expect = &x
		e.refused(t, "Expect "+c.name, memorykit.ErrVersionConflict, func() error {
			_, err := e.s.Create(e.ctx, in)
			return err
		})
	}
	in3 := e.active(memorykit.KindFact, "nobody holds this", "x")
	in3.Expect = &memorykit.ActiveExpectation{ID: b.ID, Version: 1}
	e.refused(t, "Expect ID on a free key", memorykit.ErrVersionConflict, func() error {
		_, err := e.s.Create(e.ctx, in3)
		return err
	})
}

func testDeepCopies(t *testing.T, e *env) {
	in := e.active(memorykit.KindFact, "copy", "original")
	in.Metadata = map[string]string{"a": "1"}
	in.Sources = []memorykit.Source{{Kind: "doc", Ref: "r1"}}
	r := e.create(in)
	in.Metadata["a"] = "changed-input"
	in.Sources[0].Ref = "changed-input"
	r.Metadata["a"] = "changed-output"
	r.Sources[0].Ref = "changed-output"
	got := e.get(e.scope, r.ID)
	if got.Metadata["a"] != "1" || got.Sources[0].Ref != "r1" {
		t.Fatalf("store shares memory with its caller: %v %v", got.Metadata, got.Sources)
	}
	revs := e.revisions(e.scope, r.ID)
	revs[0].Metadata["a"] = "changed-revision"
	revs[0].Sources[0].Ref = "changed-revision"
	if again := e.revisions(e.scope, r.ID); again[0].Metadata["a"] != "1" || again[0].Sources[0].Ref != "r1" {
		t.Fatal("Revisions shares memory with its caller")
	}
	res := e.recall(storekit.RecallQuery{Scope: e.scope, ExactKeys: []string{"copy"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	res.Records[r.ID].Metadata["a"] = "changed-recall"
	if e.get(e.scope, r.ID).Metadata["a"] != "1" {
		t.Fatal("Recall shares memory with its caller")
	}
	list, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	list[0].Metadata["a"] = "changed-list"
	if e.get(e.scope, r.ID).Metadata["a"] != "1" {
		t.Fatal("List shares memory with its caller")
	}
	corr := storekit.Correction{Transition: tr(e.scope, r.ID, reviewer), Content: "new", Metadata: map[string]string{"b": "2"}}
	if _, err := e.s.Correct(e.ctx, corr); err != nil {
		t.Fatal(err)
	}
	corr.Metadata["b"] = "changed-correction"
	if e.get(e.scope, r.ID).Metadata["b"] != "2" {
		t.Fatal("Correct keeps the caller's metadata map")
	}
}

func testGetUnknown(t *testing.T, e *env) {
	_, err := e.s.Get(e.ctx, e.scope, "mem-missing")
	wantErr(t, err, memorykit.ErrNotFound)
	_, err = e.s.Revisions(e.ctx, e.scope, "mem-missing")
	wantErr(t, err, memorykit.ErrNotFound)
	for _, a := range allActions {
		e.refused(t, a.name+" of an unknown record", memorykit.ErrNotFound, func() error {
			_, err := a.do(e.ctx, e.s, tr(e.scope, "mem-missing", reviewer))
			return err
		})
	}
}

func testFindActive(t *testing.T, e *env) {
	in := e.active(memorykit.KindDecision, "release train", "Weekly on Tuesday.")
	in.EffectiveFrom = Epoch.Add(24 * time.Hour) // not yet effective
	r := e.create(in)
	for _, key := range []string{"release train", "  Release   TRAIN  ", "ｒｅｌｅａｓｅ train"} {
		got, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindDecision, key)
		if err != nil {
			t.Fatalf("FindActive(%q): %v", key, err)
		}
		diffRecord(t, "FindActive", got, r)
	}
	_, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, "release train")
	wantErr(t, err, memorykit.ErrNotFound)
	_, err = e.s.FindActive(e.ctx, e.scope, memorykit.KindDecision, "release")
	wantErr(t, err, memorykit.ErrNotFound)
	e.must(actForget, tr(e.scope, r.ID, reviewer))
	_, err = e.s.FindActive(e.ctx, e.scope, memorykit.KindDecision, "release train")
	wantErr(t, err, memorykit.ErrNotFound)
}

func testList(t *testing.T, e *env) {
	mk := func(id string, kind memorykit.Kind, key string, status memorykit.Status) {
		in := newRec(e.scope, kind, key, "content of "+id, status)
		in.ID = id
		e.create(in)
	}
	mk("mem-e", memorykit.KindFact, "k1", memorykit.StatusActive)
	mk("mem-b", memorykit.KindFact, "k2", memorykit.StatusCandidate)
	mk("mem-d", memorykit.KindNote, "k1", memorykit.StatusCandidate)
	mk("mem-a", memorykit.KindNote, "k3", memorykit.StatusActive)
	mk("mem-c", memorykit.KindFact, "k1", memorykit.StatusActive) // supersedes mem-e
	other := Scope(t, "tenant-a", "project-2")
	in := newRec(other, memorykit.KindFact, "k1", "elsewhere", memorykit.StatusActive)
	in.ID = "mem-0-other"
	e.create(in)

	list := func(f storekit.ListFilter) []string {
		t.Helper()
		f.Scope = e.scope
		if f.Limit == 0 {
			f.Limit = Limits().MaxListSize
		}
		rs, err := e.s.List(e.ctx, f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		for _, r := range rs {
			if r.Scope != e.scope {
				t.Fatalf("List returned a record of %s", r.Scope)
			}
		}
		return recIDs(rs)
	}
	wantIDs(t, "all", list(storekit.ListFilter{}), []string{"mem-a", "mem-b", "mem-c", "mem-d", "mem-e"})
	wantIDs(t, "candidates", list(storekit.ListFilter{Statuses: []memorykit.Status{memorykit.StatusCandidate}}), []string{"mem-b", "mem-d"})
	wantIDs(t, "active+superseded", list(storekit.ListFilter{Statuses: []memorykit.Status{memorykit.StatusActive, memorykit.StatusSuperseded}}),
		[]string{"mem-a", "mem-c", "mem-e"})
	wantIDs(t, "facts", list(storekit.ListFilter{Kind: memorykit.KindFact}), []string{"mem-b", "mem-c", "mem-e"})
	wantIDs(t, "key k1", list(storekit.ListFilter{Key: "k1"}), []string{"mem-c", "mem-d", "mem-e"})
	wantIDs(t, "key K1 spelled loosely", list(storekit.ListFilter{Key: " K1 "}), []string{"mem-c", "mem-d", "mem-e"})
	wantIDs(t, "fact k1 active", list(storekit.ListFilter{Kind: memorykit.KindFact, Key: "k1", Statuses: []memorykit.Status{memorykit.StatusActive}}),
		[]string{"mem-c"})
	wantIDs(t, "after mem-c", list(storekit.ListFilter{AfterID: "mem-c"}), []string{"mem-d", "mem-e"})
	wantIDs(t, "after a non-existent ID", list(storekit.ListFilter{AfterID: "mem-bb"}), []string{"mem-c", "mem-d", "mem-e"})

	var pages [][]string
	after := ""
	for {
		page := list(storekit.ListFilter{Limit: 2, AfterID: after})
		if len(page) == 0 {
			break
		}
		if len(pages) > 5 {
			t.Fatal("paging does not end")
		}
		pages = append(pages, page)
		after = page[len(page)-1]
	}
	if d := cmp.Diff([][]string{{"mem-a", "mem-b"}, {"mem-c", "mem-d"}, {"mem-e"}}, pages); d != "" {
		t.Fatalf("pages (-want +got):\n%s", d)
	}
}

func testListLimit(t *testing.T, e *env) {
	max := Limits().MaxListSize
	for i := 0; i <= max; i++ {
		e.create(e.candidate(memorykit.KindNote, fmt.Sprintf("key %02d", i), "bulk"))
	}
	rs, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Limit: max})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != max {
		t.Fatalf("List(limit %d) returned %d records", max, len(rs))
	}
	if !sort.SliceIsSorted(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID }) {
		t.Fatal("List is not ordered by ID")
	}
	rest, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Limit: max, AfterID: rs[max-1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 {
		t.Fatalf("second page holds %d records, want 1", len(rest))
	}
	_, err = e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Limit: max + 1})
	wantErr(t, err, memorykit.ErrInvalidInput)
}

func testActivate(t *testing.T, e *env) {
	old := e.create(e.active(memorykit.KindPreference, "tabs", "Use tabs."))
	c := e.create(e.candidate(memorykit.KindPreference, "tabs", "Use spaces."))
	e.advance(90 * time.Second)
	t1 := tr(e.scope, c.ID, reviewer)
	t1.ExpectVersion = 1
	t1.Reason = "team vote"
	got := e.must(actActivate, t1)
	now := e.now()
	if got.Status != memorykit.StatusActive || got.Version != 2 || got.TouchedBy != reviewer || got.CreatedBy != author {
		t.Fatalf("activated: status %s version %d touched %v created %v", got.Status, got.Version, got.TouchedBy, got.CreatedBy)
	}
	wantTime(t, "UpdatedAt", got.UpdatedAt, now)
	wantTime(t, "CreatedAt", got.CreatedAt, c.CreatedAt)
	diffRecord(t, "Get after Activate", e.get(e.scope, c.ID), got)
	prev := e.get(e.scope, old.ID)
	if prev.Status != memorykit.StatusSuperseded || prev.Version != 2 || prev.TouchedBy != reviewer {
		t.Fatalf("previous active: status %s version %d touched %v", prev.Status, prev.Version, prev.TouchedBy)
	}
	revs := e.revisions(e.scope, old.ID)
	if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate, memorykit.ActionSupersede}, actions(revs)); d != "" {
		t.Fatalf("previous active actions (-want +got):\n%s", d)
	}
	if revs[1].Actor != reviewer || revs[1].Reason != "team vote" || !revs[1].At.Equal(now) {
		t.Fatalf("supersede revision: %+v", revs[1])
	}
	crevs := e.revisions(e.scope, c.ID)
	if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate, memorykit.ActionActivate}, actions(crevs)); d != "" {
		t.Fatalf("activated actions (-want +got):\n%s", d)
	}
	if v := crevs[1]; v.Version != 2 || v.Status != memorykit.StatusActive || v.Actor != reviewer || v.Reason != "team vote" ||
		v.Content != c.Content || v.ContentHash != c.ContentHash || !v.At.Equal(now) {
		t.Fatalf("activate revision: %+v", v)
	}
	fa, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindPreference, "tabs")
	if err != nil || fa.ID != c.ID {
		t.Fatalf("FindActive = %s, %v; want %s", fa.ID, err, c.ID)
	}
	// Activating with no active holder supersedes nothing.
	lone := e.create(e.candidate(memorykit.KindNote, "lone", "alone"))
	if r := e.must(actActivate, tr(e.scope, lone.ID, reviewer)); r.Status != memorykit.StatusActive {
		t.Fatalf("lone candidate became %s", r.Status)
	}
}

func testReject(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindFact, "guess", "Maybe Friday."))
	e.advance(time.Minute)
	got := e.must(actReject, tr(e.scope, c.ID, reviewer))
	if got.Status != memorykit.StatusRejected || got.Version != 2 || got.TouchedBy != reviewer || got.Content != c.Content {
		t.Fatalf("rejected: %+v", got)
	}
	wantTime(t, "UpdatedAt", got.UpdatedAt, e.now())
	revs := e.revisions(e.scope, c.ID)
	if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate, memorykit.ActionReject}, actions(revs)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	if revs[1].Status != memorykit.StatusRejected || revs[1].Version != 2 {
		t.Fatalf("reject revision: %+v", revs[1])
	}
}

func testCorrect(t *testing.T, e *env) {
	in := e.active(memorykit.KindFact, "timeout", "The timeout is 30s.")
	in.Metadata = map[string]string{"unit": "seconds"}
	in.Sources = []memorykit.Source{{Kind: "conversation", Ref: "turn-1"}}
	r := e.create(in)
	e.advance(time.Hour)
	c := storekit.Correction{
		Transition: tr(e.scope, r.ID, reviewer),
		Content:    "The timeout is 45s.",
		Sources:    []memorykit.Source{{Kind: "review", Ref: "pr-7"}},
		Metadata:   map[string]string{"unit": "s", "checked": "yes"},
	}
	c.ExpectVersion = 1
	got, err := e.s.Correct(e.ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	now := e.now()
	want := r
	want.Content, want.Sources, want.Metadata = c.Content, c.Sources, c.Metadata
	want.ContentHash = storekit.ContentHash(c.Content)
	want.Version, want.TouchedBy, want.UpdatedAt = 2, reviewer, now
	diffRecord(t, "Correct result", got, want)
	diffRecord(t, "Get after Correct", e.get(e.scope, r.ID), want)
	if got.ContentHash == r.ContentHash {
		t.Fatal("content hash did not change")
	}
	revs := e.revisions(e.scope, r.ID)
	if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate, memorykit.ActionCorrect}, actions(revs)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	wantRev := storekit.Revision{
		RecordID: r.ID, Version: 2, Action: memorykit.ActionCorrect, Actor: reviewer, Reason: "reviewed",
		Status: memorykit.StatusActive, ContentHash: want.ContentHash, Content: c.Content,
		Metadata: c.Metadata, Sources: c.Sources, At: now,
	}
	if d := cmp.Diff(wantRev, revs[1], equateEmpty); d != "" {
		t.Fatalf("correct revision (-want +got):\n%s", d)
	}
	if revs[0].Content != in.Content || revs[0].ContentHash != r.ContentHash || revs[0].Metadata["unit"] != "seconds" {
		t.Fatalf("create revision snapshot changed: %+v", revs[0])
	}

	// Nil metadata keeps it; nil sources clear them.
	got2, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, r.ID, reviewer), Content: "The timeout is 60s."})
	if err != nil {
		t.Fatal(err)
	}
	if got2.Version != 3 || len(got2.Sources) != 0 || got2.Metadata["checked"] != "yes" || len(got2.Metadata) != 2 {
		t.Fatalf("second correction: version %d sources %v metadata %v", got2.Version, got2.Sources, got2.Metadata)
	}
	// An empty, non-nil map clears the metadata.
	got3, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, r.ID, reviewer), Content: "The timeout is 90s.", Metadata: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got3.Metadata) != 0 {
		t.Fatalf("metadata after clearing: %v", got3.Metadata)
	}
}

func testCorrectCandidate(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindNote, "draft", "first draft"))
	got, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, c.ID, reviewer), Content: "second draft"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != memorykit.StatusCandidate || got.Version != 2 || got.Content != "second draft" {
		t.Fatalf("corrected candidate: %+v", got)
	}
}

func testForget(t *testing.T, e *env) {
	in := e.active(memorykit.KindFact, "pager", "Alice is on call.")
	in.Metadata = map[string]string{"rota": "week-9"}
	in.Sources = []memorykit.Source{{Kind: "conversation", Ref: "turn-4"}}
	r := e.create(in)
	e.advance(time.Minute)
	got := e.must(actForget, tr(e.scope, r.ID, reviewer))
	want := r
	want.Status, want.Version, want.TouchedBy, want.UpdatedAt = memorykit.StatusInactive, 2, reviewer, e.now()
	diffRecord(t, "Forget result", got, want)
	diffRecord(t, "Get after Forget", e.get(e.scope, r.ID), want)
	revs := e.revisions(e.scope, r.ID)
	if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate, memorykit.ActionForget}, actions(revs)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	if revs[1].Content != in.Content || revs[1].Status != memorykit.StatusInactive {
		t.Fatalf("forget revision: %+v", revs[1])
	}
	res := e.recall(storekit.RecallQuery{Scope: e.scope, ExactKeys: []string{"pager"}, Terms: []string{"alice"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if len(res.Exact)+len(res.FullText)+len(res.FullTextBelow) != 0 {
		t.Fatalf("forgotten record still recalled: %+v", res)
	}
	// A new active record for the key supersedes nothing.
	n := e.create(e.active(memorykit.KindFact, "pager", "Bob is on call."))
	if st := e.get(e.scope, r.ID).Status; st != memorykit.StatusInactive {
		t.Fatalf("forgotten record became %s", st)
	}
	if n.Status != memorykit.StatusActive {
		t.Fatalf("new record is %s", n.Status)
	}
}

func testErase(t *testing.T, e *env) {
	in := e.active(memorykit.KindFact, "secret plan", "Launch on Monday.")
	in.Metadata = map[string]string{"x": "y"}
	in.Sources = []memorykit.Source{{Kind: "doc", Ref: "plan"}}
	r := e.create(in)
	e.advance(time.Minute)
	e.must(actForget, tr(e.scope, r.ID, reviewer))
	e.advance(time.Minute)
	et := tr(e.scope, r.ID, operator)
	et.Reason = "gdpr request"
	got := e.must(actErase, et)
	now := e.now()
	want := memorykit.Record{
		ID: r.ID, Scope: r.Scope, Kind: r.Kind, Key: NewTombstones(t).Digest(r.Scope, r.Key), Status: memorykit.StatusErased, Version: 3,
		EffectiveFrom: r.EffectiveFrom, CreatedBy: author, TouchedBy: operator, CreatedAt: r.CreatedAt, UpdatedAt: now,
	}
	diffRecord(t, "Erase result", got, want)
	diffRecord(t, "Get after Erase", e.get(e.scope, r.ID), want)
	revs := e.revisions(e.scope, r.ID)
	if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate, memorykit.ActionForget, memorykit.ActionErase}, actions(revs)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	for i, v := range revs {
		if v.Content != "" || v.ContentHash != "" || len(v.Metadata) != 0 || len(v.Sources) != 0 {
			t.Fatalf("revision %d keeps content after erase: %+v", i, v)
		}
		if v.Version != int64(i+1) || v.RecordID != r.ID {
			t.Fatalf("revision %d identity: %+v", i, v)
		}
	}
	// Free-text reasons are scrubbed with the content; actors stay.
	if revs[2].Actor != operator || revs[2].Reason != "" || revs[2].Status != memorykit.StatusErased || !revs[2].At.Equal(now) {
		t.Fatalf("erase revision: %+v", revs[2])
	}
	if revs[0].Actor != author || revs[1].Actor != reviewer || revs[0].Reason != "" {
		t.Fatalf("audit actors lost or free-text reason kept: %+v", revs)
	}
	// Rejected and superseded records may be erased too.
	c := e.create(e.candidate(memorykit.KindNote, "n", "rejected text"))
	e.must(actReject, tr(e.scope, c.ID, reviewer))
	if g := e.must(actErase, tr(e.scope, c.ID, operator)); g.Status != memorykit.StatusErased || g.Content != "" {
		t.Fatalf("erased rejected record: %+v", g)
	}
	s1 := e.create(e.active(memorykit.KindNote, "m", "old"))
	e.create(e.active(memorykit.KindNote, "m", "new"))
	if g := e.must(actErase, tr(e.scope, s1.ID, operator)); g.Status != memorykit.StatusErased || g.ContentHash != "" {
		t.Fatalf("erased superseded record: %+v", g)
	}
}

// recordIn creates a record in the given status and returns it.
func (e *env) recordIn(st memorykit.Status, key string) memorykit.Record {
	e.t.Helper()
	switch st {
	case memorykit.StatusCandidate:
		return e.create(e.candidate(memorykit.KindNote, key, "text for "+key))
	case memorykit.StatusActive:
		return e.create(e.active(memorykit.KindNote, key, "text for "+key))
	case memorykit.StatusRejected:
		r := e.recordIn(memorykit.StatusCandidate, key)
		return e.must(actReject, tr(e.scope, r.ID, reviewer))
	case memorykit.StatusInactive:
		r := e.recordIn(memorykit.StatusActive, key)
		return e.must(actForget, tr(e.scope, r.ID, reviewer))
	case memorykit.StatusSuperseded:
		r := e.recordIn(memorykit.StatusActive, key)
		e.recordIn(memorykit.StatusActive, key)
		return e.get(e.scope, r.ID)
	case memorykit.StatusErased:
		r := e.recordIn(memorykit.StatusInactive, key)
		return e.must(actErase, tr(e.scope, r.ID, operator))
	}
	e.t.Fatalf("recordIn: unknown status %s", st)
	return memorykit.Record{}
}

func testInvalidTransitions(t *testing.T, e *env) {
	valid := map[string][]memorykit.Status{
		"Activate": {memorykit.StatusCandidate},
		"Reject":   {memorykit.StatusCandidate},
		"Correct":  {memorykit.StatusActive, memorykit.StatusCandidate},
		"Forget":   {memorykit.StatusActive},
		"Erase":    {memorykit.StatusInactive, memorykit.StatusRejected, memorykit.StatusSuperseded},
	}
	for _, st := range memorykit.Statuses() {
		r := e.recordIn(st, "key "+string(st))
		for _, a := range allActions {
			ok := false
			for _, v := range valid[a.name] {
				ok = ok || v == st
			}
			if ok {
				continue
			}
			e.refused(t, a.name+" from "+string(st), memorykit.ErrInvalidTransition, func() error {
				_, err := a.do(e.ctx, e.s, tr(e.scope, r.ID, reviewer))
				return err
			})
		}
	}
}

func testExpectVersion(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindFact, "v", "one"))
	a := e.create(e.active(memorykit.KindFact, "w", "two"))
	cases := []struct {
		act action
		id  string
	}{
		{actActivate, c.ID}, {actReject, c.ID}, {actCorrect, c.ID}, {actCorrect, a.ID}, {actForget, a.ID},
	}
	for _, k := range cases {
		for _, v := range []int64{2, 7} {
			x := tr(e.scope, k.id, reviewer)
			x.ExpectVersion = v
			e.refused(t, fmt.Sprintf("%s expecting version %d", k.act.name, v), memorykit.ErrVersionConflict, func() error {
				_, err := k.act.do(e.ctx, e.s, x)
				return err
			})
		}
	}
	x := tr(e.scope, a.ID, reviewer)
	x.ExpectVersion = 1
	f := e.must(actForget, x)
	x.ExpectVersion = 1
	e.refused(t, "Erase expecting a stale version", memorykit.ErrVersionConflict, func() error {
		_, err := e.s.Erase(e.ctx, x)
		return err
	})
	x.ExpectVersion = f.Version
	if r := e.must(actErase, x); r.Version != 3 {
		t.Fatalf("erase version %d, want 3", r.Version)
	}
}

func testRevisionTrail(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindDecision, "db", "Use Postgres."))
	times := []time.Time{e.now()}
	steps := []struct {
		act    action
		actor  memorykit.Actor
		reason string
	}{
		{actCorrect, reviewer, "typo"},
		{actActivate, reviewer, "approved"},
		{actCorrect, operator, "more detail"},
		{actForget, operator, "obsolete"},
		{actErase, operator, "cleanup"},
	}
	// Erase keeps reason codes and drops free text (storekit.ScrubReason).
	kept := map[string]string{"typo": "typo", "approved": "approved", "more detail": "", "obsolete": "obsolete", "cleanup": "cleanup"}
	for i, s := range steps {
		e.advance(time.Duration(i+1) * 17 * time.Second)
		x := tr(e.scope, c.ID, s.actor)
		x.Reason = s.reason
		e.must(s.act, x)
		times = append(times, e.now())
	}
	revs := e.revisions(e.scope, c.ID)
	wantActions := []memorykit.Action{memorykit.ActionCreate, memorykit.ActionCorrect, memorykit.ActionActivate,
		memorykit.ActionCorrect, memorykit.ActionForget, memorykit.ActionErase}
	if d := cmp.Diff(wantActions, actions(revs)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	wantStatus := []memorykit.Status{memorykit.StatusCandidate, memorykit.StatusCandidate, memorykit.StatusActive,
		memorykit.StatusActive, memorykit.StatusInactive, memorykit.StatusErased}
	for i, v := range revs {
		if v.Version != int64(i+1) || v.Status != wantStatus[i] || !v.At.Equal(times[i]) || v.RecordID != c.ID {
			t.Fatalf("revision %d: version %d status %s at %s; want %d %s %s", i, v.Version, v.Status,
				v.At.Format(time.RFC3339Nano), i+1, wantStatus[i], times[i].Format(time.RFC3339Nano))
		}
		if v.At.Location() != time.UTC {
			t.Fatalf("revision %d At is not UTC", i)
		}
		if i > 0 && (v.Actor != steps[i-1].actor || v.Reason != kept[steps[i-1].reason]) {
			t.Fatalf("revision %d actor %v reason %q", i, v.Actor, v.Reason)
		}
	}
	if revs[0].Actor != author || revs[0].Reason != "" {
		t.Fatalf("create revision actor %v reason %q", revs[0].Actor, revs[0].Reason)
	}
}

// testCreateRevisionKept: the create revision of a record (with a reason
// or without) reads the same before and after the record changes (corrected,
// superseded, activated, rejected, forgotten): every field as it was at
// create, whatever the record holds now.
func testCreateRevisionKept(t *testing.T, e *env) {
	in := e.active(memorykit.KindFact, "kept create", "The first text.")
	in.Metadata = map[string]string{"team": "platform"}
	in.Sources = []memorykit.Source{{Kind: "doc", Ref: "first"}}
	in.Reason = ""
	a := e.create(in)
	cand := e.create(e.candidate(memorykit.KindFact, "kept candidate", "A candidate text."))
	rejected := e.create(e.candidate(memorykit.KindFact, "kept rejected", "Turned down."))
	first := map[string]storekit.Revision{}
	for _, id := range []string{a.ID, cand.ID, rejected.ID} {
		first[id] = e.revisions(e.scope, id)[0]
	}
	want := storekit.Revision{RecordID: a.ID, Version: 1, Action: memorykit.ActionCreate, Actor: author,
		Status: memorykit.StatusActive, ContentHash: storekit.ContentHash(in.Content), Content: in.Content,
		Metadata: map[string]string{"team": "platform"}, Sources: []memorykit.Source{{Kind: "doc", Ref: "first"}}, At: a.CreatedAt}
	if d := cmp.Diff(want, first[a.ID], equateEmpty); d != "" {
		t.Fatalf("create revision (-want +got):\n%s", d)
	}
	e.advance(time.Minute)
	if _, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, a.ID, reviewer), Content: "The second text.",
		Metadata: map[string]string{"team": "storage"}, Sources: []memorykit.Source{{Kind: "doc", Ref: "second"}}}); err != nil {
		t.Fatalf("Correct: %v", err)
	}
	e.advance(time.Minute)
	e.must(actActivate, tr(e.scope, cand.ID, reviewer))
	e.must(actReject, tr(e.scope, rejected.ID, reviewer))
	e.advance(time.Minute)
	next := e.create(e.active(memorykit.KindFact, "kept create", "The third text."))
	e.must(actForget, tr(e.scope, next.ID, operator))
	e.must(actErase, tr(e.scope, next.ID, operator))
	gone := e.revisions(e.scope, next.ID)[0]
	wantGone := storekit.Revision{RecordID: next.ID, Version: 1, Action: memorykit.ActionCreate, Actor: author,
		Reason: storekit.ScrubReason("test setup"), Status: memorykit.StatusActive, At: next.CreatedAt}
	if d := cmp.Diff(wantGone, gone, equateEmpty); d != "" {
		t.Fatalf("create revision after erase (-want +got):\n%s", d)
	}
	for id, v := range first {
		revs := e.revisions(e.scope, id)
		if d := cmp.Diff(v, revs[0], equateEmpty); d != "" {
			t.Fatalf("create revision of %s changed with the record (-before +after):\n%s", id, d)
		}
	}
	revs := e.revisions(e.scope, a.ID)
	if len(revs) != 3 || revs[1].Action != memorykit.ActionCorrect || revs[1].Content != "The second text." ||
		revs[1].Metadata["team"] != "storage" || revs[2].Action != memorykit.ActionSupersede || revs[2].Content != "The second text." {
		t.Fatalf("trail after correct and supersede: %+v", revs)
	}
}

// concurrency is how many goroutines race in the concurrency cases.
const concurrency = 8

// allowedRaceError reports whether a racing call may fail with err: only a
// recoverable failure (such as a serialization conflict) is acceptable.
func allowedRaceError(err error) bool { return memorykit.IsRecoverable(err) }

func testConcurrentActivation(t *testing.T, e *env) {
	first := e.create(e.active(memorykit.KindFact, "leader", "nobody yet"))
	var cands []memorykit.Record
	for i := 0; i < concurrency; i++ {
		cands = append(cands, e.create(e.candidate(memorykit.KindFact, "leader", fmt.Sprintf("candidate %d", i))))
	}
	errs := make([]error, len(cands))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.s.Activate(e.ctx, tr(e.scope, c.ID, reviewer))
		}()
	}
	close(start)
	wg.Wait()
	succeeded := 0
	activeCount := 0
	for i, c := range cands {
		r := e.get(e.scope, c.ID)
		switch {
		case errs[i] == nil:
			succeeded++
			if r.Status != memorykit.StatusActive && r.Status != memorykit.StatusSuperseded {
				t.Fatalf("activated candidate %d is %s", i, r.Status)
			}
			if r.Status == memorykit.StatusActive {
				activeCount++
			} else if r.Version != 3 {
				t.Fatalf("activated then superseded candidate %d has version %d, want 3", i, r.Version)
			}
		case allowedRaceError(errs[i]):
			if r.Status != memorykit.StatusCandidate || r.Version != 1 {
				t.Fatalf("failed activation %d left status %s version %d", i, r.Status, r.Version)
			}
		default:
			t.Fatalf("activation %d failed with a non-recoverable error: %v", i, errs[i])
		}
	}
	if succeeded == 0 {
		t.Fatal("no concurrent activation succeeded")
	}
	if activeCount != 1 {
		t.Fatalf("%d active records after concurrent activation, want 1", activeCount)
	}
	if st := e.get(e.scope, first.ID).Status; st != memorykit.StatusSuperseded {
		t.Fatalf("original active record is %s, want superseded", st)
	}
	e.checkSingleActive(t, "leader", succeeded+1)
}

// checkSingleActive verifies, through List, that exactly one record of
// the key is active, that wantHeld records ever held it (every other one
// superseded), and that every supersede revision is well formed.
func (e *env) checkSingleActive(t *testing.T, key string, wantHeld int) {
	t.Helper()
	rs, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Key: key, Limit: Limits().MaxListSize,
		Statuses: []memorykit.Status{memorykit.StatusActive, memorykit.StatusSuperseded}})
	if err != nil {
		t.Fatal(err)
	}
	active, superseded := 0, 0
	for _, r := range rs {
		switch r.Status {
		case memorykit.StatusActive:
			active++
		case memorykit.StatusSuperseded:
			superseded++
			revs := e.revisions(e.scope, r.ID)
			last := revs[len(revs)-1]
			if last.Action != memorykit.ActionSupersede || last.Version != r.Version {
				t.Fatalf("superseded record %s ends with %s v%d (record v%d)", r.ID, last.Action, last.Version, r.Version)
			}
		}
	}
	if active != 1 || active+superseded != wantHeld {
		t.Fatalf("key %q: %d active, %d superseded; want 1 active of %d", key, active, superseded, wantHeld)
	}
	fa, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, key)
	if err != nil {
		t.Fatal(err)
	}
	if fa.Status != memorykit.StatusActive {
		t.Fatalf("FindActive returned a %s record", fa.Status)
	}
}

func testConcurrentCreates(t *testing.T, e *env) {
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.s.Create(e.ctx, e.active(memorykit.KindFact, "winner", fmt.Sprintf("writer %d", i)))
		}()
	}
	close(start)
	wg.Wait()
	succeeded := 0
	for i, err := range errs {
		switch {
		case err == nil:
			succeeded++
		case allowedRaceError(err):
		default:
			t.Fatalf("create %d failed with a non-recoverable error: %v", i, err)
		}
	}
	if succeeded == 0 {
		t.Fatal("no concurrent create succeeded")
	}
	all, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Limit: Limits().MaxListSize})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != succeeded {
		t.Fatalf("%d records stored for %d successful creates", len(all), succeeded)
	}
	e.checkSingleActive(t, "winner", succeeded)
}

// canary is a unique token for the erase test; IndexTerms keeps it whole.
const canary = "zqcanary4471"

func testEraseCanary(t *testing.T, e *env) {
	const profile = "test/canary-v1"
	const profile2 = "test/canary-v2"
	bystander := e.create(e.active(memorykit.KindNote, "bystander", "ordinary text"))
	e.embed(bystander, profile, []float32{0, 1, 0})

	in := e.active(memorykit.KindFact, "erase target", "launch code "+canary+" stays secret")
	in.Metadata = map[string]string{"hint": "ask " + canary, canary: "as a key too"}
	in.Sources = []memorykit.Source{{Kind: "conversation", Ref: "run-" + canary + "/turn-1"}}
	r := e.create(in)
	e.embed(r, profile, []float32{1, 0, 0})
	c, err := e.s.Correct(e.ctx, storekit.Correction{
		Transition: tr(e.scope, r.ID, reviewer),
		Content:    "corrected " + canary + " 数据库" + canary,
		Sources:    []memorykit.Source{{Kind: "review", Ref: "fix " + canary}},
		Metadata:   map[string]string{"hint": canary + " again"},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.embed(c, profile, []float32{1, 0.5, 0})
	// Leave an embedding lease for a second profile in place.
	tasks, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: profile2, WorkerID: "embedder-2", TTL: time.Hour, Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !contains(taskIDs(tasks), r.ID) {
		t.Fatalf("setup: could not lease the target for %s", profile2)
	}
	if !strings.Contains(strings.ToLower(e.dump()), canary) {
		t.Fatal("Dump does not render content before erase; the canary test would prove nothing")
	}

	e.must(actForget, tr(e.scope, r.ID, reviewer))
	erased := e.must(actErase, tr(e.scope, r.ID, operator))

	if d := e.dump(); strings.Contains(strings.ToLower(d), canary) {
		t.Fatalf("the canary survives erase in the store's dump:\n%s", d)
	}
	noCanary(t, "Erase result", erased, canary)
	got := e.get(e.scope, r.ID)
	noCanary(t, "Get", got, canary)
	if got.Content != "" || got.ContentHash != "" || len(got.Metadata) != 0 || len(got.Sources) != 0 {
		t.Fatalf("erased record keeps content: %+v", got)
	}
	if got.ID != r.ID || got.Scope != e.scope || got.Kind != memorykit.KindFact || got.Key != NewTombstones(t).Digest(e.scope, "erase target") || got.Status != memorykit.StatusErased {
		t.Fatalf("erased record lost its identity: %+v", got)
	}
	list, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	noCanary(t, "List", list, canary)
	revs := e.revisions(e.scope, r.ID)
	noCanary(t, "Revisions", revs, canary)
	wantActions := []memorykit.Action{memorykit.ActionCreate, memorykit.ActionCorrect, memorykit.ActionForget, memorykit.ActionErase}
	if d := cmp.Diff(wantActions, actions(revs)); d != "" {
		t.Fatalf("audit actions after erase (-want +got):\n%s", d)
	}
	wantActors := []memorykit.Actor{author, reviewer, reviewer, operator}
	for i, v := range revs {
		if v.Actor != wantActors[i] || v.Version != int64(i+1) || v.ContentHash != "" || v.At.IsZero() {
			t.Fatalf("revision %d after erase: %+v", i, v)
		}
	}
	q := query(e.scope)
	q.ExactKeys = []string{"erase target", canary}
	q.Terms = storekit.SearchTerms(canary+" 数据库 launch corrected", 16)
	q.Vector, q.Profile = []float32{1, 0.5, 0}, profile
	res := e.recall(q)
	noCanary(t, "Recall", res, canary)
	for _, hits := range [][]storekit.Hit{res.Exact, res.FullText, res.FullTextBelow, res.Vector} {
		if contains(ids(hits), r.ID) {
			t.Fatalf("erased record recalled: %+v", res)
		}
	}
	// The target's embeddings are gone: only the bystander's is left.
	if n, err := e.s.DeleteEmbeddings(e.ctx, profile, e.scope); err != nil || n != 1 {
		t.Fatalf("DeleteEmbeddings after erase = %d, %v; want 1 (the bystander's)", n, err)
	}
	if n := e.pending(profile2); n != 1 {
		t.Fatalf("pending for %s = %d, want 1 (the bystander)", profile2, n)
	}
	more, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: profile2, WorkerID: "embedder-3", TTL: time.Hour, Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	if contains(taskIDs(more), r.ID) {
		t.Fatal("an erased record was leased for embedding")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
