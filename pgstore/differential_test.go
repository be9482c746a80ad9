package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
)

// diffVocabulary mixes common and rare words, CJK, and terms that need
// quoting in tsquery input.
var diffVocabulary = []string{
	"the", "the", "the", "deploy", "pipeline", "runs", "in", "eu", "west", "database", "backup",
	"caroline", "o'brien", `back\slash`, "数据库", "東京タワー", "项目记忆", "naïve", "ｆｕｌｌｗｉｄｔｈ",
	"rare1", "rare2", "rare3", "日本語", "the", "in", "in", "deploy",
	strings.Repeat("long", 100), // a 400-byte word: stored through its surrogate lexeme
}

func diffText(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = diffVocabulary[r.IntN(len(diffVocabulary))]
	}
	return strings.Join(w, " ")
}

// TestPostgresMatchesMemorystore runs one random history on pgstore and
// memorystore and requires identical recall results: hit lists, ranks,
// full-text weights, vector scores and the records themselves.
func TestPostgresMatchesMemorystore(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewMock()
	clk.Set(epoch)
	// The two stores share one clock, so timestamps agree.
	pg := openStore(t, uniqueSchema(t), clk)
	ms, err := memorystore.New(memorystore.Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	stores := []storekit.Store{pg, ms}
	scopes := make([]memorykit.Scope, 3)
	for i := range scopes {
		scopes[i], _ = memorykit.ProjectScope("tenant-d", fmt.Sprintf("p%d", i))
	}
	r := rand.New(rand.NewPCG(7, 11))
	const profile = "diff/v1"
	var ids [][]string
	both := func(f func(s storekit.Store) (memorykit.Record, error)) memorykit.Record {
		t.Helper()
		var recs [2]memorykit.Record
		for i, s := range stores {
			rec, err := f(s)
			if err != nil {
				t.Fatalf("store %d: %v", i, err)
			}
			recs[i] = rec
		}
		if d := cmp.Diff(recs[1], recs[0], cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("stores disagree (-memorystore +pgstore):\n%s", d)
		}
		return recs[0]
	}
	bothBatch := func(its []storekit.BatchItem) []memorykit.Record {
		t.Helper()
		var recs [2][]memorykit.Record
		for i, s := range stores {
			out, err := s.(storekit.BatchCreator).CreateBatch(ctx, its)
			if err != nil {
				t.Fatalf("store %d: batch: %v", i, err)
			}
			recs[i] = out
		}
		if d := cmp.Diff(recs[1], recs[0], cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("stores disagree on a batch (-memorystore +pgstore):\n%s", d)
		}
		return recs[0]
	}
	ids = make([][]string, len(scopes))
	for step := 0; step < 160; step++ {
		clk.Add(time.Duration(r.IntN(3)) * time.Second)
		si := r.IntN(len(scopes))
		scope := scopes[si]
		switch op := r.IntN(10); {
		case op < 6 || len(ids[si]) == 0:
			in := memorykit.NewRecord{
				ID:    fmt.Sprintf("rec-%03d", step),
				Scope: scope, Kind: memorykit.KindNote, Key: fmt.Sprintf("key %d", r.IntN(12)),
				Content: diffText(r, 3+r.IntN(8)), Status: memorykit.StatusActive, Actor: author,
			}
			if r.IntN(4) == 0 {
				in.Status = memorykit.StatusCandidate
			}
			switch r.IntN(8) {
			case 0:
				in.EffectiveUntil = clk.Now().Add(time.Duration(1+r.IntN(60)) * time.Second)
			case 1:
				in.EffectiveFrom = clk.Now().Add(time.Duration(1+r.IntN(30)) * time.Second)
			}
			var rec memorykit.Record
			if r.IntN(3) == 0 {
				// The same record through CreateBatch, with a neighbour
				// that may supersede it.
				next := in
				next.ID = in.ID + "-b"
				next.Content = diffText(r, 2+r.IntN(6))
				rec = bothBatch([]storekit.BatchItem{{Record: in}, {Record: next}})[0]
				ids[si] = append(ids[si], next.ID)
			} else {
				rec = both(func(s storekit.Store) (memorykit.Record, error) { return s.Create(ctx, in) })
			}
			ids[si] = append(ids[si], rec.ID)
			if rec.Status == memorykit.StatusActive && r.IntN(3) > 0 {
				vec := make([]float32, 4)
				for i := range vec {
					vec[i] = float32(r.IntN(7) - 3)
				}
				vec[0] = 1 // never all zeros
				for _, s := range stores {
					if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: rec.ID, Profile: profile,
						ContentHash: rec.ContentHash, Vector: vec, WorkerID: "w"}); err != nil {
						t.Fatal(err)
					}
				}
			}
		case op < 8:
			id := ids[si][r.IntN(len(ids[si]))]
			rec, _ := pg.Get(ctx, scope, id)
			if rec.Status != memorykit.StatusActive && rec.Status != memorykit.StatusCandidate {
				continue
			}
			text := diffText(r, 4)
			both(func(s storekit.Store) (memorykit.Record, error) {
				return s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: scope, ID: id, Actor: reviewer},
					Content: text})
			})
		default:
			id := ids[si][r.IntN(len(ids[si]))]
			rec, _ := pg.Get(ctx, scope, id)
			switch rec.Status {
			case memorykit.StatusActive:
				both(func(s storekit.Store) (memorykit.Record, error) {
					return s.Forget(ctx, storekit.Transition{Scope: scope, ID: id, Actor: reviewer})
				})
			case memorykit.StatusCandidate:
				both(func(s storekit.Store) (memorykit.Record, error) {
					return s.Activate(ctx, storekit.Transition{Scope: scope, ID: id, Actor: reviewer})
				})
			}
		}
	}

	queries := 0
	for qi := 0; qi < 60; qi++ {
		scope := scopes[qi%len(scopes)]
		text := diffText(r, 1+r.IntN(10))
		nTerms := 16
		if qi%5 == 0 {
			nTerms = 64
			text += " " + strings.Join(diffVocabulary, " ") // more than maxInlineTerms distinct terms
			for i := 0; i < 20; i++ {
				text += fmt.Sprintf(" filler%d", i)
			}
		}
		q := storekit.RecallQuery{
			Scope: scope, ExactKeys: []string{fmt.Sprintf("key %d", r.IntN(12)), fmt.Sprintf("key %d", r.IntN(12))},
			Terms: storekit.SearchTerms(text, nTerms), Vector: []float32{1, float32(r.IntN(3)), -1, 0.5}, Profile: profile,
			ExactLimit: 1 + r.IntN(4), FullTextLimit: 1 + r.IntN(6), VectorLimit: 1 + r.IntN(5),
		}
		if qi%7 == 0 {
			q.Terms = append(q.Terms, `it's`, `a\b`, "", "the")
		}
		var res [2]storekit.RecallResult
		for i, s := range stores {
			var err error
			if res[i], err = s.Recall(ctx, q); err != nil {
				t.Fatalf("store %d recall: %v", i, err)
			}
		}
		if d := cmp.Diff(res[1], res[0], cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("query %d (%d terms) differs (-memorystore +pgstore):\n%s", qi, len(q.Terms), d)
		}
		if len(res[0].FullText)+len(res[0].Vector) > 0 {
			queries++
		}
		clk.Add(time.Second)
	}
	if queries < 30 {
		t.Fatalf("only %d queries returned anything; the comparison proves little", queries)
	}
}

// TestPostgresFullTextPruningMatchesMemorystore loads one scope with
// records drawn from a skewed vocabulary (a few words in almost every
// record, many rare ones) and compares full-text recall with memorystore
// for queries mixing common and rare words at small limits, which is where
// pgstore's pruning levels stop early or fall through to reading every
// match. Some records are outside their effective window.
func TestPostgresFullTextPruningMatchesMemorystore(t *testing.T) {
	for _, small := range []int{0, smallScope} {
		t.Run(fmt.Sprintf("smallScope=%d", small), func(t *testing.T) {
			testPruningMatches(t, small)
		})
	}
}

func testPruningMatches(t *testing.T, small int) {
	ctx := context.Background()
	clk := newClock()
	old := smallScope
	smallScope = small // the store renders its statements with it when it opens
	pg := openStore(t, uniqueSchema(t), clk)
	smallScope = old
	ms, err := memorystore.New(memorystore.Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	stores := []storekit.BatchCreator{pg, ms}
	scope, _ := memorykit.ProjectScope("tenant-p", "pruning")
	other, _ := memorykit.ProjectScope("tenant-p", "other")
	common := []string{"the", "and", "is", "of", "we", "team", "数据"}
	r := rand.New(rand.NewPCG(21, 22))
	word := func() string {
		switch x := r.IntN(10); {
		case x < 5:
			return common[r.IntN(len(common))]
		case x < 8:
			return fmt.Sprintf("mid%d", r.IntN(30))
		default:
			return fmt.Sprintf("rare%d", r.IntN(400))
		}
	}
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = word()
		}
		return strings.Join(w, " ")
	}
	for b := 0; b < 8; b++ {
		var its []storekit.BatchItem
		for i := 0; i < 100; i++ {
			sc := scope
			if i%10 == 9 {
				sc = other
			}
			in := memorykit.NewRecord{ID: fmt.Sprintf("p-%d-%03d", b, i), Scope: sc, Kind: memorykit.KindNote,
				Key: fmt.Sprintf("key %d %d", b, i), Content: text(4 + r.IntN(12)), Status: memorykit.StatusActive, Actor: author}
			switch r.IntN(25) {
			case 0:
				in.EffectiveFrom = clk.Now().Add(time.Hour)
			case 1:
				in.EffectiveUntil = clk.Now().Add(time.Duration(1+r.IntN(20)) * time.Second)
			}
			its = append(its, storekit.BatchItem{Record: in})
		}
		for i, s := range stores {
			if _, err := s.CreateBatch(ctx, its); err != nil {
				t.Fatalf("store %d: %v", i, err)
			}
		}
		clk.Add(3 * time.Second)
	}
	for qi := 0; qi < 150; qi++ {
		n := 1 + r.IntN(10)
		q := storekit.RecallQuery{Scope: scope, Terms: storekit.SearchTerms(text(n), 32),
			ExactLimit: 1, FullTextLimit: 1 + r.IntN(8), VectorLimit: 1}
		var res [2]storekit.RecallResult
		for i, s := range stores {
			if res[i], err = s.(storekit.RecallStore).Recall(ctx, q); err != nil {
				t.Fatalf("store %d: %v", i, err)
			}
		}
		if d := cmp.Diff(res[1], res[0], cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("query %d %q differs (-memorystore +pgstore):\n%s", qi, q.Terms, d)
		}
	}
}
