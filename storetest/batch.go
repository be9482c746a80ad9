package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// RunBatchConformance checks storekit.BatchCreator: a batch is validated
// exactly like single creates, applied in order with single-create
// semantics (supersede and Expect see the earlier items), all or nothing,
// bounded by Limits.MaxListSize, and may carry embeddings that recall uses
// at once. A store that does not implement BatchCreator skips the suite.
func RunBatchConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"CreatesInOrder", testBatchCreates},
		{"Supersedes", testBatchSupersedes},
		{"Expect", testBatchExpect},
		{"AllOrNothing", testBatchAllOrNothing},
		{"ValidationAsCreate", testBatchValidation},
		{"Size", testBatchSize},
		{"Embeddings", testBatchEmbeddings},
		{"TiesGoNewerFirst", testBatchTies},
	})
}

func batcher(t *testing.T, e *env) storekit.BatchCreator {
	t.Helper()
	b, ok := e.s.(storekit.BatchCreator)
	if !ok {
		t.Skip("the store does not implement storekit.BatchCreator")
	}
	return b
}

func items(recs ...memorykit.NewRecord) []storekit.BatchItem {
	out := make([]storekit.BatchItem, len(recs))
	for i, r := range recs {
		out[i] = storekit.BatchItem{Record: r}
	}
	return out
}

func (e *env) batch(t *testing.T, its []storekit.BatchItem) []memorykit.Record {
	t.Helper()
	out, err := batcher(t, e).CreateBatch(e.ctx, its)
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	if len(out) != len(its) {
		t.Fatalf("CreateBatch returned %d records for %d items", len(out), len(its))
	}
	return out
}

func testBatchCreates(t *testing.T, e *env) {
	batcher(t, e)
	e.advance(time.Second)
	a := e.active(memorykit.KindFact, "Deploy Region", "the api runs in eu-west-1")
	a.Metadata = map[string]string{"team": "blue"}
	a.Sources = []memorykit.Source{{Kind: "conversation", Ref: "turn-1"}}
	b := e.candidate(memorykit.KindDecision, "db engine", "we chose postgres for the ledger")
	c := e.active(memorykit.KindNote, "pager", "the pager rotates weekly")
	c.ID = "mem-batch-c"
	c.EffectiveUntil = e.now().Add(time.Hour)
	got := e.batch(t, items(a, b, c))
	now := e.now()
	seen := map[string]bool{}
	for i, r := range got {
		if r.ID == "" || seen[r.ID] {
			t.Fatalf("record %d has an empty or repeated ID %q", i, r.ID)
		}
		seen[r.ID] = true
		diffRecord(t, fmt.Sprintf("returned record %d", i), r, e.get(e.scope, r.ID))
		// Item i is stamped at BatchItemTime: distinct, increasing
		// instants in item order, the last one now.
		at := storekit.BatchItemTime(now, i, len(got))
		if r.Version != 1 || !r.CreatedAt.Equal(at) || !r.UpdatedAt.Equal(at) {
			t.Fatalf("record %d: version %d created %s updated %s", i, r.Version, r.CreatedAt, r.UpdatedAt)
		}
		revs := e.revisions(e.scope, r.ID)
		if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate}, actions(revs)); d != "" {
			t.Fatalf("record %d revisions (-want +got):\n%s", i, d)
		}
	}
	if got[0].Key != "deploy region" || got[0].Status != memorykit.StatusActive || got[0].Metadata["team"] != "blue" ||
		got[0].ContentHash != storekit.ContentHash(a.Content) || !got[0].EffectiveFrom.Equal(now.Add(-2*time.Microsecond)) {
		t.Fatalf("first record: %+v", got[0])
	}
	if got[1].Status != memorykit.StatusCandidate || got[2].ID != "mem-batch-c" || !got[2].EffectiveUntil.Equal(c.EffectiveUntil.UTC().Truncate(time.Microsecond)) {
		t.Fatalf("second/third record: %+v / %+v", got[1], got[2])
	}
	// The same records created one by one would be recalled the same way:
	// active ones by full text, the candidate never.
	q := query(e.scope)
	q.Terms = storekit.SearchTerms("api postgres pager", 8)
	res := e.recall(q)
	// Equal matches and weights: the later item is newer and ranks first,
	// whatever the IDs.
	wantIDs(t, "full-text hits", ids(res.FullText), []string{got[2].ID, got[0].ID})
	e.checkRecords(t, e.scope, res)

	// An empty batch does nothing.
	before := e.dump()
	if out, err := batcher(t, e).CreateBatch(e.ctx, nil); err != nil || len(out) != 0 {
		t.Fatalf("empty batch: %v, %d records", err, len(out))
	}
	e.unchanged(t, before, "an empty batch")
}

func testBatchSupersedes(t *testing.T, e *env) {
	batcher(t, e)
	old := e.create(e.active(memorykit.KindFact, "owner", "team blue owns billing"))
	other := e.create(e.active(memorykit.KindDecision, "owner", "a decision with the same key"))
	e.advance(time.Second)
	first := e.active(memorykit.KindFact, "Owner", "team green owns billing")
	first.Actor, first.Reason = operator, "reorg"
	second := e.active(memorykit.KindFact, "owner", "team red owns billing")
	second.Actor, second.Reason = reviewer, "second reorg"
	cand := e.candidate(memorykit.KindFact, "owner", "team gold owns billing?")
	got := e.batch(t, items(first, second, cand))
	now := e.now()

	o := e.get(e.scope, old.ID)
	// The first item (applied at now - 2µs) superseded it.
	if o.Status != memorykit.StatusSuperseded || o.Version != 2 || o.TouchedBy != operator || !o.UpdatedAt.Equal(now.Add(-2*time.Microsecond)) {
		t.Fatalf("pre-existing record: %+v", o)
	}
	revs := e.revisions(e.scope, old.ID)
	if revs[1].Action != memorykit.ActionSupersede || revs[1].Actor != operator || revs[1].Reason != "reorg" {
		t.Fatalf("pre-existing record's supersede revision: %+v", revs[1])
	}
	// The first item was superseded by the second, inside the batch, and
	// is returned as it stands after the batch.
	f := e.get(e.scope, got[0].ID)
	diffRecord(t, "first item", got[0], f)
	if f.Status != memorykit.StatusSuperseded || f.Version != 2 || f.TouchedBy != reviewer || !f.UpdatedAt.Equal(now.Add(-time.Microsecond)) {
		t.Fatalf("first item: %+v", f)
	}
	revs = e.revisions(e.scope, f.ID)
	if d := cmp.Diff([]memorykit.Action{memorykit.ActionCreate, memorykit.ActionSupersede}, actions(revs)); d != "" {
		t.Fatalf("first item actions (-want +got):\n%s", d)
	}
	if !revs[0].At.Equal(now.Add(-2*time.Microsecond)) || !revs[1].At.Equal(now.Add(-time.Microsecond)) {
		t.Fatalf("first item revision times: %s, %s", revs[0].At, revs[1].At)
	}
	if revs[0].Status != memorykit.StatusActive || revs[0].Actor != operator || revs[1].Status != memorykit.StatusSuperseded ||
		revs[1].Actor != reviewer || revs[1].Reason != "second reorg" || revs[1].Content != first.Content {
		t.Fatalf("first item revisions: %+v", revs)
	}
	active, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, "owner")
	if err != nil || active.ID != got[1].ID || got[1].Status != memorykit.StatusActive {
		t.Fatalf("FindActive = %s, %v; want %s", active.ID, err, got[1].ID)
	}
	if got[2].Status != memorykit.StatusCandidate {
		t.Fatalf("candidate item became %s", got[2].Status)
	}
	if st := e.get(e.scope, other.ID).Status; st != memorykit.StatusActive {
		t.Fatalf("record of another kind became %s", st)
	}
	// Only the surviving record is recalled.
	q := query(e.scope)
	q.Terms = storekit.SearchTerms("billing", 4)
	wantIDs(t, "full-text hits", ids(e.recall(q).FullText), []string{got[1].ID})
}

func testBatchExpect(t *testing.T, e *env) {
	b := batcher(t, e)
	held := e.create(e.active(memorykit.KindFact, "region", "eu-west-1"))
	// Item 2 expects the record item 1 creates; item 1 expects the one in
	// the store.
	one := e.active(memorykit.KindFact, "region", "us-east-2")
	one.ID = "mem-batch-1"
	one.Expect = &memorykit.ActiveExpectation{ID: held.ID, Version: 1}
	two := e.active(memorykit.KindFact, "region", "ap-south-1")
	two.Expect = &memorykit.ActiveExpectation{ID: "mem-batch-1", Version: 1}
	fresh := e.active(memorykit.KindFact, "zone", "a")
	fresh.Expect = &memorykit.ActiveExpectation{None: true}
	got := e.batch(t, items(one, two, fresh))
	if got[1].Status != memorykit.StatusActive || got[0].Status != memorykit.StatusSuperseded {
		t.Fatalf("statuses %s %s", got[0].Status, got[1].Status)
	}
	// Expect None on a key an earlier item of the same batch takes.
	x := e.active(memorykit.KindFact, "shard", "1")
	y := e.active(memorykit.KindFact, "shard", "2")
	y.Expect = &memorykit.ActiveExpectation{None: true}
	e.refused(t, "Expect None after an earlier item took the key", memorykit.ErrVersionConflict, func() error {
		_, err := b.CreateBatch(e.ctx, items(x, y))
		return err
	})
	// Expecting the record the batch itself supersedes first.
	z := e.active(memorykit.KindFact, "region", "sa-east-1")
	w := e.active(memorykit.KindFact, "region", "me-south-1")
	w.Expect = &memorykit.ActiveExpectation{ID: got[1].ID, Version: 1}
	e.refused(t, "Expect a record an earlier item superseded", memorykit.ErrVersionConflict, func() error {
		_, err := b.CreateBatch(e.ctx, items(z, w))
		return err
	})
}

func testBatchAllOrNothing(t *testing.T, e *env) {
	b := batcher(t, e)
	taken := e.create(e.active(memorykit.KindFact, "taken", "the id is taken"))
	good := func(i int) memorykit.NewRecord {
		return e.active(memorykit.KindNote, fmt.Sprintf("good %d", i), fmt.Sprintf("valid record %d", i))
	}
	badAt := func(bad memorykit.NewRecord) []storekit.BatchItem {
		return items(good(1), good(2), bad, good(4))
	}
	cases := []struct {
		name string
		want error
		its  []storekit.BatchItem
	}{
		{"validator rejects the third item", memorykit.ErrInvalidInput, badAt(func() memorykit.NewRecord {
			in := good(3)
			in.Content = "x " + RejectMarker
			return in
		}())},
		{"third item's ID is taken", memorykit.ErrAlreadyExists, badAt(func() memorykit.NewRecord {
			in := good(3)
			in.ID = taken.ID
			return in
		}())},
		{"an ID repeats", memorykit.ErrAlreadyExists, func() []storekit.BatchItem {
			x, y := good(1), good(2)
			x.ID, y.ID = "mem-twice", "mem-twice"
			return items(x, y)
		}()},
		{"third item's window is empty", memorykit.ErrInvalidInput, badAt(func() memorykit.NewRecord {
			in := good(3)
			in.EffectiveUntil = e.now().Add(-time.Hour)
			return in
		}())},
		{"third item's scope is a user scope", memorykit.ErrInvalidScope, badAt(func() memorykit.NewRecord {
			in := good(3)
			in.Scope = badScopes()["user scope"]
			return in
		}())},
		{"embedding on a candidate", memorykit.ErrInvalidInput, func() []storekit.BatchItem {
			its := items(good(1), e.candidate(memorykit.KindNote, "c", "candidate"))
			its[1].Embedding = &storekit.BatchEmbedding{Profile: "p", Vector: []float32{1, 0}}
			return its
		}()},
		{"embedding with a NaN", memorykit.ErrInvalidInput, func() []storekit.BatchItem {
			its := items(good(1), good(2))
			its[1].Embedding = &storekit.BatchEmbedding{Profile: "p", Vector: []float32{1, float32(math.NaN())}}
			return its
		}()},
		{"embedding all zeros", memorykit.ErrInvalidInput, func() []storekit.BatchItem {
			its := items(good(1), good(2))
			its[1].Embedding = &storekit.BatchEmbedding{Profile: "p", Vector: []float32{0, 0}}
			return its
		}()},
		{"embedding empty", memorykit.ErrInvalidInput, func() []storekit.BatchItem {
			its := items(good(1), good(2))
			its[1].Embedding = &storekit.BatchEmbedding{Profile: "p", Vector: []float32{}}
			return its
		}()},
		{"embedding with a bad profile", memorykit.ErrInvalidInput, func() []storekit.BatchItem {
			its := items(good(1), good(2))
			its[1].Embedding = &storekit.BatchEmbedding{Profile: "bad profile", Vector: []float32{1}}
			return its
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.refused(t, c.name, c.want, func() error {
				out, err := b.CreateBatch(e.ctx, c.its)
				if out != nil {
					t.Fatalf("a refused batch returned %d records", len(out))
				}
				return err
			})
		})
	}
	t.Run("done context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		before := e.dump()
		_, err := b.CreateBatch(ctx, items(good(1)))
		if !errorsIsCanceled(err) {
			t.Fatalf("CreateBatch with a done context: %v", err)
		}
		e.unchanged(t, before, "a batch with a done context")
	})
}

// testBatchValidation refuses, at position 1 of a batch, every NewRecord
// the bad-input suite makes Create refuse, and requires the same error
// kind and reason, with the field prefixed by the item's position.
func testBatchValidation(t *testing.T, e *env) {
	b := batcher(t, e)
	e.create(e.active(memorykit.KindFact, "existing", "an existing record"))
	for _, c := range badNewRecords(e) {
		t.Run(c.name, func(t *testing.T) {
			_, cerr := e.s.Create(e.ctx, c.in)
			var want *memorykit.Error
			if !errors.As(cerr, &want) {
				t.Fatalf("Create error %v is not a *memorykit.Error", cerr)
			}
			ok := e.active(memorykit.KindNote, "fine", "a fine record")
			var berr error
			e.refused(t, c.name, c.want, func() error {
				_, berr = b.CreateBatch(e.ctx, items(ok, c.in))
				return berr
			})
			var got *memorykit.Error
			errors.As(berr, &got)
			wantField := "items[1]"
			if want.Field != "" {
				wantField += "." + want.Field
			}
			if !errors.Is(berr, want.Kind) || got.Reason != want.Reason || got.Field != wantField {
				t.Fatalf("batch error %v (field %q reason %q), Create error %v (field %q reason %q)",
					berr, got.Field, got.Reason, cerr, want.Field, want.Reason)
			}
		})
	}
}

func testBatchSize(t *testing.T, e *env) {
	b := batcher(t, e)
	l := Limits()
	mk := func(n int) []storekit.BatchItem {
		var recs []memorykit.NewRecord
		for i := 0; i < n; i++ {
			recs = append(recs, e.active(memorykit.KindNote, fmt.Sprintf("note %d", i), "a note "+strings.Repeat("x", i)))
		}
		return items(recs...)
	}
	e.refused(t, "a batch over MaxListSize", memorykit.ErrInvalidInput, func() error {
		_, err := b.CreateBatch(e.ctx, mk(l.MaxListSize+1))
		return err
	})
	if got := e.batch(t, mk(l.MaxListSize)); len(got) != l.MaxListSize {
		t.Fatalf("a batch of MaxListSize created %d records", len(got))
	}
}

func testBatchEmbeddings(t *testing.T, e *env) {
	batcher(t, e)
	const profile = "test/v1"
	a := e.active(memorykit.KindFact, "a", "alpha record")
	c := e.active(memorykit.KindFact, "c", "charlie record")
	superseded := e.active(memorykit.KindFact, "c", "charlie again")
	its := items(a, e.active(memorykit.KindFact, "b", "bravo record"), c, superseded)
	its[0].Embedding = &storekit.BatchEmbedding{Profile: profile, Vector: []float32{1, 0, 0}}
	its[2].Embedding = &storekit.BatchEmbedding{Profile: profile, Vector: []float32{0, 1, 0}}
	its[3].Embedding = &storekit.BatchEmbedding{Profile: profile, Vector: []float32{0.6, 0.8, 0}}
	vec := its[0].Embedding.Vector
	got := e.batch(t, its)
	vec[0] = -1 // the store copied the vector
	// Only "b" lacks a current embedding.
	if n := e.pending(profile); n != 1 {
		t.Fatalf("PendingEmbeddings = %d, want 1", n)
	}
	q := query(e.scope)
	q.Vector, q.Profile = []float32{1, 0.1, 0}, profile
	res := e.recall(q)
	wantIDs(t, "vector hits", ids(res.Vector), []string{got[0].ID, got[3].ID})
	if s := res.Vector[0].Score; math.Abs(s-1/math.Sqrt(1.01)) > 1e-6 {
		t.Fatalf("score %v", s)
	}
	// A record created by the batch and embedded by PutEmbedding ranks the
	// same as one embedded in the batch.
	d := e.create(e.active(memorykit.KindFact, "d", "delta record"))
	e.embed(d, profile, []float32{1, 0, 0})
	res = e.recall(q)
	if len(res.Vector) != 3 || res.Vector[0].Score != res.Vector[1].Score {
		t.Fatalf("vector hits %+v", res.Vector)
	}
	e.checkRecords(t, e.scope, res)
}

// testBatchTies: items of one batch are stamped at distinct, increasing
// instants (storekit.BatchItemTime), so records that tie in every channel
// (same key, same words, same vector) come back newest first — the batch's
// last item first — whatever their IDs, in the exact, full-text and vector
// channels alike.
func testBatchTies(t *testing.T, e *env) {
	batcher(t, e)
	const profile = "test/v1"
	kinds := []memorykit.Kind{memorykit.KindFact, memorykit.KindNote, memorykit.KindDecision, memorykit.KindPreference}
	var its []storekit.BatchItem
	for i, k := range kinds {
		in := e.active(k, "tie", "same words here")
		in.ID = fmt.Sprintf("mem-tie-%d", i+1) // ID order is item order
		its = append(its, storekit.BatchItem{Record: in, Embedding: &storekit.BatchEmbedding{Profile: profile, Vector: []float32{1, 1, 0}}})
	}
	got := e.batch(t, its)
	want := []string{got[3].ID, got[2].ID, got[1].ID, got[0].ID}
	q := query(e.scope)
	q.ExactKeys = []string{"tie"}
	q.Terms = storekit.SearchTerms("same words", 8)
	q.Vector, q.Profile = []float32{1, 1, 0}, profile
	res := e.recall(q)
	wantIDs(t, "exact hits", ids(res.Exact), want)
	wantIDs(t, "full-text hits", ids(res.FullText), want)
	wantIDs(t, "vector hits", ids(res.Vector), want)
}
