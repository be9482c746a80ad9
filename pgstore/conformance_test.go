package pgstore

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storetest"
)

// TestPostgresConformance runs the shared conformance suites on pgstore
// (recall through the recall cache, the default): every case gets its own
// schema (and pool), dropped when it ends.
func TestPostgresConformance(t *testing.T) {
	storetest.RunAll(t, pgHarness(t))
}

// TestPostgresSQLRecallConformance runs the suites that recall on pgstore
// with the recall cache off, so the SQL path meets the same contract.
func TestPostgresSQLRecallConformance(t *testing.T) {
	h := pgHarness(t)
	h.New = pgNew(t, func(c *Config) { c.SQLRecall = true })
	t.Run("Recall", func(t *testing.T) { storetest.RunRecallConformance(t, h) })
	t.Run("FullText", func(t *testing.T) { storetest.RunFullTextRecallConformance(t, h) })
	t.Run("Erasure", func(t *testing.T) { storetest.RunErasureConformance(t, h) })
}

// TestPostgresReasonsGoThroughContentPolicy: every stored reason passes the
// Host's ContentValidator and Limits.MaxReasonBytes (issue 10, hole 8).
func TestPostgresReasonsGoThroughContentPolicy(t *testing.T) {
	storetest.RunReasonPolicyConformance(t, pgHarness(t))
}

// pgHarness gives every case its own schema (and pool).
func pgHarness(t *testing.T) storetest.Harness {
	return storetest.Harness{
		New: pgNew(t, nil),
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

// pgNew opens a Store on a schema of its own for every case, with the
// Config changed by edit when it is not nil.
func pgNew(t *testing.T, edit func(*Config)) func(*testing.T, clock.Clock, *memorykit.WriteGuard) memorykit.Store {
	dsn := testDSN(t)
	return func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) memorykit.Store {
		cfg := Config{Clock: clk, Guard: guard, Tombstones: storetest.NewTombstones(t), Schema: uniqueSchema(t), MaxConns: 6}
		if edit != nil {
			edit(&cfg)
		}
		s, err := Open(context.Background(), dsn, cfg)
		if err != nil {
			unusable(t, "open pgstore", err)
		}
		t.Cleanup(s.Close)
		return s
	}
}
