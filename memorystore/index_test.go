package memorystore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// naiveRecall is the reference the index must reproduce: a full scan of
// the scope's records with float64 similarities, as memorystore computed
// recall before it had an index.
func naiveRecall(s *Store, q storekit.RecallQuery) storekit.RecallResult {
	now := s.now()
	var pool []*entry
	for e := range s.scopes[q.Scope].all() {
		if e.rec.Recallable(q.Scope, now) {
			pool = append(pool, e)
		}
	}
	res := storekit.RecallResult{Records: map[string]memorykit.Record{}}
	want := map[string]bool{}
	for _, k := range q.ExactKeys {
		want[k] = true
	}
	var ex []*memorykit.Record
	for _, e := range pool {
		if want[e.rec.Key] {
			ex = append(ex, &e.rec)
		}
	}
	sort.Slice(ex, func(i, j int) bool {
		if !ex[i].UpdatedAt.Equal(ex[j].UpdatedAt) {
			return ex[i].UpdatedAt.After(ex[j].UpdatedAt)
		}
		return ex[i].ID < ex[j].ID
	})
	for i, r := range ex {
		if i == q.ExactLimit {
			break
		}
		res.Exact = append(res.Exact, storekit.Hit{ID: r.ID, Rank: i + 1, Score: 1})
	}
	var uniq []string
	seen := map[string]bool{}
	for _, t := range q.Terms {
		if t != "" && !seen[t] {
			seen[t] = true
			uniq = append(uniq, t)
		}
	}
	// Each record's terms, from its text (the index keeps them as ids).
	termsOf := map[*entry]map[string]struct{}{}
	for _, e := range pool {
		termsOf[e] = map[string]struct{}{}
		for _, t := range storekit.IndexTerms(e.rec.Key, e.rec.Content) {
			termsOf[e][t] = struct{}{}
		}
	}
	df := make([]int, len(uniq))
	for _, e := range pool {
		for i, t := range uniq {
			if _, ok := termsOf[e][t]; ok {
				df[i]++
			}
		}
	}
	var cands []storekit.FullTextCandidate
	for _, e := range pool {
		m, w := 0, 0.0
		for i, t := range uniq {
			if _, ok := termsOf[e][t]; ok {
				m++
				w += storekit.IDF(len(pool), df[i])
			}
		}
		if m > 0 {
			cands = append(cands, storekit.FullTextCandidate{ID: e.rec.ID, Matched: m, Weight: storekit.RoundWeight(w), UpdatedAt: e.rec.UpdatedAt})
		}
	}
	k, b := storekit.FullTextRule(cands, q.FullTextLimit)
	res.FullText, res.FullTextBelow = storekit.FullTextHits(k), storekit.FullTextHits(b)
	if q.Vector != nil && storekit.VectorNorm(q.Vector) > 0 {
		var hits []storekit.Hit
		for _, e := range pool {
			emb := e.embeddings.get(q.Profile)
			if emb == nil || emb.hash != e.rec.ContentHash || len(s.vectorOf(e, emb)) != len(q.Vector) || storekit.VectorNorm(s.vectorOf(e, emb)) == 0 {
				continue
			}
			vec := s.vectorOf(e, emb)
			d := 0.0
			for i := range q.Vector {
				d += float64(q.Vector[i]) * float64(vec[i])
			}
			hits = append(hits, storekit.Hit{ID: e.rec.ID, Score: d / (storekit.VectorNorm(q.Vector) * storekit.VectorNorm(vec))})
		}
		sort.Slice(hits, func(i, j int) bool {
			if hits[i].Score != hits[j].Score {
				return hits[i].Score > hits[j].Score
			}
			if ui, uj := s.records[hits[i].ID].rec.UpdatedAt, s.records[hits[j].ID].rec.UpdatedAt; !ui.Equal(uj) {
				return ui.After(uj)
			}
			return hits[i].ID < hits[j].ID
		})
		if len(hits) > q.VectorLimit {
			hits = hits[:q.VectorLimit]
		}
		for i := range hits {
			hits[i].Rank = i + 1
		}
		res.Vector = hits
	}
	for _, hs := range [][]storekit.Hit{res.Exact, res.FullText, res.Vector} {
		for _, h := range hs {
			res.Records[h.ID] = s.records[h.ID].rec.Clone()
		}
	}
	return res
}

type allowAll struct{}

func (allowAll) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

// TestIndexMatchesFullScan runs a long random history (creates with and
// without windows, activations, corrections, forgets, erasures, embedding
// puts and deletions in several dimensions) and compares every recall with
// a full scan. The history is long enough to compact the index many times.
func TestIndexMatchesFullScan(t *testing.T) { indexMatchesFullScan(t) }

// TestParallelVectorScanMatchesFullScan runs the same check with every
// vector scan on its own goroutine (see parallelScanRows).
func TestParallelVectorScanMatchesFullScan(t *testing.T) {
	defer func(n int) { parallelScanRows = n }(parallelScanRows)
	parallelScanRows = 1
	indexMatchesFullScan(t)
}

// TestParallelVectorScanUnderWrites recalls with the vector scan on its
// own goroutine while other goroutines write to the same Scope; the race
// detector checks that the scan reads only what the read lock guards.
func TestParallelVectorScanUnderWrites(t *testing.T) {
	defer func(n int) { parallelScanRows = n }(parallelScanRows)
	parallelScanRows = 1
	ctx := context.Background()
	_, s := randomTestStore(t)
	sc := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p1"}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				rec, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: fmt.Sprintf("k%d-%d", w, i),
					Content: fmt.Sprintf("deploy note %d", i), Status: memorykit.StatusActive, Actor: actor})
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: sc, RecordID: rec.ID, Profile: "p",
					ContentHash: rec.ContentHash, Vector: []float32{1, float32(i), float32(w)}, WorkerID: "w"}); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if _, err := s.Forget(ctx, storekit.Transition{Scope: sc, ID: rec.ID, Actor: actor}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				res, err := s.Recall(ctx, storekit.RecallQuery{Scope: sc, Terms: []string{"deploy", "note"}, Vector: []float32{1, 2, 3},
					Profile: "p", ExactLimit: 3, FullTextLimit: 3, VectorLimit: 3})
				if err != nil {
					t.Error(err)
					return
				}
				for _, h := range res.Vector {
					if _, ok := res.Records[h.ID]; !ok {
						t.Errorf("vector hit %s without its record", h.ID)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// testConfig is a store configuration with permissive limits on a mock
// clock set to 2030-01-01 UTC, and that clock.
func testConfig(t *testing.T) (Config, *clock.Mock) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	guard, err := memorykit.NewWriteGuard(memorykit.Limits{Version: 1, MaxKeyBytes: 200, MaxContentBytes: 4000,
		MaxMetadataEntries: 4, MaxMetadataBytes: 200, MaxSources: 4, MaxSourceBytes: 200, MaxListSize: 500,
		MaxJobPayloadBytes: 1000, MaxReasonBytes: 1024}, allowAll{})
	if err != nil {
		t.Fatal(err)
	}
	return Config{Clock: clk, Guard: guard, Tombstones: testTombstones(t)}, clk
}

// randomTestStore returns an empty store with permissive limits on a mock
// clock, for the randomized tests.
func randomTestStore(t *testing.T) (*clock.Mock, *Store) {
	t.Helper()
	cfg, clk := testConfig(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return clk, s
}

// indexMatchesFullScan applies random writes and compares every few steps
// the indexed Recall with naiveRecall.
func indexMatchesFullScan(t *testing.T) {
	ctx := context.Background()
	clk, s := randomTestStore(t)
	words := []string{"the", "the", "the", "a", "deploy", "region", "backup", "db", "数据库", "备份", "東京", "rare1", "rare2", "rare3", "x"}
	text := func(r *rand.Rand, n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	r := rand.New(rand.NewPCG(3, 4))
	scopes := []memorykit.Scope{{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p1"},
		{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p2"}}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}
	var ids []string
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.IntN(5) - 2)
		}
		v[0] = float32(1 + r.IntN(3))
		return v
	}
	for step := 0; step < 4000; step++ {
		if r.IntN(4) == 0 {
			clk.Add(time.Duration(r.IntN(5)) * time.Second)
		}
		sc := scopes[r.IntN(len(scopes))]
		switch op := r.IntN(12); {
		case op < 5 || len(ids) == 0:
			in := memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: fmt.Sprintf("k%d", r.IntN(40)),
				Content: text(r, 1+r.IntN(8)), Status: memorykit.StatusActive, Actor: actor}
			if r.IntN(4) == 0 {
				in.Status = memorykit.StatusCandidate
			}
			switch r.IntN(8) {
			case 0:
				in.EffectiveUntil = clk.Now().Add(time.Duration(1+r.IntN(30)) * time.Second)
			case 1:
				in.EffectiveFrom = clk.Now().Add(time.Duration(1+r.IntN(30)) * time.Second)
			}
			rec, err := s.Create(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, rec.ID)
		default:
			id := ids[r.IntN(len(ids))]
			rec := s.records[id].rec
			tr := storekit.Transition{Scope: rec.Scope, ID: id, Actor: actor}
			switch {
			case op < 8 && rec.Status == memorykit.StatusActive:
				dims := []int{3, 4, 4, 4}[r.IntN(4)]
				if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: rec.Scope, RecordID: id, Profile: []string{"p", "q"}[r.IntN(2)],
					ContentHash: rec.ContentHash, Vector: vec(dims), WorkerID: "w"}); err != nil {
					t.Fatal(err)
				}
			case op == 8 && (rec.Status == memorykit.StatusActive || rec.Status == memorykit.StatusCandidate):
				if _, err := s.Correct(ctx, storekit.Correction{Transition: tr, Content: text(r, 1+r.IntN(8))}); err != nil {
					t.Fatal(err)
				}
			case op == 9 && rec.Status == memorykit.StatusActive:
				if _, err := s.Forget(ctx, tr); err != nil {
					t.Fatal(err)
				}
			case op == 9 && rec.Status == memorykit.StatusCandidate:
				if _, err := s.Activate(ctx, tr); err != nil {
					t.Fatal(err)
				}
			case op == 10 && (rec.Status == memorykit.StatusInactive || rec.Status == memorykit.StatusSuperseded):
				if _, err := s.Erase(ctx, tr); err != nil {
					t.Fatal(err)
				}
			case op == 11 && r.IntN(10) == 0:
				if _, err := s.DeleteEmbeddings(ctx, "p", rec.Scope); err != nil {
					t.Fatal(err)
				}
			}
		}
		if step%7 != 0 {
			continue
		}
		checkLookups(t, s)
		q := storekit.RecallQuery{Scope: sc, ExactKeys: []string{fmt.Sprintf("k%d", r.IntN(40)), fmt.Sprintf("k%d", r.IntN(40))},
			Terms: storekit.SearchTerms(text(r, 1+r.IntN(6)), 16), ExactLimit: 1 + r.IntN(5), FullTextLimit: 1 + r.IntN(5),
			VectorLimit: 1 + r.IntN(6)}
		if r.IntN(3) > 0 {
			q.Vector, q.Profile = vec([]int{3, 4, 4}[r.IntN(3)]), []string{"p", "q"}[r.IntN(2)]
		}
		got, err := s.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveRecall(s, q)
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("step %d: index and full scan differ (-scan +index):\n%s", step, d)
		}
	}
}

// checkLookups compares the store's lookup tables with a scan of every
// record: each Scope's table files each of its records under its key, the
// index's key table files exactly the live slots, ascending, and
// activeEntry finds each active record and nothing else.
func checkLookups(t *testing.T, s *Store) {
	t.Helper()
	perScope := map[memorykit.Scope]int{}
	for id, e := range s.records {
		r := &e.rec
		perScope[r.Scope]++
		found := false
		for x := range s.scopes[r.Scope].withKey(r.Key) {
			found = found || x == e
		}
		if !found {
			t.Fatalf("record %s is not filed under its key", id)
		}
		got := s.activeEntry(activeKey{scope: r.Scope, kind: r.Kind, key: r.Key})
		if r.Status == memorykit.StatusActive && got != e {
			t.Fatalf("activeEntry misses active record %s", id)
		}
		if r.Status != memorykit.StatusActive && got == e {
			t.Fatalf("activeEntry returns %s record %s", r.Status, id)
		}
	}
	for sc, n := range perScope {
		m := 0
		for range s.scopes[sc].all() {
			m++
		}
		if m != n {
			t.Fatalf("scope %v files %d records, holds %d", sc, m, n)
		}
	}
	for sc, x := range s.indexes {
		filed := 0
		for key := range x.keys.all() {
			last := int32(-1)
			for slot := range x.keys.slots(key) {
				if slot <= last || x.docs[slot] == nil || x.docs[slot].rec.Key != key {
					t.Fatalf("scope %v key %q files slot %d (after %d), not a live record of the key", sc, key, slot, last)
				}
				last = slot
				filed++
			}
		}
		if filed != x.active {
			t.Fatalf("scope %v files %d slots by key, %d live", sc, filed, x.active)
		}
	}
}

// TestVectorScreenIsExactOnNearTies builds vectors whose similarities to
// the query differ by less than float32 precision and checks that the
// float32 screen still hands every contender to the exact float64 ranking.
func TestVectorScreenIsExactOnNearTies(t *testing.T) {
	ctx := context.Background()
	_, s := randomTestStore(t)
	sc := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p"}
	r := rand.New(rand.NewPCG(9, 9))
	const dims = 384
	base := make([]float32, dims)
	for i := range base {
		base[i] = float32(r.NormFloat64())
	}
	for i := 0; i < 300; i++ {
		rec, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: fmt.Sprintf("k%d", i),
			Content: "c", Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}})
		if err != nil {
			t.Fatal(err)
		}
		v := append([]float32(nil), base...)
		// Nudge one component by a few float32 ulps: similarities end up
		// within ~1e-7 of each other, below the screen's resolution.
		j := r.IntN(dims)
		v[j] = math.Nextafter32(v[j], float32(math.Inf(1-2*r.IntN(2))))
		if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: sc, RecordID: rec.ID, Profile: "p",
			ContentHash: rec.ContentHash, Vector: v, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	q := storekit.RecallQuery{Scope: sc, Vector: base, Profile: "p", ExactLimit: 1, FullTextLimit: 1, VectorLimit: 7}
	got, err := s.Recall(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want := naiveRecall(s, q)
	if d := cmp.Diff(want.Vector, got.Vector); d != "" {
		t.Fatalf("vector hits differ (-scan +index):\n%s", d)
	}
}

func testTombstones(t testing.TB) *memorykit.TombstoneKeyer {
	t.Helper()
	k, err := memorykit.NewTombstoneKeyer([]byte("memorystore internal test tombstone secret"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}
