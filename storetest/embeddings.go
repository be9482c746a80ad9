package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// embProfile is the embedding profile the embedding suite leases for.
const embProfile = "test/emb-v1"

// RunEmbeddingConformance checks the embedding work queue: which records
// are pending, leasing with worker IDs and TTLs on the store's clock,
// reaping, the content-hash guard on PutEmbedding, retry and park on
// release, attempt counting and rebuilds with DeleteEmbeddings and
// DeleteAllEmbeddings. A store
// that implements storekit.EmbeddingBatchPutter must give each put of a
// PutEmbeddings call the outcome PutEmbedding would, and leave the store
// exactly as the same PutEmbedding calls in order would.
func RunEmbeddingConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"PendingAndLease", testEmbPendingAndLease},
		{"LeaseMax", testEmbLeaseMax},
		{"LeasedUntilReaped", testEmbReap},
		{"PutEmbedding", testEmbPut},
		{"PutIsIdempotent", testEmbPutIdempotent},
		{"StaleAfterCorrect", testEmbStale},
		{"PutNeedsActiveRecord", testEmbPutNeedsActive},
		{"ReleaseWithRetryAt", testEmbRetry},
		{"ReleaseByOtherWorker", testEmbReleaseOther},
		{"Park", testEmbPark},
		{"AttemptCounting", testEmbAttempts},
		{"NonActiveNeverPending", testEmbNonActive},
		{"DeleteEmbeddingsRebuild", testEmbDelete},
		{"DeleteAllEmbeddingsRebuild", testEmbDeleteAll},
		{"PutEmbeddingsAsSinglePuts", testEmbPutBatch},
		{"PutEmbeddingsWholeCallRefused", testEmbPutBatchRefused},
		{"StaleLeaseTokenRefused", testEmbStaleToken},
		{"PendingInScope", testEmbPendingInScope},
		{"LeaseInScope", testEmbLeaseInScope},
	})
}

// embRecord creates an active record with a fixed ID.
func (e *env) embRecord(id string) memorykit.Record {
	e.t.Helper()
	in := e.active(memorykit.KindFact, "embed "+id, "content to embed for "+id)
	in.ID = id
	return e.create(in)
}

func (e *env) lease(worker string, ttl time.Duration, max int) []storekit.EmbeddingTask {
	e.t.Helper()
	tasks, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: embProfile, WorkerID: worker, TTL: ttl, Max: max})
	if err != nil {
		e.t.Fatalf("LeaseEmbeddings(%s): %v", worker, err)
	}
	return tasks
}

func (e *env) reapEmb() int {
	e.t.Helper()
	n, err := e.s.ReapEmbeddingLeases(e.ctx)
	if err != nil {
		e.t.Fatalf("ReapEmbeddingLeases: %v", err)
	}
	return n
}

func put(task storekit.EmbeddingTask, worker string, v []float32) storekit.EmbeddingPut {
	return storekit.EmbeddingPut{Scope: task.Scope, RecordID: task.RecordID, Profile: task.Profile,
		ContentHash: task.ContentHash, Vector: v, WorkerID: worker, LeaseToken: task.LeaseToken}
}

// takeTokens checks that every leased task carries a positive fencing
// token and copies the tokens into want, whose other fields are compared.
func takeTokens(t testing.TB, want, got []storekit.EmbeddingTask) {
	t.Helper()
	for i := range got {
		if got[i].LeaseToken <= 0 {
			t.Fatalf("task %s has lease token %d, want a positive one", got[i].RecordID, got[i].LeaseToken)
		}
		if i < len(want) {
			want[i].LeaseToken = got[i].LeaseToken
		}
	}
}

func release(task storekit.EmbeddingTask, worker string) storekit.EmbeddingRelease {
	return storekit.EmbeddingRelease{Scope: task.Scope, RecordID: task.RecordID, Profile: task.Profile,
		ContentHash: task.ContentHash, WorkerID: worker, LeaseToken: task.LeaseToken, Reason: "provider_timeout"}
}

func (e *env) wantPending(t testing.TB, want int) {
	t.Helper()
	if n := e.pending(embProfile); n != want {
		t.Fatalf("PendingEmbeddings = %d, want %d", n, want)
	}
}

func testEmbPendingAndLease(t *testing.T, e *env) {
	b := e.embRecord("mem-emb-b")
	a := e.embRecord("mem-emb-a")
	e.create(e.candidate(memorykit.KindFact, "cand", "a candidate"))
	f := e.create(e.active(memorykit.KindFact, "forgotten", "forgotten text"))
	e.must(actForget, tr(e.scope, f.ID, reviewer))
	e.wantPending(t, 2)

	tasks := e.lease("embedder-1", time.Minute, 10)
	want := []storekit.EmbeddingTask{
		{RecordID: a.ID, Scope: e.scope, Profile: embProfile, ContentHash: a.ContentHash, Text: a.EmbeddingText(), Attempt: 1},
		{RecordID: b.ID, Scope: e.scope, Profile: embProfile, ContentHash: b.ContentHash, Text: b.EmbeddingText(), Attempt: 1},
	}
	takeTokens(t, want, tasks)
	if d := cmp.Diff(want, tasks); d != "" {
		t.Fatalf("leased tasks (-want +got):\n%s", d)
	}
	if a.EmbeddingText() != storekit.EmbeddingText("embed mem-emb-a", "content to embed for mem-emb-a") {
		t.Fatal("unexpected EmbeddingText")
	}
	if more := e.lease("embedder-2", time.Minute, 10); len(more) != 0 {
		t.Fatalf("leased records were leased again: %v", taskIDs(more))
	}
	e.wantPending(t, 2) // leased records are still pending
	// Another profile has its own queue.
	other, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: "test/emb-v2", WorkerID: "embedder-2", TTL: time.Minute, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "other profile", taskIDs(other), []string{a.ID, b.ID})
}

func testEmbLeaseMax(t *testing.T, e *env) {
	for _, id := range []string{"mem-emb-3", "mem-emb-1", "mem-emb-2"} {
		e.embRecord(id)
	}
	wantIDs(t, "first lease", taskIDs(e.lease("embedder-1", time.Minute, 2)), []string{"mem-emb-1", "mem-emb-2"})
	wantIDs(t, "second lease", taskIDs(e.lease("embedder-2", time.Minute, 2)), []string{"mem-emb-3"})
	wantIDs(t, "third lease", taskIDs(e.lease("embedder-3", time.Minute, 2)), nil)
}

func testEmbReap(t *testing.T, e *env) {
	e.embRecord("mem-emb-a")
	e.embRecord("mem-emb-b")
	e.lease("embedder-1", time.Minute, 10)
	e.advance(59 * time.Second)
	if n := e.reapEmb(); n != 0 {
		t.Fatalf("reaped %d leases before expiry", n)
	}
	if more := e.lease("embedder-2", time.Minute, 10); len(more) != 0 {
		t.Fatalf("leased before expiry: %v", taskIDs(more))
	}
	e.advance(2 * time.Second)
	// Expired but not reaped: still not leasable.
	if more := e.lease("embedder-2", time.Minute, 10); len(more) != 0 {
		t.Fatalf("an expired, unreaped lease was leased again: %v", taskIDs(more))
	}
	if n := e.reapEmb(); n != 2 {
		t.Fatalf("reaped %d leases after expiry, want 2", n)
	}
	if n := e.reapEmb(); n != 0 {
		t.Fatalf("second reap returned %d", n)
	}
	tasks := e.lease("embedder-2", time.Minute, 10)
	wantIDs(t, "after reap", taskIDs(tasks), []string{"mem-emb-a", "mem-emb-b"})
	for _, task := range tasks {
		if task.Attempt != 2 {
			t.Fatalf("task %s attempt %d, want 2", task.RecordID, task.Attempt)
		}
	}
	// The reaped worker lost its lease.
	err := e.s.ReleaseEmbedding(e.ctx, release(tasks[0], "embedder-1"))
	wantErr(t, err, memorykit.ErrLeaseLost)
}

func testEmbPut(t *testing.T, e *env) {
	a := e.embRecord("mem-emb-a")
	e.embRecord("mem-emb-b")
	tasks := e.lease("embedder-1", time.Minute, 10)
	if err := e.s.PutEmbedding(e.ctx, put(tasks[0], "embedder-1", []float32{1, 0})); err != nil {
		t.Fatal(err)
	}
	e.wantPending(t, 1)
	// The put cleared a's lease, but a is no longer pending: not leased.
	e.advance(2 * time.Minute)
	e.reapEmb()
	wantIDs(t, "after put", taskIDs(e.lease("embedder-2", time.Minute, 10)), []string{"mem-emb-b"})
	q := query(e.scope)
	q.Vector, q.Profile = []float32{1, 0}, embProfile
	wantIDs(t, "vector recall", ids(e.recall(q).Vector), []string{a.ID})
}

func testEmbPutIdempotent(t *testing.T, e *env) {
	e.embRecord("mem-emb-a")
	tasks := e.lease("embedder-1", time.Minute, 10)
	p := put(tasks[0], "embedder-1", []float32{0.25, 0.5, 1})
	if err := e.s.PutEmbedding(e.ctx, p); err != nil {
		t.Fatal(err)
	}
	before := e.dump()
	e.advance(time.Minute)
	if err := e.s.PutEmbedding(e.ctx, p); err != nil {
		t.Fatalf("second identical put: %v", err)
	}
	p.WorkerID = "embedder-2"
	if err := e.s.PutEmbedding(e.ctx, p); err != nil {
		t.Fatalf("identical put by another worker: %v", err)
	}
	e.unchanged(t, before, "an identical PutEmbedding")
	e.wantPending(t, 0)
}

func testEmbStale(t *testing.T, e *env) {
	a := e.embRecord("mem-emb-a")
	e.embed(a, embProfile, []float32{1, 0})
	e.wantPending(t, 0)
	c, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, a.ID, reviewer), Content: "new content"})
	if err != nil {
		t.Fatal(err)
	}
	e.wantPending(t, 1) // the old vector is stale
	tasks := e.lease("embedder-1", time.Minute, 10)
	want := []storekit.EmbeddingTask{{RecordID: a.ID, Scope: e.scope, Profile: embProfile, ContentHash: c.ContentHash, Text: c.EmbeddingText(), Attempt: 1}}
	takeTokens(t, want, tasks)
	if d := cmp.Diff(want, tasks); d != "" {
		t.Fatalf("lease after correct (-want +got):\n%s", d)
	}
	if _, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, a.ID, reviewer), Content: "newer content"}); err != nil {
		t.Fatal(err)
	}
	e.refused(t, "PutEmbedding of a stale hash", memorykit.ErrStale, func() error {
		return e.s.PutEmbedding(e.ctx, put(tasks[0], "embedder-1", []float32{0, 1}))
	})
	stale := tasks[0]
	stale.ContentHash = a.ContentHash
	e.refused(t, "PutEmbedding of the original hash", memorykit.ErrStale, func() error {
		return e.s.PutEmbedding(e.ctx, put(stale, "embedder-1", []float32{0, 1}))
	})
	e.refused(t, "ReleaseEmbedding of a stale hash", memorykit.ErrStale, func() error {
		return e.s.ReleaseEmbedding(e.ctx, release(tasks[0], "embedder-1"))
	})
	e.wantPending(t, 1)
	next := e.lease("embedder-2", time.Minute, 10)
	if len(next) != 1 || next[0].Attempt != 1 || next[0].ContentHash != storekit.ContentHash("newer content") {
		t.Fatalf("lease after second correct: %+v", next)
	}
	if err := e.s.PutEmbedding(e.ctx, put(next[0], "embedder-2", []float32{0, 1})); err != nil {
		t.Fatal(err)
	}
	e.wantPending(t, 0)
}

func testEmbPutNeedsActive(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindFact, "cand", "candidate text"))
	f := e.create(e.active(memorykit.KindFact, "forgotten", "forgotten text"))
	e.must(actForget, tr(e.scope, f.ID, reviewer))
	for _, r := range []memorykit.Record{c, f} {
		task := storekit.EmbeddingTask{RecordID: r.ID, Scope: e.scope, Profile: embProfile, ContentHash: r.ContentHash}
		e.refused(t, "PutEmbedding of a "+string(r.Status)+" record", memorykit.ErrStale, func() error {
			return e.s.PutEmbedding(e.ctx, put(task, "embedder-1", []float32{1}))
		})
	}
	task := storekit.EmbeddingTask{RecordID: "mem-unknown", Scope: e.scope, Profile: embProfile, ContentHash: c.ContentHash}
	e.refused(t, "PutEmbedding of an unknown record", memorykit.ErrNotFound, func() error {
		return e.s.PutEmbedding(e.ctx, put(task, "embedder-1", []float32{1}))
	})
}

func testEmbRetry(t *testing.T, e *env) {
	e.embRecord("mem-emb-a")
	tasks := e.lease("embedder-1", time.Minute, 10)
	r := release(tasks[0], "embedder-1")
	r.RetryAt = e.clk.Now().Add(5 * time.Minute)
	if err := e.s.ReleaseEmbedding(e.ctx, r); err != nil {
		t.Fatal(err)
	}
	e.wantPending(t, 1)
	if got := e.lease("embedder-2", time.Minute, 10); len(got) != 0 {
		t.Fatalf("leased before RetryAt: %v", taskIDs(got))
	}
	e.advance(4 * time.Minute)
	if got := e.lease("embedder-2", time.Minute, 10); len(got) != 0 {
		t.Fatalf("leased before RetryAt: %v", taskIDs(got))
	}
	e.advance(90 * time.Second)
	got := e.lease("embedder-2", time.Minute, 10)
	if len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("lease after RetryAt: %+v", got)
	}
	// A release with no RetryAt makes the record leasable at once.
	if err := e.s.ReleaseEmbedding(e.ctx, release(got[0], "embedder-2")); err != nil {
		t.Fatal(err)
	}
	if again := e.lease("embedder-3", time.Minute, 10); len(again) != 1 || again[0].Attempt != 3 {
		t.Fatalf("lease after an immediate release: %+v", again)
	}
}

func testEmbReleaseOther(t *testing.T, e *env) {
	e.embRecord("mem-emb-a")
	tasks := e.lease("embedder-1", time.Minute, 10)
	e.refused(t, "ReleaseEmbedding by another worker", memorykit.ErrLeaseLost, func() error {
		return e.s.ReleaseEmbedding(e.ctx, release(tasks[0], "embedder-2"))
	})
	if err := e.s.ReleaseEmbedding(e.ctx, release(tasks[0], "embedder-1")); err != nil {
		t.Fatal(err)
	}
	e.refused(t, "a second ReleaseEmbedding", memorykit.ErrLeaseLost, func() error {
		return e.s.ReleaseEmbedding(e.ctx, release(tasks[0], "embedder-1"))
	})
}

func testEmbPark(t *testing.T, e *env) {
	e.embRecord("mem-emb-a")
	e.embRecord("mem-emb-b")
	tasks := e.lease("embedder-1", time.Minute, 1)
	r := release(tasks[0], "embedder-1")
	r.Park, r.Reason = true, "input_rejected"
	if err := e.s.ReleaseEmbedding(e.ctx, r); err != nil {
		t.Fatal(err)
	}
	e.wantPending(t, 2)
	wantIDs(t, "lease with one parked", taskIDs(e.lease("embedder-2", time.Minute, 10)), []string{"mem-emb-b"})
	e.advance(48 * time.Hour)
	e.reapEmb()
	wantIDs(t, "lease two days later", taskIDs(e.lease("embedder-3", time.Minute, 10)), []string{"mem-emb-b"})
	e.wantPending(t, 2)
	if n, err := e.s.DeleteEmbeddings(e.ctx, embProfile, e.scope); err != nil || n != 0 {
		t.Fatalf("DeleteEmbeddings = %d, %v; want 0 embeddings deleted", n, err)
	}
	got := e.lease("embedder-4", time.Minute, 10)
	wantIDs(t, "lease after reset", taskIDs(got), []string{"mem-emb-a", "mem-emb-b"})
}

func testEmbAttempts(t *testing.T, e *env) {
	a := e.embRecord("mem-emb-a")
	wantAttempt := func(want int) storekit.EmbeddingTask {
		t.Helper()
		got := e.lease("embedder-1", time.Minute, 10)
		if len(got) != 1 || got[0].Attempt != want {
			t.Fatalf("lease: %+v; want one task at attempt %d", got, want)
		}
		return got[0]
	}
	wantAttempt(1)
	e.advance(61 * time.Second)
	e.reapEmb()
	task := wantAttempt(2)
	if err := e.s.ReleaseEmbedding(e.ctx, release(task, "embedder-1")); err != nil {
		t.Fatal(err)
	}
	task = wantAttempt(3)
	if err := e.s.ReleaseEmbedding(e.ctx, release(task, "embedder-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, a.ID, reviewer), Content: "changed"}); err != nil {
		t.Fatal(err)
	}
	wantAttempt(1)
}

func testEmbNonActive(t *testing.T, e *env) {
	cand := e.create(e.candidate(memorykit.KindFact, "cand", "candidate"))
	rej := e.create(e.candidate(memorykit.KindFact, "rej", "rejected"))
	e.must(actReject, tr(e.scope, rej.ID, reviewer))
	sup := e.create(e.active(memorykit.KindFact, "sup", "superseded"))
	cur := e.create(e.active(memorykit.KindFact, "sup", "current"))
	inact := e.create(e.active(memorykit.KindFact, "inact", "inactive"))
	e.must(actForget, tr(e.scope, inact.ID, reviewer))
	gone := e.create(e.active(memorykit.KindFact, "gone", "erased"))
	e.must(actForget, tr(e.scope, gone.ID, reviewer))
	e.must(actErase, tr(e.scope, gone.ID, operator))
	_ = sup
	e.wantPending(t, 1)
	wantIDs(t, "leasable", taskIDs(e.lease("embedder-1", time.Hour, 10)), []string{cur.ID})
	e.must(actActivate, tr(e.scope, cand.ID, reviewer))
	e.wantPending(t, 2)
	wantIDs(t, "after activation", taskIDs(e.lease("embedder-1", time.Hour, 10)), []string{cand.ID})
	// Forgetting a leased record takes it out of the pending count.
	e.must(actForget, tr(e.scope, cur.ID, reviewer))
	e.wantPending(t, 1)
}

// embDeleteP2 is the second profile of the DeleteEmbeddings cases.
const embDeleteP2 = "test/emb-v2"

// embedForDelete stores a in the env's Scope and b in s2, embeds both on
// embProfile and a also on embDeleteP2, and checks nothing is pending.
func (e *env) embedForDelete(t *testing.T, s2 memorykit.Scope) (a, b memorykit.Record) {
	t.Helper()
	a = e.embRecord("mem-emb-a")
	b = e.create(newRec(s2, memorykit.KindFact, "embed b", "content b", memorykit.StatusActive))
	e.embed(a, embProfile, []float32{1, 0})
	e.embed(b, embProfile, []float32{1, 0})
	e.embed(a, embDeleteP2, []float32{0, 1})
	e.wantPending(t, 0)
	return a, b
}

func testEmbDelete(t *testing.T, e *env) {
	const p2 = embDeleteP2
	s2 := Scope(t, "tenant-a", "project-2")
	a, b := e.embedForDelete(t, s2)

	if n, err := e.s.DeleteEmbeddings(e.ctx, embProfile, e.scope); err != nil || n != 1 {
		t.Fatalf("DeleteEmbeddings(scope) = %d, %v; want 1", n, err)
	}
	e.wantPending(t, 1)
	if n := e.pending(p2); n != 1 { // b never had a p2 vector
		t.Fatalf("pending for the other profile = %d, want 1", n)
	}
	q := query(s2)
	q.Vector, q.Profile = []float32{1, 0}, embProfile
	wantIDs(t, "other scope keeps its vector", ids(e.recall(q).Vector), []string{b.ID})
	q = query(e.scope)
	q.Vector, q.Profile = []float32{0, 1}, p2
	wantIDs(t, "other profile keeps its vector", ids(e.recall(q).Vector), []string{a.ID})
	wantIDs(t, "rebuild lease", taskIDs(e.lease("embedder-1", time.Minute, 10)), []string{a.ID})
	if n, err := e.s.DeleteEmbeddings(e.ctx, embProfile, e.scope); err != nil || n != 0 {
		t.Fatalf("DeleteEmbeddings(scope) again = %d, %v; want 0", n, err)
	}
	// The lease on a was dropped with the rest of the Scope's state.
	wantIDs(t, "lease after scope reset", taskIDs(e.lease("embedder-2", time.Minute, 10)), []string{a.ID})
}

func testEmbDeleteAll(t *testing.T, e *env) {
	if e.h.Populated {
		t.Skip("DeleteAllEmbeddings resets every tenant's vectors: the other tenants' records would become pending work this case cannot tell from its own")
	}
	const p2 = embDeleteP2
	a, b := e.embedForDelete(t, Scope(t, "tenant-b", "project-2"))
	wantIDs(t, "nothing to lease", taskIDs(e.lease("embedder-1", time.Minute, 10)), nil)

	if n, err := e.s.DeleteAllEmbeddings(e.ctx, embProfile); err != nil || n != 2 {
		t.Fatalf("DeleteAllEmbeddings = %d, %v; want 2 (one per Scope)", n, err)
	}
	e.wantPending(t, 2)
	if n := e.pending(p2); n != 1 { // only the profile named was deleted
		t.Fatalf("pending for the other profile = %d, want 1", n)
	}
	q := query(e.scope)
	q.Vector, q.Profile = []float32{0, 1}, p2
	wantIDs(t, "other profile keeps its vector", ids(e.recall(q).Vector), []string{a.ID})
	leased := taskIDs(e.lease("embedder-1", time.Minute, 10))
	wantIDs(t, "rebuild lease", leased, []string{a.ID, b.ID})
	if n, err := e.s.DeleteAllEmbeddings(e.ctx, embProfile); err != nil || n != 0 {
		t.Fatalf("DeleteAllEmbeddings again = %d, %v; want 0", n, err)
	}
	// The leases were dropped with the rest of the profile's state.
	wantIDs(t, "lease after full reset", taskIDs(e.lease("embedder-2", time.Minute, 10)), []string{a.ID, b.ID})
}

func batchPutter(t *testing.T, e *env) storekit.EmbeddingBatchPutter {
	t.Helper()
	b, ok := e.s.(storekit.EmbeddingBatchPutter)
	if !ok {
		t.Skip("the store does not implement storekit.EmbeddingBatchPutter")
	}
	return b
}

// putBatchScenario builds the same records and leases on a fresh store and
// returns the puts of one mixed batch: accepted ones, a stale hash, an
// unknown record, a record of another Scope, a malformed vector, a
// candidate and two puts for one record (the later must win), plus the
// outcome each must have.
func putBatchScenario(t *testing.T, e *env) ([]storekit.EmbeddingPut, []error) {
	t.Helper()
	a, b, c := e.embRecord("mem-emb-a"), e.embRecord("mem-emb-b"), e.embRecord("mem-emb-c")
	other := Scope(t, "tenant-b", "project-1")
	in := newRec(other, memorykit.KindFact, "embed elsewhere", "content of another scope", memorykit.StatusActive)
	in.ID = "mem-emb-o"
	o := e.create(in)
	cin := e.candidate(memorykit.KindFact, "embed cand", "candidate content")
	cin.ID = "mem-emb-cand"
	cand := e.create(cin)
	tasks := e.lease("embedder-1", time.Minute, 10)
	if len(tasks) != 4 {
		t.Fatalf("leased %d records, want 4", len(tasks))
	}
	if _, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, b.ID, reviewer), Content: "b corrected"}); err != nil {
		t.Fatal(err)
	}
	e.advance(time.Second)
	tokens := make(map[string]int64)
	for _, tk := range tasks {
		tokens[tk.RecordID] = tk.LeaseToken
	}
	ref := func(r memorykit.Record, v ...float32) storekit.EmbeddingPut {
		return storekit.EmbeddingPut{Scope: r.Scope, RecordID: r.ID, Profile: embProfile, ContentHash: r.ContentHash,
			Vector: v, WorkerID: "embedder-1", LeaseToken: tokens[r.ID]}
	}
	wrongScope := ref(o, 1, 0)
	wrongScope.Scope = e.scope
	unknown := ref(a, 1, 0)
	unknown.RecordID = "mem-emb-unknown"
	nan := ref(c, float32(math.NaN()), 1)
	puts := []storekit.EmbeddingPut{
		ref(a, 1, 0),
		ref(b, 0, 1), // b was corrected after the lease
		unknown,
		wrongScope,
		nan,
		ref(cand, 1, 1),
		ref(a, 0.6, 0.8),
		ref(c, 0, 1),
		ref(o, 1, 1),
	}
	want := []error{nil, memorykit.ErrStale, memorykit.ErrNotFound, memorykit.ErrNotFound,
		memorykit.ErrInvalidInput, memorykit.ErrStale, nil, nil, nil}
	return puts, want
}

func testEmbPutBatch(t *testing.T, e *env) {
	bp := batchPutter(t, e)
	puts, want := putBatchScenario(t, e)
	errs, err := bp.PutEmbeddings(e.ctx, puts)
	if err != nil {
		t.Fatalf("PutEmbeddings: %v", err)
	}
	if len(errs) != len(puts) {
		t.Fatalf("PutEmbeddings returned %d results for %d puts", len(errs), len(puts))
	}
	for i, got := range errs {
		switch {
		case want[i] == nil && got != nil:
			t.Errorf("put %d: %v, want it stored", i, got)
		case want[i] != nil && !errors.Is(got, want[i]):
			t.Errorf("put %d: %v, want %v", i, got, want[i])
		case got != nil:
			var me *memorykit.Error
			if !errors.As(got, &me) || !strings.HasPrefix(me.Field, fmt.Sprintf("items[%d]", i)) {
				t.Errorf("put %d: error %v does not name its position", i, got)
			}
			contentFree(t, fmt.Sprintf("put %d", i), got)
		}
	}
	batched := e.dump()

	// The same puts one by one on a twin store built the same way.
	twin := setup(t, e.h)
	puts2, _ := putBatchScenario(t, twin)
	for i, p := range puts2 {
		err := twin.s.PutEmbedding(twin.ctx, p)
		if (err == nil) != (errs[i] == nil) || (err != nil && !errors.Is(errs[i], want[i])) {
			t.Errorf("put %d: PutEmbedding %v, PutEmbeddings %v", i, err, errs[i])
		}
	}
	if single := twin.dump(); single != batched {
		t.Fatalf("PutEmbeddings left another state than the same PutEmbedding calls:\n%s",
			cmp.Diff(strings.Split(single, "\n"), strings.Split(batched, "\n")))
	}

	// a holds the later of its two vectors; b is still pending.
	q := query(e.scope)
	q.Vector, q.Profile = []float32{0.6, 0.8}, embProfile
	res := e.recall(q)
	if len(res.Vector) == 0 || res.Vector[0].ID != "mem-emb-a" || math.Abs(res.Vector[0].Score-1) > 1e-6 {
		t.Fatalf("vector recall after the batch: %v", ids(res.Vector))
	}
	wantIDs(t, "still pending", taskIDs(e.lease("embedder-2", time.Minute, 10)), []string{"mem-emb-b"})

	// Repeating the batch changes nothing.
	before := e.dump()
	e.advance(time.Minute)
	if _, err := bp.PutEmbeddings(e.ctx, puts); err != nil {
		t.Fatal(err)
	}
	e.unchanged(t, before, "a repeated PutEmbeddings")
}

func testEmbPutBatchRefused(t *testing.T, e *env) {
	bp := batchPutter(t, e)
	a := e.embRecord("mem-emb-a")
	p := storekit.EmbeddingPut{Scope: e.scope, RecordID: a.ID, Profile: embProfile, ContentHash: a.ContentHash,
		Vector: []float32{1, 0}, WorkerID: "embedder-1"}
	many := make([]storekit.EmbeddingPut, Limits().MaxListSize+1)
	for i := range many {
		many[i] = p
	}
	e.refused(t, "PutEmbeddings over MaxListSize", memorykit.ErrInvalidInput, func() error {
		errs, err := bp.PutEmbeddings(e.ctx, many)
		if errs != nil {
			t.Errorf("a refused call returned %d results", len(errs))
		}
		return err
	})
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	e.refused(t, "PutEmbeddings with an ended context", memorykit.ErrUnavailable, func() error {
		_, err := bp.PutEmbeddings(ctx, []storekit.EmbeddingPut{p})
		return err
	})
	if errs, err := bp.PutEmbeddings(e.ctx, nil); err != nil || len(errs) != 0 {
		t.Fatalf("an empty PutEmbeddings: %v, %v", errs, err)
	}
	if errs, err := bp.PutEmbeddings(e.ctx, many[:Limits().MaxListSize]); err != nil || errs[0] != nil {
		t.Fatalf("PutEmbeddings of MaxListSize puts: %v", err)
	}
	e.wantPending(t, 0)
}

// testEmbStaleToken: a record's embedding lease is reaped and the record
// leased again by a worker with the same ID. A put or release carrying the
// first lease's token is refused as lease lost and changes nothing, before
// and after the current holder stored its vector.
func testEmbStaleToken(t *testing.T, e *env) {
	e.embRecord("mem-emb-a")
	first := e.lease("embedder-1", time.Minute, 1)
	if len(first) != 1 || first[0].LeaseToken <= 0 {
		t.Fatalf("first lease: %+v", first)
	}
	e.advance(time.Minute)
	if n := e.reapEmb(); n != 1 {
		t.Fatalf("reaped %d leases, want 1", n)
	}
	second := e.lease("embedder-1", time.Minute, 1)
	if len(second) != 1 || second[0].LeaseToken <= first[0].LeaseToken {
		t.Fatalf("second lease %+v does not carry a token above %d", second, first[0].LeaseToken)
	}
	stale := first[0]
	e.refused(t, "PutEmbedding with a stale token", memorykit.ErrLeaseLost, func() error {
		return e.s.PutEmbedding(e.ctx, put(stale, "embedder-1", []float32{0, 1}))
	})
	e.refused(t, "PutEmbedding without a token on a leased record", memorykit.ErrLeaseLost, func() error {
		p := put(stale, "embedder-1", []float32{0, 1})
		p.LeaseToken = 0
		return e.s.PutEmbedding(e.ctx, p)
	})
	e.refused(t, "ReleaseEmbedding with a stale token", memorykit.ErrLeaseLost, func() error {
		return e.s.ReleaseEmbedding(e.ctx, release(stale, "embedder-1"))
	})
	parked := release(stale, "embedder-1")
	parked.Park = true
	e.refused(t, "ReleaseEmbedding (park) with a stale token", memorykit.ErrLeaseLost, func() error {
		return e.s.ReleaseEmbedding(e.ctx, parked)
	})
	if bp, ok := e.s.(storekit.EmbeddingBatchPutter); ok {
		before := e.dump()
		errs, err := bp.PutEmbeddings(e.ctx, []storekit.EmbeddingPut{put(stale, "embedder-1", []float32{0, 1})})
		if err != nil || len(errs) != 1 || !errors.Is(errs[0], memorykit.ErrLeaseLost) {
			t.Fatalf("PutEmbeddings with a stale token = %v, %v; want one ErrLeaseLost", errs, err)
		}
		e.unchanged(t, before, "PutEmbeddings with a stale token")
	}
	if err := e.s.PutEmbedding(e.ctx, put(second[0], "embedder-1", []float32{1, 0})); err != nil {
		t.Fatalf("PutEmbedding by the current lease: %v", err)
	}
	e.wantPending(t, 0)
	e.refused(t, "PutEmbedding with a stale token after the current put", memorykit.ErrLeaseLost, func() error {
		return e.s.PutEmbedding(e.ctx, put(stale, "embedder-1", []float32{0, 1}))
	})
	e.refused(t, "ReleaseEmbedding with a stale token after the current put", memorykit.ErrLeaseLost, func() error {
		return e.s.ReleaseEmbedding(e.ctx, release(stale, "embedder-1"))
	})
}
