package pgstore

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storetest"
)

// TestPostgresConformance runs the shared conformance suites on pgstore:
// every case gets its own schema (and pool), dropped when it ends.
func TestPostgresConformance(t *testing.T) {
	storetest.RunAll(t, pgHarness(t))
}

// TestPostgresReasonsGoThroughContentPolicy: every stored reason passes the
// Host's ContentValidator and Limits.MaxReasonBytes (issue 10, hole 8).
func TestPostgresReasonsGoThroughContentPolicy(t *testing.T) {
	storetest.RunReasonPolicyConformance(t, pgHarness(t))
}

// pgHarness gives every case its own schema (and pool).
func pgHarness(t *testing.T) storetest.Harness {
	dsn := testDSN(t)
	return storetest.Harness{
		New: func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) memorykit.Store {
			schema := uniqueSchema(t)
			s, err := Open(context.Background(), dsn, Config{Clock: clk, Guard: guard, Tombstones: storetest.NewTombstones(t), Schema: schema, MaxConns: 6})
			if err != nil {
				unusable(t, "open pgstore", err)
			}
			t.Cleanup(s.Close)
			return s
		},
		Dump: func(t *testing.T, s memorykit.Store) string {
			t.Helper()
			d, err := s.(*Store).Dump(context.Background())
			if err != nil {
				t.Fatalf("dump: %v", err)
			}
			return d
		},
	}
}
