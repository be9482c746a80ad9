package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
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
	texts := map[memorykit.Scope][]string{gone: {"the lighthouse keeper", "a keeper of bees"}, kept: {"harbour pilot", "tide table"}}
	for _, sc := range []memorykit.Scope{gone, kept} {
		for _, text := range texts[sc] {
			if _, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: text, Content: text, Status: memorykit.StatusActive, Actor: actor}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The tail of each token's term hash: the part a segment stores even
	// when it shares the rest with the term before it.
	tails := func(sc memorykit.Scope) []string {
		var out []string
		for _, text := range texts[sc] {
			for _, tok := range strings.Fields(recordTokens(&memorykit.Record{Scope: sc, Key: text, Content: text})) {
				out = append(out, tok[len(tok)-8:])
			}
		}
		return out
	}
	found := func(sc memorykit.Scope) int {
		t.Helper()
		var data []byte
		err := s.each(ctx, `SELECT block FROM recall_terms_data`, func(rows *sql.Rows) error {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				return err
			}
			data = append(data, b...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tail := range tails(sc) {
			if bytes.Contains(data, []byte(tail)) {
				n++
			}
		}
		return n
	}
	if found(gone) == 0 || found(kept) == 0 {
		t.Fatalf("before the purge: %d and %d token tails found; want some of each Scope", found(gone), found(kept))
	}
	if _, err := s.Purge(ctx, gone, memorykit.Actor{Kind: memorykit.ActorOperator, ID: "op"}, "project_closed"); err != nil {
		t.Fatal(err)
	}
	if n := found(gone); n != 0 {
		t.Fatalf("after the purge the index's pages hold %d token tails of the purged Scope; want none", n)
	}
	if found(kept) == 0 {
		t.Fatal("after the purge the other Scope's tokens are gone")
	}
}
