package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// testEmbPendingInScope checks storekit.ScopedPendingCounter: the count is
// the Scope's pending records only (active, no current embedding of the
// profile, parked included), it falls as vectors are stored and rises
// again after a correction, and a bad Scope or profile is refused. A store
// without the interface skips the case.
func testEmbPendingInScope(t *testing.T, e *env) {
	c, ok := e.s.(storekit.ScopedPendingCounter)
	if !ok {
		t.Skip("store does not implement storekit.ScopedPendingCounter")
	}
	other := Scope(t, "tenant-a", "project-2")
	count := func(s memorykit.Scope) int {
		t.Helper()
		n, err := c.PendingEmbeddingsIn(e.ctx, s, embProfile)
		if err != nil {
			t.Fatalf("PendingEmbeddingsIn: %v", err)
		}
		return n
	}
	a := e.embRecord("mem-scoped-a")
	e.embRecord("mem-scoped-b")
	e.create(e.candidate(memorykit.KindFact, "cand", "a candidate is never pending"))
	e.create(newRec(other, memorykit.KindFact, "elsewhere", "another project's record", memorykit.StatusActive))
	if n, m := count(e.scope), count(other); n != 2 || m != 1 {
		t.Fatalf("pending = %d here, %d there; want 2 and 1", n, m)
	}
	for _, task := range e.lease("w1", time.Minute, 10) {
		if task.Scope != e.scope {
			continue
		}
		if err := e.s.PutEmbedding(e.ctx, put(task, "w1", []float32{1, 0, 0})); err != nil {
			t.Fatalf("PutEmbedding: %v", err)
		}
	}
	if n, m := count(e.scope), count(other); n != 0 || m != 1 {
		t.Fatalf("after embedding here: pending = %d here, %d there; want 0 and 1", n, m)
	}
	if _, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, a.ID, reviewer), Content: "corrected content needs a new vector"}); err != nil {
		t.Fatalf("Correct: %v", err)
	}
	if n := count(e.scope); n != 1 {
		t.Fatalf("after a correction: pending = %d, want 1", n)
	}
	if _, err := c.PendingEmbeddingsIn(e.ctx, memorykit.Scope{}, embProfile); !errors.Is(err, memorykit.ErrInvalidScope) {
		t.Fatalf("zero Scope: %v", err)
	}
	if _, err := c.PendingEmbeddingsIn(e.ctx, e.scope, "no spaces allowed"); !errors.Is(err, memorykit.ErrInvalidInput) {
		t.Fatalf("bad profile: %v", err)
	}
}

// testEmbLeaseInScope checks EmbeddingLease.Scope: a scoped lease takes
// only that Scope's pending records and leaves the others to an unscoped
// lease; an invalid Scope is refused.
func testEmbLeaseInScope(t *testing.T, e *env) {
	other := Scope(t, "tenant-a", "project-2")
	e.embRecord("mem-lease-a")
	theirs := newRec(other, memorykit.KindFact, "elsewhere", "another project's record", memorykit.StatusActive)
	theirs.ID = "mem-lease-0" // sorts first: an unscoped lease would take it
	e.create(theirs)
	e.embRecord("mem-lease-b")
	scoped, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: embProfile, WorkerID: "w1", TTL: time.Minute, Max: 10, Scope: &e.scope})
	if err != nil {
		t.Fatalf("scoped LeaseEmbeddings: %v", err)
	}
	wantIDs(t, "scoped lease", taskIDs(scoped), []string{"mem-lease-a", "mem-lease-b"})
	wantIDs(t, "unscoped lease", taskIDs(e.lease("w2", time.Minute, 10)), []string{"mem-lease-0"})
	bad := memorykit.Scope{TenantID: "tenant-a"}
	if _, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: embProfile, WorkerID: "w1", TTL: time.Minute, Max: 10, Scope: &bad}); !errors.Is(err, memorykit.ErrInvalidScope) {
		t.Fatalf("invalid Scope: %v", err)
	}
}
