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
		var fromFile []storekit.RecallResult
		for _, q := range queries {
			res, err := s.Recall(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			fromFile = append(fromFile, res)
		}
		if n, _ := sqlitestore.LoadedScopes(s); n != 0 {
			t.Fatalf("%d Scopes loaded by recalls answered from the file; want none", n)
		}
		if _, err := s.List(ctx, storekit.ListFilter{Scope: sc, Limit: 1}); err != nil {
			t.Fatal(err)
		}
		hits := 0
		for i, q := range queries {
			res, err := s.Recall(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res, fromFile[i]) {
				t.Fatalf("at +%v, query %d: from the file\n%+v\nfrom the mirror\n%+v", step, i, fromFile[i], res)
			}
			hits += len(res.Exact) + len(res.FullText) + len(res.FullTextBelow) + len(res.Vector)
		}
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
