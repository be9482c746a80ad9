package sqlitestore_test

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestRecallFromFileMatchesMirror: a recall of a Scope the mirror does not
// hold is answered from the file's recall index, and that answer is the
// one the loaded mirror gives, on records whose effective windows start
// and end exactly at the clock's time, a microsecond either side of it,
// and far outside the nanosecond range; with exact keys shared by several
// records, equal full-text weights and equal vectors (ties broken by
// recency, then ID), records in other states, and a record of another
// Scope carrying the same words.
func TestRecallFromFileMatchesMirror(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	path := filepath.Join(t.TempDir(), "r.db")
	s := openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	sc := storetest.Scope(t, "tenant-r", "p")
	other := storetest.Scope(t, "tenant-r", "q")
	words := []string{"amber", "basil", "cedar", "dune", "ember", "fjord"}
	rng := rand.New(rand.NewSource(11))
	// The records are written an hour before the time the windows are
	// cut at.
	now := clk.Now().UTC().Truncate(time.Microsecond).Add(time.Hour)
	windows := []struct{ from, until time.Time }{
		{},
		{from: now},
		{from: now.Add(time.Microsecond)},
		{until: now},
		{until: now.Add(time.Microsecond)},
		{from: now.Add(-time.Minute), until: now.Add(time.Hour)},
		{from: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)},
		{until: time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC)},
		{from: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), until: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	var items []storekit.BatchItem
	for i := range 60 {
		n := 1 + rng.Intn(4)
		var w []string
		for range n {
			w = append(w, words[rng.Intn(len(words))])
		}
		win := windows[i%len(windows)]
		it := storekit.BatchItem{Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: fmt.Sprintf("key-%d", i%7),
			Content: strings.Join(w, " "), Status: memorykit.StatusActive, Actor: actor, EffectiveFrom: win.from, EffectiveUntil: win.until}}
		if i%3 != 0 && i%5 != 0 {
			// Few distinct vectors: equal similarities tie.
			it.Embedding = &storekit.BatchEmbedding{Profile: "p/v", Vector: []float32{float32(i % 4), 1, float32(i % 2)}}
		}
		if i%5 == 0 {
			it.Record.Status = memorykit.StatusCandidate
		}
		items = append(items, it)
		clk.Add(time.Duration(i%2) * time.Second)
	}
	if _, err := s.CreateBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: other, Kind: memorykit.KindFact, Key: "key-1", Content: "amber basil cedar",
		Status: memorykit.StatusActive, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	// Back to the time the windows were cut at.
	clk.Set(now)
	var queries []storekit.RecallQuery
	for i := range 40 {
		q := storekit.RecallQuery{Scope: sc, ExactLimit: 3, FullTextLimit: 1 + i%6, VectorLimit: 1 + i%5,
			ExactKeys: []string{fmt.Sprintf("key-%d", i%8), "key-1"}}
		for j := range 1 + i%4 {
			q.Terms = append(q.Terms, words[(i+j*j)%len(words)])
		}
		if i%2 == 0 {
			q.Profile, q.Vector = "p/v", []float32{float32(i % 3), 1, 0.5}
		}
		queries = append(queries, q)
	}
	for _, step := range []time.Duration{0, time.Microsecond, time.Hour} {
		clk.Set(now.Add(step))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
		sqlitestore.NoBackgroundLoads(s)
		hits, vector := fileMatchesMirror(t, s, sc, queries, nil)
		hits += vector
		if hits == 0 {
			t.Fatalf("at +%v no query found anything: the comparison proves nothing", step)
		}
	}
}

// TestRecallFromFileThenLoads: after a recall answered from the file, the
// Scope loads in the background; the next recall reads the mirror and
// answers the same.
func TestRecallFromFileThenLoads(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	path := filepath.Join(t.TempDir(), "l.db")
	s := openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	sc := storetest.Scope(t, "tenant-l", "p")
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: "k", Content: "the kettle is blue",
		Status: memorykit.StatusActive, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	q := storekit.RecallQuery{Scope: sc, Terms: []string{"kettle"}, ExactKeys: []string{"k"}, ExactLimit: 2, FullTextLimit: 2, VectorLimit: 2}
	a, err := s.Recall(ctx, q)
	if err != nil || len(a.FullText) != 1 || len(a.Exact) != 1 {
		t.Fatalf("first recall = %+v, %v", a, err)
	}
	sqlitestore.WaitForLoads(s)
	if n, _ := sqlitestore.LoadedScopes(s); n != 1 {
		t.Fatalf("%d Scopes loaded after the first recall; want 1", n)
	}
	b, err := s.Recall(ctx, q)
	if err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("second recall = %+v, %v; want %+v", b, err, a)
	}
	// Close waits for a load still running; none is left behind.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVectorRecallFromFileMatchesMirror: the vector part of a recall
// answered from the file ranks as the loaded mirror does on a Scope where
// most vectors tie with others (few distinct vectors, equal update times),
// some records are not active, some vectors are stale (the record's
// content changed after its vector was computed), some have another
// dimension, some records' windows have ended, and another Scope holds the
// same vectors; for every limit from 1 to past the number of records.
func TestVectorRecallFromFileMatchesMirror(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	path := filepath.Join(t.TempDir(), "v.db")
	s := openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	sc := storetest.Scope(t, "tenant-v", "p")
	other := storetest.Scope(t, "tenant-v", "q")
	base := [][]float32{{1, 0, 0}, {1, 1, 0}, {0, 1, 1}, {2, 1, 0.5}, {-1, 0.5, 0}, {0.3, 0.3, 0.3}}
	var items, others []storekit.BatchItem
	const n = 240
	for i := range n {
		v := base[(i*7)%len(base)]
		if i%9 == 4 {
			v = append([]float32{0.5}, v...)
		}
		rec := memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: fmt.Sprintf("v-%d", i),
			Content: fmt.Sprintf("note %d", i), Status: memorykit.StatusActive, Actor: actor}
		if i%7 == 0 {
			rec.Status = memorykit.StatusCandidate
		}
		if i%13 == 0 {
			rec.EffectiveUntil = clk.Now().Add(time.Minute)
		}
		it := storekit.BatchItem{Record: rec}
		if rec.Status == memorykit.StatusActive {
			it.Embedding = &storekit.BatchEmbedding{Profile: "p/v", Vector: v}
		}
		items = append(items, it)
		if i%3 == 0 && it.Embedding != nil {
			rec.Scope, rec.Key = other, fmt.Sprintf("o-%d", i)
			others = append(others, storekit.BatchItem{Record: rec, Embedding: &storekit.BatchEmbedding{Profile: "p/v", Vector: v}})
		}
	}
	var created []memorykit.Record
	for from := 0; from < n; from += 40 {
		got, err := s.CreateBatch(ctx, items[from:from+40])
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, got...)
		// Every other batch shares its update time with the one before.
		clk.Add(time.Duration(from/40%2) * time.Second)
	}
	if _, err := s.CreateBatch(ctx, others); err != nil {
		t.Fatal(err)
	}
	stale, forgotten := 0, 0
	for i, r := range created {
		// Records forgotten after their vector was stored.
		if i%11 == 2 && r.Status == memorykit.StatusActive {
			if _, err := s.Forget(ctx, storekit.Transition{Scope: sc, ID: r.ID, Actor: memorykit.Actor{Kind: memorykit.ActorReviewer, ID: "rev"}, Reason: "reviewed"}); err != nil {
				t.Fatal(err)
			}
			forgotten++
			continue
		}
		if i%5 == 1 && r.Status == memorykit.StatusActive {
			if _, err := s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: sc, ID: r.ID,
				Actor: memorykit.Actor{Kind: memorykit.ActorReviewer, ID: "rev"}, Reason: "reviewed"}, Content: fmt.Sprintf("corrected %d", i)}); err != nil {
				t.Fatal(err)
			}
			stale++
		}
	}
	if stale < 10 || forgotten < 10 {
		t.Fatalf("%d stale vectors, %d forgotten records; want at least 10 of each", stale, forgotten)
	}
	// Past the end of the windows that end.
	clk.Add(2 * time.Minute)
	var queries []storekit.RecallQuery
	for i := range 40 {
		q := base[i%len(base)]
		if i%4 == 3 {
			q = []float32{q[0] + 0.1, q[1], q[2] - 0.2}
		}
		queries = append(queries, storekit.RecallQuery{Scope: sc, Profile: "p/v", Vector: q, VectorLimit: 1 + (i*7)%n, ExactLimit: 1, FullTextLimit: 1})
	}
	queries = append(queries, storekit.RecallQuery{Scope: sc, Profile: "p/v", Vector: []float32{0.5, 1, 0, 0}, VectorLimit: 30, ExactLimit: 1, FullTextLimit: 1})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	defer s.Close()
	sqlitestore.NoBackgroundLoads(s)
	_, hits := fileMatchesMirror(t, s, sc, queries, nil)
	if hits < 100 {
		t.Fatalf("%d vector hits in all: the comparison proves little", hits)
	}
}

// TestRecallFromFileAfterPurge: a purge vacuums the file, and SQLite may
// renumber the rows of a table without an INTEGER PRIMARY KEY when it
// vacuums; the recall index and the vectors' record numbers (embeddings.rec)
// name records by row number. After the purge of a Scope written first (so
// the rows of the other one come after a gap), recalls of the other Scope
// answered from the file still match the mirror, words and vectors alike.
func TestRecallFromFileAfterPurge(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	path := filepath.Join(t.TempDir(), "p.db")
	s := openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	gone, kept := storetest.Scope(t, "tenant-g", "gone"), storetest.Scope(t, "tenant-g", "kept")
	words := []string{"amber", "basil", "cedar", "dune"}
	for _, sc := range []memorykit.Scope{gone, kept} {
		var items []storekit.BatchItem
		for i := range 50 {
			items = append(items, storekit.BatchItem{Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: fmt.Sprintf("k-%d", i),
				Content: words[i%4] + " " + words[(i/4)%4], Status: memorykit.StatusActive, Actor: actor},
				Embedding: &storekit.BatchEmbedding{Profile: "p/v", Vector: []float32{float32(i % 5), float32(i % 3), 1}}})
		}
		if _, err := s.CreateBatch(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Purge(ctx, gone, memorykit.Actor{Kind: memorykit.ActorOperator, ID: "op"}, "project_closed"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	defer s.Close()
	sqlitestore.NoBackgroundLoads(s)
	var queries []storekit.RecallQuery
	for i := range 8 {
		queries = append(queries, storekit.RecallQuery{Scope: kept, Terms: []string{words[i%4]}, ExactKeys: []string{fmt.Sprintf("k-%d", i)},
			ExactLimit: 2, FullTextLimit: 5, VectorLimit: 5, Profile: "p/v", Vector: []float32{float32(i), 1, 0.5}})
	}
	fileMatchesMirror(t, s, kept, queries, func(res storekit.RecallResult) {
		if len(res.Exact) != 1 || len(res.FullText) == 0 || len(res.Vector) != 5 {
			t.Fatalf("recall from the file after the purge: %d exact, %d full-text, %d vector hits; want 1, some, 5", len(res.Exact), len(res.FullText), len(res.Vector))
		}
	})
}

// fileMatchesMirror runs queries on s (opened with NoBackgroundLoads, sc
// not loaded) twice: answered from the file, then, once a List loaded sc,
// from the mirror; the answers must be equal. check, when set, looks at
// each answer from the file first. It returns how many hits of each part
// the answers held, vector hits apart.
func fileMatchesMirror(t *testing.T, s *sqlitestore.Store, sc memorykit.Scope, queries []storekit.RecallQuery, check func(storekit.RecallResult)) (hits, vector int) {
	t.Helper()
	ctx := context.Background()
	var fromFile []storekit.RecallResult
	for _, q := range queries {
		res, err := s.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(res)
		}
		fromFile = append(fromFile, res)
	}
	if n, _ := sqlitestore.LoadedScopes(s); n != 0 {
		t.Fatalf("%d Scopes loaded by recalls answered from the file; want none", n)
	}
	if _, err := s.List(ctx, storekit.ListFilter{Scope: sc, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	for i, q := range queries {
		res, err := s.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res, fromFile[i]) {
			t.Fatalf("query %d: from the file\n%+v\nfrom the mirror\n%+v", i, fromFile[i], res)
		}
		hits += len(res.Exact) + len(res.FullText) + len(res.FullTextBelow)
		vector += len(res.Vector)
	}
	return hits, vector
}
