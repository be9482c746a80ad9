package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestTxStoreLeavesNothing: a Store on one transaction (the conformance
// harness's New) writes through savepoints, survives a statement that
// fails inside one of them, and leaves its schema exactly as fresh as it
// found it once the transaction is rolled back, sequences and Scope
// versions included, so the next case can reuse the schema.
func TestTxStoreLeavesNothing(t *testing.T) {
	ctx := context.Background()
	ts := newTxSchemas(t, testDSN(t), false)
	scope, err := memorykit.ProjectScope("tenant-a", "project-1")
	if err != nil {
		t.Fatal(err)
	}
	var schema string
	t.Run("case", func(t *testing.T) {
		clk := newClock()
		s := ts.store(t, Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t)})
		schema = s.Schema()
		if st := s.PoolStats(); st != (PoolStats{}) {
			t.Fatalf("a Store on a transaction reports pool stats %+v", st)
		}
		in := memorykit.NewRecord{ID: "rec-1", Scope: scope, Kind: memorykit.KindFact, Key: "k", Content: "kept until rollback",
			Status: memorykit.StatusActive, Actor: author, Reason: "test"}
		if _, err := s.Create(ctx, in); err != nil {
			t.Fatal(err)
		}
		// A unique violation inside the Create's savepoint must not abort
		// the case's transaction.
		in.Key = "other"
		if _, err := s.Create(ctx, in); !errors.Is(err, memorykit.ErrAlreadyExists) {
			t.Fatalf("second create with the same ID: %v", err)
		}
		// Registers the profile (ANALYZE included) and takes a lease
		// token from the sequence.
		leases, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p", WorkerID: "w", TTL: time.Minute, Max: 5})
		if err != nil || len(leases) != 1 || leases[0].LeaseToken != 1 {
			t.Fatalf("lease: %+v, %v", leases, err)
		}
		if _, err := s.Get(ctx, scope, "rec-1"); err != nil {
			t.Fatalf("the transaction's store does not see its own write: %v", err)
		}
	})
	if t.Failed() {
		return
	}
	if got := ts.take(t); got != schema {
		t.Fatalf("the case's schema %s did not go back to the free list (took %s)", schema, got)
	}
	used := dumpOn(t, ts, schema)
	fresh := dumpOn(t, ts, ts.take(t)) // none free: a new one
	if used != fresh {
		t.Fatalf("the rolled-back schema differs from a fresh one:\n%s\nfresh:\n%s", used, fresh)
	}
	var versions int
	if err := ts.pool.QueryRow(ctx, `SELECT count(*) FROM `+quoteIdent(schema)+`.scope_versions`).Scan(&versions); err != nil || versions != 0 {
		t.Fatalf("scope_versions holds %d rows after the rollback (%v)", versions, err)
	}
}

// dumpOn dumps schema through a Store on the shared pool.
func dumpOn(t *testing.T, ts *txSchemas, schema string) string {
	t.Helper()
	s, err := New(context.Background(), ts.pool, Config{Clock: clock.NewMock(), Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
