package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestScopesLoadWhenUsedAndLeavePastTheBudget: Open loads no Scope; a
// call loads the Scope it names; past the budget the least recently used
// Scopes leave the mirror, and a call about one of them loads it again
// from the file.
func TestScopesLoadWhenUsedAndLeavePastTheBudget(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	clk := storetest.NewClock()
	s := openBudget(t, path, clk, sqlitestore.SyncNormal, 1)
	scopes := []memorykit.Scope{storetest.Scope(t, "tenant-s", "a"), storetest.Scope(t, "tenant-s", "b"), storetest.Scope(t, "tenant-s", "c")}
	for _, sc := range scopes {
		if _, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: "k", Content: "the sky is teal",
			Status: memorykit.StatusActive, Actor: actor}); err != nil {
			t.Fatal(err)
		}
		if n, _ := sqlitestore.LoadedScopes(s); n != 0 {
			t.Fatalf("after a create %d Scopes are loaded; want none (a Scope only written is not loaded)", n)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	if n, b := sqlitestore.LoadedScopes(s); n != 0 || b != 0 {
		t.Fatalf("after Open %d Scopes (%d bytes) are loaded; want none", n, b)
	}
	if s.Records() != 3 {
		t.Fatalf("Records() = %d; want 3", s.Records())
	}
	res, err := s.Recall(ctx, storekit.RecallQuery{Scope: scopes[1], Terms: []string{"teal"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if err != nil || len(res.FullText) != 1 {
		t.Fatalf("recall = %+v, %v", res, err)
	}
	// The recall was answered from the file; the Scope loads after it.
	sqlitestore.WaitForLoads(s)
	if n, b := sqlitestore.LoadedScopes(s); n != 1 || b <= 0 {
		t.Fatalf("after a recall %d Scopes (%d bytes) are loaded; want 1", n, b)
	}
	c, err := s.CountJobs(ctx)
	if err != nil || c != (storekit.JobCounts{}) {
		t.Fatalf("count jobs = %+v, %v", c, err)
	}
	if n, err := s.PendingEmbeddings(ctx, "p/one"); err != nil || n != 3 {
		t.Fatalf("pending = %d, %v; want 3 from the file", n, err)
	}
	if n, _ := sqlitestore.LoadedScopes(s); n != 1 {
		t.Fatalf("counting loaded Scopes: %d loaded; want 1", n)
	}
}
