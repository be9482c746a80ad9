package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit/sqlitestore"
)

// sqliteOtherScopes is how many of the fixture's other scopes the SQLite
// recall fixture holds: recall reads one Scope's index, so the other
// scopes only cost load time, and the whole fixture (211k records with
// vectors) would take minutes to write with fsync on.
const sqliteOtherScopes = 10

// sqliteMaxTarget is the largest target scope the SQLite fixture holds.
const sqliteMaxTarget = 10000

var (
	sqliteOnce    sync.Once
	sqliteFix     *sqlitestore.Store
	sqliteFixDir  string
	sqliteCleanup = func() {}
)

// sqliteFixture builds the recall fixture in a sqlitestore file once per
// process: the target scopes up to sqliteMaxTarget records and
// sqliteOtherScopes other scopes. TestMain closes and removes it.
func sqliteFixture(tb testing.TB) *sqlitestore.Store {
	tb.Helper()
	sqliteOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memorykit-bench-sqlite-")
		if err != nil {
			tb.Fatal(err)
		}
		sqliteFixDir = dir
		s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "recall.db"), sqlitestore.Config{Clock: benchClock(),
			Guard: benchGuard(tb), Tombstones: benchTombstones(tb), Sync: sqlitestore.SyncNormal})
		if err != nil {
			tb.Fatal(err)
		}
		sqliteCleanup = func() {
			_ = s.Close()
			_ = os.RemoveAll(dir)
		}
		others := 0
		for _, p := range fixturePlan(tb) {
			if p.n == otherRecords && p.scope.SubjectID[:6] == "other-" {
				if others == sqliteOtherScopes {
					continue
				}
				others++
			} else if p.n > sqliteMaxTarget {
				continue
			}
			load(tb, s, p)
		}
		sqliteFix = s
	})
	if sqliteFix == nil {
		tb.Fatal("the sqlitestore fixture failed to build earlier in this run")
	}
	return sqliteFix
}

// openSQLiteStore opens an empty sqlitestore in the benchmark's temporary
// directory with durable commits (synchronous=FULL: the WAL is fsynced at
// every commit), the production default.
func openSQLiteStore(b *testing.B, clk clock.Clock) *sqlitestore.Store {
	b.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Config{Clock: clk,
		Guard: benchGuard(b), Tombstones: benchTombstones(b), Sync: sqlitestore.SyncFull})
	if err != nil {
		b.Fatal(fmt.Errorf("open sqlitestore: %w", err))
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
