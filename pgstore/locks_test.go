package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// holdRow locks one row of the store's schema FOR UPDATE in an open
// transaction of a session of its own, as a worker frozen inside
// CompleteJob would; the lock is released when the test ends.
func holdRow(t *testing.T, b *bundle, table, where string, args ...any) {
	t.Helper()
	conn := adminConn(t)
	tx, err := conn.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var n int
	err = tx.QueryRow(b.ctx, `SELECT count(*) FROM (SELECT 1 FROM `+quoteIdent(b.schema)+`.`+table+
		` WHERE `+where+` FOR UPDATE) x`, args...).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("lock %s row: %d, %v", table, n, err)
	}
}

// TestPostgresReapSkipsLockedRows: a job row and an embedding lease row
// held FOR UPDATE by another session do not stall reaping: every other
// expired lease is reaped at once (well inside the test's own bound), and
// the held ones are reaped by a later pass once the lock is gone.
func TestPostgresReapSkipsLockedRows(t *testing.T) {
	b := setup(t)
	var ids []string
	for i := range 3 {
		id := storekit.ExtractionJobID(b.scope, fmt.Sprintf("run/turn-%d", i))
		ids = append(ids, id)
		if _, err := b.s.EnqueueJob(b.ctx, storekit.NewJob{ID: id, Scope: b.scope, Payload: "p", MaxAttempts: 3, MaxReaps: 3}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := b.s.LeaseJobs(b.ctx, storekit.JobLease{WorkerID: "w1", TTL: time.Minute, Max: 3})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("lease jobs: %d, %v", len(jobs), err)
	}
	const profile = "p-test"
	for i := range 3 {
		b.create(t, memorykit.KindFact, fmt.Sprintf("k%d", i), "some content", memorykit.StatusActive)
	}
	tasks, err := b.s.LeaseEmbeddings(b.ctx, storekit.EmbeddingLease{Profile: profile, WorkerID: "w1", TTL: time.Minute, Max: 3})
	if err != nil || len(tasks) != 3 {
		t.Fatalf("lease embeddings: %d, %v", len(tasks), err)
	}
	b.clk.Add(2 * time.Minute)

	conn := adminConn(t)
	tx, err := conn.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	lockOne := func(sql string, args ...any) {
		t.Helper()
		var n int
		if err := tx.QueryRow(b.ctx, `SELECT count(*) FROM (`+sql+` FOR UPDATE) x`, args...).Scan(&n); err != nil || n != 1 {
			t.Fatalf("hold a row: %d, %v", n, err)
		}
	}
	lockOne(`SELECT 1 FROM `+quoteIdent(b.schema)+`.jobs WHERE id = $1`, ids[0])
	lockOne(`SELECT 1 FROM `+quoteIdent(b.schema)+`.embedding_leases WHERE record_id = $1 AND profile = $2`, tasks[0].RecordID, profile)

	// Before SKIP LOCKED both reaps waited for the held row until their
	// context ended: the bound makes that a failure in seconds.
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	n, err := b.s.ReapJobLeases(ctx)
	if err != nil || n != 2 {
		t.Fatalf("reap jobs with one row held: %d, %v (after %v); want 2", n, err, time.Since(start))
	}
	n, err = b.s.ReapEmbeddingLeases(ctx)
	if err != nil || n != 2 {
		t.Fatalf("reap embedding leases with one row held: %d, %v (after %v); want 2", n, err, time.Since(start))
	}
	held, err := b.s.GetJob(ctx, b.scope, ids[0])
	if err != nil || held.State != storekit.JobLeased {
		t.Fatalf("the held job: %+v, %v; want it still leased", held, err)
	}
	for _, id := range ids[1:] {
		if j, err := b.s.GetJob(ctx, b.scope, id); err != nil || j.State != storekit.JobQueued {
			t.Fatalf("reaped job %s: %+v, %v", id, j, err)
		}
	}

	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := b.s.ReapJobLeases(ctx); err != nil || n != 1 {
		t.Fatalf("reap jobs after the lock is gone: %d, %v; want 1", n, err)
	}
	if n, err := b.s.ReapEmbeddingLeases(ctx); err != nil || n != 1 {
		t.Fatalf("reap embedding leases after the lock is gone: %d, %v; want 1", n, err)
	}
}

// TestPostgresSessionTimeouts: Open's pool starts every session with the
// configured lock_timeout and idle_in_transaction_session_timeout (and
// the defaults when they are zero), and a statement that waits for a lock
// past lock_timeout comes back as a recoverable ErrUnavailable.
func TestPostgresSessionTimeouts(t *testing.T) {
	show := func(t *testing.T, s *Store, name string) string {
		t.Helper()
		var v string
		if err := s.conns.QueryRow(context.Background(), "SHOW "+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Run("defaults", func(t *testing.T) {
		b := setup(t)
		if got := show(t, b.s, "lock_timeout"); got != "10s" {
			t.Errorf("lock_timeout = %q, want 10s (DefaultLockTimeout)", got)
		}
		if got := show(t, b.s, "idle_in_transaction_session_timeout"); got != "1min" {
			t.Errorf("idle_in_transaction_session_timeout = %q, want 1min", got)
		}
	})
	t.Run("configured", func(t *testing.T) {
		clk := newClock()
		s, err := Open(context.Background(), testDSN(t), Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t),
			Schema: uniqueSchema(t), MaxConns: 4, LockTimeout: 150 * time.Millisecond, IdleInTransactionTimeout: 7 * time.Second})
		if err != nil {
			unusable(t, "open pgstore", err)
		}
		t.Cleanup(s.Close)
		if got := show(t, s, "lock_timeout"); got != "150ms" {
			t.Errorf("lock_timeout = %q, want 150ms", got)
		}
		if got := show(t, s, "idle_in_transaction_session_timeout"); got != "7s" {
			t.Errorf("idle_in_transaction_session_timeout = %q, want 7s", got)
		}
		scope, _ := memorykit.ProjectScope("tenant-a", "project-1")
		b := &bundle{s: s, clk: clk, schema: s.schema, ctx: context.Background(), scope: scope}
		id := storekit.ExtractionJobID(scope, "run/turn")
		if _, err := s.EnqueueJob(b.ctx, storekit.NewJob{ID: id, Scope: scope, Payload: "p", MaxAttempts: 3, MaxReaps: 3}); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.LeaseJobs(b.ctx, storekit.JobLease{WorkerID: "w1", TTL: time.Minute, Max: 1})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("lease: %d, %v", len(jobs), err)
		}
		holdRow(t, b, "jobs", "id = $1", id)
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		err = s.ReleaseJob(ctx, storekit.JobRelease{JobID: id, WorkerID: "w1", LeaseToken: jobs[0].LeaseToken})
		me := wantKind(t, err, memorykit.ErrUnavailable)
		if !memorykit.IsRecoverable(err) || me.Reason != "sqlstate_55p03" || ctx.Err() != nil {
			t.Fatalf("a lock wait past lock_timeout: %v (reason %q, ctx %v); want recoverable sqlstate_55p03", err, me.Reason, ctx.Err())
		}
	})
}
