package storetest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// vectorTolerance bounds the difference between a store's cosine
// similarity and the float64 reference.
const vectorTolerance = 1e-6

// RunRecallConformance checks the recall channels: which records may
// appear at all, the exact channel's key match and order, the vector
// channel's cosine order and filters, per-channel limits and the Records
// map.
func RunRecallConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"OnlyRecallableRecords", testOnlyRecallable},
		{"ExactChannel", testExactChannel},
		{"VectorChannel", testVectorChannel},
		{"VectorStaleAfterCorrect", testVectorStale},
		{"ChannelLimits", testChannelLimits},
		{"RecordsMap", testRecordsMap},
		{"EmptyQuery", testEmptyQuery},
	})
}

func testOnlyRecallable(t *testing.T, e *env) {
	const profile = "test/recall-v1"
	vec := []float32{0.6, 0.8, 0}
	mk := func(key string, from, until time.Time) memorykit.Record {
		in := e.active(memorykit.KindFact, key, "zebra crossing near "+key)
		in.EffectiveFrom, in.EffectiveUntil = from, until
		r := e.create(in)
		e.embed(r, profile, vec)
		return r
	}
	open := time.Time{}
	visible := mk("zebra visible", open, open)
	// superseded: an older active record replaced by a newer one, which
	// is then forgotten (inactive).
	sup := mk("zebra replaced", open, open)
	inactive := mk("zebra replaced", open, open)
	e.must(actForget, tr(e.scope, inactive.ID, reviewer))
	cand := e.create(e.candidate(memorykit.KindFact, "zebra candidate", "zebra crossing near candidate"))
	rej := e.create(e.candidate(memorykit.KindFact, "zebra rejected", "zebra crossing near rejected"))
	e.must(actReject, tr(e.scope, rej.ID, reviewer))
	erased := mk("zebra erased", open, open)
	e.must(actForget, tr(e.scope, erased.ID, reviewer))
	e.must(actErase, tr(e.scope, erased.ID, operator))
	expiring := mk("zebra expiring", open, Epoch.Add(time.Hour))
	future := mk("zebra future", Epoch.Add(3*time.Hour), open)
	otherScope := Scope(t, "tenant-a", "project-elsewhere")
	o := e.create(newRec(otherScope, memorykit.KindFact, "zebra visible", "zebra crossing near zebra visible", memorykit.StatusActive))
	e.embed(o, profile, vec)

	e.advance(2 * time.Hour) // expiring has expired; future has not begun
	q := query(e.scope)
	q.ExactKeys = []string{"zebra visible", "zebra replaced", "zebra candidate", "zebra rejected", "zebra erased", "zebra expiring", "zebra future"}
	q.Terms = storekit.SearchTerms("zebra crossing", 8)
	q.Vector, q.Profile = vec, profile
	res := e.recall(q)
	hidden := map[string]string{
		sup.ID: "superseded", inactive.ID: "inactive", cand.ID: "candidate", rej.ID: "rejected",
		erased.ID: "erased", expiring.ID: "expired", future.ID: "not yet effective", o.ID: "other scope",
	}
	check := func(when string, res storekit.RecallResult, want []string) {
		t.Helper()
		for name, hits := range map[string][]storekit.Hit{"exact": res.Exact, "full-text": res.FullText, "full-text below": res.FullTextBelow, "vector": res.Vector} {
			for _, h := range hits {
				if why, bad := hidden[h.ID]; bad {
					t.Fatalf("%s: the %s channel returned a %s record", when, name, why)
				}
			}
		}
		wantIDs(t, when+" exact", ids(res.Exact), want)
		wantIDs(t, when+" full-text", ids(res.FullText), want)
		wantIDs(t, when+" vector", ids(res.Vector), want)
		e.checkRecords(t, e.scope, res)
	}
	check("at +2h", res, []string{visible.ID})

	e.advance(2 * time.Hour) // future is now effective
	delete(hidden, future.ID)
	res = e.recall(q)
	if len(res.Exact) != 2 || len(res.FullText) != 2 || len(res.Vector) != 2 {
		t.Fatalf("at +4h: want the visible and the newly effective record in every channel, got %+v", res)
	}
	for _, hits := range [][]storekit.Hit{res.Exact, res.FullText, res.Vector} {
		if !contains(ids(hits), future.ID) || !contains(ids(hits), visible.ID) {
			t.Fatalf("at +4h: channel hits %v", ids(hits))
		}
	}
	e.checkRecords(t, e.scope, res)
}

func testExactChannel(t *testing.T, e *env) {
	old := e.create(e.active(memorykit.KindFact, "deploy region", "eu-west-1"))
	e.advance(time.Minute)
	mk := func(id string, kind memorykit.Kind) memorykit.Record {
		in := e.active(kind, "Deploy Region", "another view of the region")
		in.ID = id
		return e.create(in)
	}
	b := mk("mem-exact-b", memorykit.KindDecision)
	a := mk("mem-exact-a", memorykit.KindNote)
	e.create(e.candidate(memorykit.KindProcedure, "deploy region", "a candidate"))
	e.create(e.active(memorykit.KindFact, "deploy", "a different key"))

	q := query(e.scope)
	q.ExactKeys = []string{"deploy region", "not a key"}
	res := e.recall(q)
	wantIDs(t, "exact", ids(res.Exact), []string{a.ID, b.ID, old.ID})
	checkRanks(t, "exact", res.Exact)
	for _, h := range res.Exact {
		if h.Score != 1 {
			t.Fatalf("exact hit %s has score %v, want 1", h.ID, h.Score)
		}
	}
	e.checkRecords(t, e.scope, res)

	// A correction makes the old record the newest.
	e.advance(time.Minute)
	if _, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, old.ID, reviewer), Content: "eu-central-1"}); err != nil {
		t.Fatal(err)
	}
	res = e.recall(q)
	wantIDs(t, "exact after correct", ids(res.Exact), []string{old.ID, a.ID, b.ID})

	q.ExactLimit = 2
	res = e.recall(q)
	wantIDs(t, "exact limit 2", ids(res.Exact), []string{old.ID, a.ID})
	e.checkRecords(t, e.scope, res)

	q.ExactKeys = []string{"deploy"}
	res = e.recall(q)
	if len(res.Exact) != 1 || res.Records[res.Exact[0].ID].Key != "deploy" {
		t.Fatalf("key \"deploy\" matched %v", ids(res.Exact))
	}
}

// cosine is the float64 reference similarity.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

func testVectorChannel(t *testing.T, e *env) {
	const p1, p2 = "test/vec-v1", "test/vec-v2"
	mk := func(id string, v []float32) memorykit.Record {
		in := e.active(memorykit.KindNote, "vector "+id, "vector record "+id)
		in.ID = id
		r := e.create(in)
		if v != nil {
			e.embed(r, p1, v)
		}
		return r
	}
	query3 := []float32{1, 0, 0}
	best := mk("mem-v-best", []float32{2, 0, 0})
	near := mk("mem-v-near", []float32{1, 1, 0})
	twinB := mk("mem-v-twin-b", []float32{0.5, -0.5, 0.7})
	twinA := mk("mem-v-twin-a", []float32{0.5, -0.5, 0.7})
	ortho := mk("mem-v-ortho", []float32{0, 3, 0})
	opposite := mk("mem-v-opposite", []float32{-1, 0, 0})
	other := mk("mem-v-p2", nil)
	e.embed(other, p2, []float32{1, 0, 0})
	wide := mk("mem-v-wide", nil)
	e.embed(wide, p1, []float32{1, 0, 0, 0})

	q := query(e.scope)
	q.Vector, q.Profile = query3, p1
	res := e.recall(q)
	want := []memorykit.Record{best, near, twinA, twinB, ortho, opposite}
	wantIDs(t, "vector", ids(res.Vector), recIDs(want))
	checkRanks(t, "vector", res.Vector)
	vecs := map[string][]float32{best.ID: {2, 0, 0}, near.ID: {1, 1, 0}, twinA.ID: {0.5, -0.5, 0.7}, twinB.ID: {0.5, -0.5, 0.7}, ortho.ID: {0, 3, 0}, opposite.ID: {-1, 0, 0}}
	for _, h := range res.Vector {
		if ref := cosine(query3, vecs[h.ID]); math.Abs(h.Score-ref) > vectorTolerance {
			t.Fatalf("vector hit %s score %v, want cosine %v", h.ID, h.Score, ref)
		}
	}
	e.checkRecords(t, e.scope, res)

	q.VectorLimit = 3
	res = e.recall(q)
	wantIDs(t, "vector limit 3", ids(res.Vector), []string{best.ID, near.ID, twinA.ID})

	q.Profile = p2
	res = e.recall(q)
	wantIDs(t, "profile 2", ids(res.Vector), []string{other.ID})

	q.Profile, q.Vector = p1, []float32{0, 0, 0, 1}
	res = e.recall(q)
	wantIDs(t, "4-dimensional query", ids(res.Vector), []string{wide.ID})

	q.Vector = nil
	res = e.recall(q)
	if len(res.Vector) != 0 {
		t.Fatalf("nil query vector returned vector hits %v", ids(res.Vector))
	}
}

func testVectorStale(t *testing.T, e *env) {
	const profile = "test/vec-v1"
	a := e.create(e.active(memorykit.KindFact, "alpha", "alpha text"))
	b := e.create(e.active(memorykit.KindFact, "beta", "beta text"))
	e.embed(a, profile, []float32{1, 0})
	e.embed(b, profile, []float32{0.5, 0.5})
	q := query(e.scope)
	q.Vector, q.Profile = []float32{1, 0}, profile
	wantIDs(t, "before correct", ids(e.recall(q).Vector), []string{a.ID, b.ID})
	c, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, a.ID, reviewer), Content: "alpha text, revised"})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "after correct", ids(e.recall(q).Vector), []string{b.ID})
	e.embed(c, profile, []float32{0.9, 0.1})
	wantIDs(t, "after re-embedding", ids(e.recall(q).Vector), []string{a.ID, b.ID})
	e.must(actForget, tr(e.scope, a.ID, reviewer))
	wantIDs(t, "after forget", ids(e.recall(q).Vector), []string{b.ID})
}

func testChannelLimits(t *testing.T, e *env) {
	const profile = "test/vec-v1"
	// One active record per kind shares the key: five in every channel.
	for i, kind := range memorykit.Kinds() {
		r := e.create(e.active(kind, "shared key", "limits probe text"))
		e.embed(r, profile, []float32{1, float32(i)})
		e.advance(time.Second)
	}
	// Four weak matches below the threshold.
	for i := 0; i < 4; i++ {
		e.create(e.active(memorykit.KindNote, fmt.Sprintf("weak %d", i), "only limits here"))
	}
	q := storekit.RecallQuery{
		Scope: e.scope, ExactKeys: []string{"shared key"}, Terms: []string{"limits", "probe", "text"},
		Vector: []float32{1, 0}, Profile: profile, ExactLimit: 2, FullTextLimit: 3, VectorLimit: 4,
	}
	res := e.recall(q)
	if len(res.Exact) != 2 || len(res.FullText) != 3 || len(res.Vector) != 4 || len(res.FullTextBelow) != 3 {
		t.Fatalf("channel sizes exact %d full-text %d below %d vector %d; want 2, 3, 3, 4",
			len(res.Exact), len(res.FullText), len(res.FullTextBelow), len(res.Vector))
	}
	checkRanks(t, "exact", res.Exact)
	checkRanks(t, "full-text", res.FullText)
	checkRanks(t, "full-text below", res.FullTextBelow)
	checkRanks(t, "vector", res.Vector)
	e.checkRecords(t, e.scope, res)
}

func testRecordsMap(t *testing.T, e *env) {
	const profile = "test/vec-v1"
	a := e.create(e.active(memorykit.KindFact, "apple", "apple pie recipe"))
	b := e.create(e.active(memorykit.KindFact, "banana", "banana bread recipe with apple"))
	c := e.create(e.active(memorykit.KindFact, "cherry", "cherry tart"))
	d := e.create(e.active(memorykit.KindFact, "damson", "recipe"))
	e.embed(c, profile, []float32{1, 0})
	q := query(e.scope)
	q.ExactKeys = []string{"apple"}
	q.Terms = []string{"apple", "pie", "recipe"}
	q.Vector, q.Profile = []float32{1, 0}, profile
	res := e.recall(q)
	wantIDs(t, "exact", ids(res.Exact), []string{a.ID})
	wantIDs(t, "full-text", ids(res.FullText), []string{a.ID, b.ID})
	wantIDs(t, "full-text below", ids(res.FullTextBelow), []string{d.ID})
	wantIDs(t, "vector", ids(res.Vector), []string{c.ID})
	e.checkRecords(t, e.scope, res)
	if _, ok := res.Records[d.ID]; ok {
		t.Fatal("Records holds a record named only by FullTextBelow")
	}
}

func testEmptyQuery(t *testing.T, e *env) {
	e.create(e.active(memorykit.KindFact, "something", "some content"))
	res := e.recall(query(e.scope))
	if len(res.Exact)+len(res.FullText)+len(res.FullTextBelow)+len(res.Vector)+len(res.Records) != 0 {
		t.Fatalf("empty query returned %+v", res)
	}
}
