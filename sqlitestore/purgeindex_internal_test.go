package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storetest"
)

// TestPurgeLeavesNoTermHashesOfTheScope: after a purge, the recall index
// lists no token of the purged Scope (the merge dropped the deleted rows'
// hashes), while another Scope's tokens stay.
func TestPurgeLeavesNoTermHashesOfTheScope(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t), Sync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gone, kept := storetest.Scope(t, "tenant-x", "gone"), storetest.Scope(t, "tenant-x", "kept")
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u1"}
	for _, sc := range []memorykit.Scope{gone, kept} {
		for _, text := range []string{"the lighthouse keeper", "a keeper of bees"} {
			if _, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: text, Content: text, Status: memorykit.StatusActive, Actor: actor}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.conn.ExecContext(ctx, `CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, recall_terms, 'row')`); err != nil {
		t.Fatal(err)
	}
	count := func(sc memorykit.Scope) int {
		t.Helper()
		var n int
		if err := s.conn.QueryRowContext(ctx, `SELECT count(*) FROM temp.vocab WHERE term LIKE ? || '%'`, scopeTag(sc)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count(gone) == 0 || count(kept) == 0 {
		t.Fatalf("before the purge: %d and %d tokens; want some of each Scope", count(gone), count(kept))
	}
	if _, err := s.Purge(ctx, gone, memorykit.Actor{Kind: memorykit.ActorOperator, ID: "op"}, "project_closed"); err != nil {
		t.Fatal(err)
	}
	if n := count(gone); n != 0 {
		t.Fatalf("after the purge the index lists %d tokens of the purged Scope; want none", n)
	}
	if count(kept) == 0 {
		t.Fatal("after the purge the other Scope's tokens are gone")
	}
}
