package memorystore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestRecallStopsAtTheDeadline recalls over a large Scope with a context
// that ends at the scan's first check, for each scan (full text, the
// vector scan inline and on its own goroutine). The recall must come back
// with the recoverable context_done, and the scans must have stopped
// within a chunk of records of the check that saw the context end — the
// count of visited records comes from the scans' own hook, not the clock.
func TestRecallStopsAtTheDeadline(t *testing.T) {
	const n = 20 * scanChunk
	ctx := context.Background()
	_, s := randomTestStore(t)
	sc := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p1"}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}
	for i := range n {
		rec, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: fmt.Sprintf("k%d", i),
			Content: fmt.Sprintf("deploy note %d", i), Status: memorykit.StatusActive, Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: sc, RecordID: rec.ID, Profile: "p",
			ContentHash: rec.ContentHash, Vector: []float32{1, float32(i % 97), 2}, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	defer func(n int) { parallelScanRows = n }(parallelScanRows)
	for _, c := range []struct {
		name     string
		q        storekit.RecallQuery
		parallel int
	}{
		{"full_text", storekit.RecallQuery{Scope: sc, Terms: []string{"deploy", "note"}, ExactLimit: 3, FullTextLimit: 3, VectorLimit: 3}, n + 1},
		{"vector", storekit.RecallQuery{Scope: sc, Vector: []float32{1, 2, 3}, Profile: "p", ExactLimit: 3, FullTextLimit: 3, VectorLimit: 3}, n + 1},
		{"parallel_vector", storekit.RecallQuery{Scope: sc, Terms: []string{"absent"}, Vector: []float32{1, 2, 3}, Profile: "p", ExactLimit: 3, FullTextLimit: 3, VectorLimit: 3}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			parallelScanRows = c.parallel
			// The whole recall runs with an open context first.
			if res, err := s.Recall(ctx, c.q); err != nil || len(res.FullText)+len(res.Vector) == 0 {
				t.Fatalf("recall: %+v %v", res, err)
			}
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var (
				mu      sync.Mutex
				checks  int
				visited int
			)
			hook := func(v int) {
				mu.Lock()
				defer mu.Unlock()
				checks++
				visited = max(visited, v)
				cancel() // the deadline passes during the scan
			}
			scanHook.Store(&hook)
			defer scanHook.Store(nil)
			res, err := s.Recall(rctx, c.q)
			if !errors.Is(err, context.Canceled) || !errors.Is(err, memorykit.ErrUnavailable) || memorykit.ReasonCode(err) != "context_done" {
				t.Fatalf("recall past its deadline: %+v %v", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if checks != 1 || visited != scanChunk {
				t.Fatalf("the scan went on after its context ended: %d checks, %d records visited of %d", checks, visited, n)
			}
		})
	}
}
