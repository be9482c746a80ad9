package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// FuzzRecallFromFile: whatever terms and keys a query carries (quotes,
// FTS5 operators, NUL bytes, invalid UTF-8, another Scope's words), a
// recall answered from the file's recall index gives memorystore's answer
// on the same records, or the same kind of error.
func FuzzRecallFromFile(f *testing.F) {
	for _, seed := range [][3]string{
		{"amber", "basil", "key 1"},
		{`"amber" OR *`, "NEAR(basil cedar)", `k" OR "1`},
		{"amber\x00", "\xff\xfe", "KEY 1"},
		{"cedar", "", "key\u200b1"},
		{"dune*", "^ember", "key-2"},
		{"ａｍｂｅｒ", "Basil", " key 3 "},
		{"fjord", "fjord", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], uint8(1))
	}
	ctx := context.Background()
	clk := storetest.NewClock()
	mem, err := memorystore.New(memorystore.Config{Clock: clk, Guard: storetest.NewGuard(f), Tombstones: storetest.NewTombstones(f)})
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), "f.db")
	s := openBudget(f, path, clk, sqlitestore.SyncNormal, 0)
	sc := storetest.Scope(f, "tenant-f", "p")
	other := storetest.Scope(f, "tenant-f", "q")
	words := []string{"amber", "basil", "cedar", "dune", "ember", "fjord"}
	for i := range 24 {
		in := memorykit.NewRecord{ID: fmt.Sprintf("mem_fuzz_%02d", i), Scope: sc, Kind: memorykit.KindFact, Key: fmt.Sprintf("key %d", i%5),
			Content: words[i%6] + " " + words[(i*5)%6] + " " + words[(i*7+1)%6], Status: memorykit.StatusActive, Actor: actor}
		if i%4 == 0 {
			in.Scope = other
		}
		if i%7 == 0 {
			in.Status = memorykit.StatusCandidate
		}
		it := storekit.BatchItem{Record: in}
		if in.Status == memorykit.StatusActive {
			it.Embedding = &storekit.BatchEmbedding{Profile: "p/v", Vector: []float32{float32(i % 3), 1, float32(i % 2)}}
		}
		if _, err := mem.CreateBatch(ctx, []storekit.BatchItem{it}); err != nil {
			f.Fatal(err)
		}
		if _, err := s.CreateBatch(ctx, []storekit.BatchItem{it}); err != nil {
			f.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	s = openBudget(f, path, clk, sqlitestore.SyncNormal, 0)
	sqlitestore.NoBackgroundLoads(s)
	f.Fuzz(func(t *testing.T, a, b, key string, v uint8) {
		q := storekit.RecallQuery{Scope: sc, Terms: []string{a, b}, ExactKeys: []string{key}, ExactLimit: 3, FullTextLimit: 4, VectorLimit: 3}
		if v%2 == 1 {
			q.Profile, q.Vector = "p/v", []float32{float32(v % 5), 1, 0.25}
		}
		want, werr := mem.Recall(ctx, q)
		got, gerr := s.Recall(ctx, q)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: memorystore %v, sqlitestore %v", werr, gerr)
		}
		if werr != nil {
			var we, ge *memorykit.Error
			if !errors.As(werr, &we) || !errors.As(gerr, &ge) || we.Kind != ge.Kind || we.Reason != ge.Reason {
				t.Fatalf("errors differ: memorystore %v, sqlitestore %v", werr, gerr)
			}
			return
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("answers differ:\nmemorystore %+v\nsqlitestore %+v", want, got)
		}
		if n, _ := sqlitestore.LoadedScopes(s); n != 0 {
			t.Fatalf("%d Scopes loaded; every recall must be answered from the file", n)
		}
	})
}
