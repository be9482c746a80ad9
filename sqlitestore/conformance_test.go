package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

func TestMain(m *testing.M) {
	if helperMain() {
		return
	}
	goleak.VerifyTestMain(m)
}

// harness gives every case its own file in its own temporary directory.
// Cases run with synchronous=NORMAL: fsync would dominate the suites' run
// time and proves nothing they check (the kill test runs with FULL).
func harness() storetest.Harness { return harnessBudget(0) }

// harnessBudget is harness with a memory budget.
func harnessBudget(budget int64) storetest.Harness {
	return storetest.Harness{
		New: func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) storekit.Store {
			path := filepath.Join(t.TempDir(), "memory.db")
			s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: clk, Guard: guard, Tombstones: storetest.NewTombstones(t),
				Sync: sqlitestore.SyncNormal, MemoryBudget: budget})
			if err != nil {
				t.Fatalf("sqlitestore.Open: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if budget > 0 {
				// Recall of an evicted Scope is answered from the
				// file's recall index every time.
				sqlitestore.NoBackgroundLoads(s)
			}
			// Every write must leave the file reloading to exactly the
			// mirror's state, or the suites would only test the mirror.
			sqlitestore.CheckEveryWrite(s, func(diff string) {
				if diff != "" {
					t.Errorf("the file does not reload to the store's state:\n%s", diff)
				}
			})
			return s
		},
		Dump: func(t *testing.T, s storekit.Store) string {
			t.Helper()
			d, err := s.(*sqlitestore.Store).Dump(context.Background())
			if err != nil {
				t.Fatalf("dump: %v", err)
			}
			return d
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.RunAll(t, harness())
}

// TestConformanceEvicting runs the suites with a budget of one byte: every
// call loads the Scopes it needs, and the next call that needs others
// evicts them, so every rule is checked against Scopes read back from the
// file, and every recall of a Scope not in use is answered by the file's
// recall index.
func TestConformanceEvicting(t *testing.T) {
	storetest.RunAll(t, harnessBudget(1))
}

// TestReasonsGoThroughContentPolicy mirrors memorystore's and pgstore's
// run of the reason-policy suite.
func TestReasonsGoThroughContentPolicy(t *testing.T) {
	storetest.RunReasonPolicyConformance(t, harness())
}
