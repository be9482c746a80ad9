package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// jobTTL is the lease the job suite asks for.
const jobTTL = time.Minute

// RunJobConformance checks the durable extraction queue: deterministic
// enqueue, leasing order and exclusivity, atomic and idempotent
// completion, lease loss, retries, final failure tombstones, release,
// reaping and counting.
func RunJobConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"Enqueue", testJobEnqueue},
		{"LeaseOrder", testJobLeaseOrder},
		{"LeasedJobNotLeasedAgain", testJobLeasedOnce},
		{"CompleteWithCandidates", testJobComplete},
		{"CompleteSkipsExistingCandidates", testJobCompleteSkips},
		{"CompleteWithoutCandidates", testJobCompleteEmpty},
		{"CompleteByOtherWorker", testJobCompleteOther},
		{"CompleteAfterExpiry", testJobCompleteExpired},
		{"CompleteInvalidCandidate", testJobCompleteInvalid},
		{"FailRetriesThenFails", testJobFailRetry},
		{"FailFinal", testJobFailFinal},
		{"FailByOtherWorker", testJobFailOther},
		{"ReleaseJob", testJobRelease},
		{"ReapJobLeases", testJobReap},
		{"WorkerCrashRecovery", testJobCrash},
		{"CountJobs", testJobCount},
		{"GetJob", testJobGet},
		{"StaleLeaseTokenRefused", testJobStaleToken},
		{"ReapsDoNotUseAttempts", testJobReapsNotAttempts},
		{"PoisonJobEndsAfterMaxReaps", testJobPoisonReaps},
		{"HandBacksBoundedWithReaps", testJobHandBackLimit},
	})
}

func payload(ref string) string { return "finished turn text for " + ref }

// enqueue stores a job with the deterministic ID for ref in scope.
func (e *env) enqueueIn(scope memorykit.Scope, ref string, maxAttempts int) storekit.Job {
	e.t.Helper()
	j, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{
		ID: storekit.ExtractionJobID(scope, ref), Scope: scope, RunRef: ref, Payload: payload(ref), MaxAttempts: maxAttempts, MaxReaps: maxAttempts,
	})
	if err != nil {
		e.t.Fatalf("EnqueueJob(%s): %v", ref, err)
	}
	return j
}

// enqueueLimits stores a job in the env's Scope with separate limits on
// failed attempts and on leases ended without a result.
func (e *env) enqueueLimits(ref string, maxAttempts, maxReaps int) storekit.Job {
	e.t.Helper()
	j, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{
		ID: storekit.ExtractionJobID(e.scope, ref), Scope: e.scope, Payload: payload(ref),
		MaxAttempts: maxAttempts, MaxReaps: maxReaps,
	})
	if err != nil {
		e.t.Fatalf("EnqueueJob(%s): %v", ref, err)
	}
	return j
}

func (e *env) enqueue(ref string, maxAttempts int) storekit.Job {
	e.t.Helper()
	return e.enqueueIn(e.scope, ref, maxAttempts)
}

// enqueueID stores a job with an explicit ID.
func (e *env) enqueueID(id string, maxAttempts int) storekit.Job {
	e.t.Helper()
	j, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: id, Scope: e.scope, Payload: payload(id), MaxAttempts: maxAttempts, MaxReaps: maxAttempts})
	if err != nil {
		e.t.Fatalf("EnqueueJob(%s): %v", id, err)
	}
	return j
}

func (e *env) leaseJobs(worker string, max int) []storekit.Job {
	e.t.Helper()
	js, err := e.s.LeaseJobs(e.ctx, storekit.JobLease{WorkerID: worker, TTL: jobTTL, Max: max})
	if err != nil {
		e.t.Fatalf("LeaseJobs(%s): %v", worker, err)
	}
	return js
}

// leaseOne leases exactly one job for worker.
func (e *env) leaseOne(worker string) storekit.Job {
	e.t.Helper()
	js := e.leaseJobs(worker, 1)
	if len(js) != 1 {
		e.t.Fatalf("LeaseJobs(%s) leased %d jobs, want 1", worker, len(js))
	}
	return js[0]
}

func (e *env) getJob(scope memorykit.Scope, id string) storekit.Job {
	e.t.Helper()
	j, err := e.s.GetJob(e.ctx, scope, id)
	if err != nil {
		e.t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j
}

func (e *env) counts() storekit.JobCounts {
	e.t.Helper()
	c, err := e.s.CountJobs(e.ctx)
	if err != nil {
		e.t.Fatalf("CountJobs: %v", err)
	}
	return c
}

func (e *env) wantCounts(t testing.TB, want storekit.JobCounts) {
	t.Helper()
	b := e.jobBase
	want = storekit.JobCounts{Queued: b.Queued + want.Queued, Leased: b.Leased + want.Leased, Done: b.Done + want.Done, Failed: b.Failed + want.Failed}
	if got := e.counts(); got != want {
		t.Fatalf("CountJobs = %+v, want %+v", got, want)
	}
}

// proposal builds a candidate with the deterministic CandidateID.
func (e *env) proposal(jobID string, kind memorykit.Kind, key, content string) memorykit.NewRecord {
	in := newRec(e.scope, kind, key, content, memorykit.StatusCandidate)
	in.Actor, in.Reason = workerAc, "extracted"
	in.ID = storekit.CandidateID(e.scope, jobID, kind, storekit.NormalizeKey(key))
	return in
}

func (e *env) complete(c storekit.JobCompletion) int {
	e.t.Helper()
	n, err := e.s.CompleteJob(e.ctx, c)
	if err != nil {
		e.t.Fatalf("CompleteJob(%s): %v", c.JobID, err)
	}
	return n
}

func diffJob(t testing.TB, what string, got, want storekit.Job) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s (-want +got):\n%s", what, d)
	}
}

// wantTombstone checks a finished job keeps nothing but content-free
// fields.
func wantTombstone(t testing.TB, j storekit.Job, state storekit.JobState) {
	t.Helper()
	if j.State != state || j.Payload != "" || j.LeasedBy != "" || !j.LeaseExpiresAt.IsZero() {
		t.Fatalf("job %s: state %s payload %d bytes leased by %q until %v; want a %s tombstone",
			j.ID, j.State, len(j.Payload), j.LeasedBy, j.LeaseExpiresAt, state)
	}
	if err := storekit.CheckReasonCode("test", j.LastError); j.LastError != "" && err != nil {
		t.Fatalf("job %s LastError is not a reason code", j.ID)
	}
}

func testJobEnqueue(t *testing.T, e *env) {
	id := storekit.ExtractionJobID(e.scope, "run-1/turn-1")
	j := e.enqueue("run-1/turn-1", 3)
	now := e.now()
	want := storekit.Job{ID: id, Scope: e.scope, RunRef: "run-1/turn-1", Payload: payload("run-1/turn-1"), State: storekit.JobQueued,
		MaxAttempts: 3, MaxReaps: 3, AvailableAt: now, CreatedAt: now, UpdatedAt: now}
	diffJob(t, "enqueued job", j, want)
	diffJob(t, "GetJob", e.getJob(e.scope, id), want)
	if j.CreatedAt.Location() != time.UTC {
		t.Fatal("job timestamps are not UTC")
	}
	e.advance(time.Minute)
	before := e.dump()
	got, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: id, Scope: e.scope, Payload: "a different payload", MaxAttempts: 5, MaxReaps: 5})
	wantErr(t, err, memorykit.ErrAlreadyExists)
	diffJob(t, "re-enqueue result", got, want)
	e.unchanged(t, before, "a re-enqueue")
	e.wantCounts(t, storekit.JobCounts{Queued: 1})
}

func testJobLeaseOrder(t *testing.T, e *env) {
	e.enqueueID("job-z", 3)
	e.enqueueID("job-y", 3)
	e.advance(time.Second)
	e.enqueueID("job-a", 3)
	e.advance(time.Second)
	js := e.leaseJobs("worker-1", 2)
	wantIDs(t, "first lease", jobIDs(js), []string{"job-y", "job-z"})
	now := e.now()
	for _, j := range js {
		if j.State != storekit.JobLeased || j.Attempt != 1 || j.LeasedBy != "worker-1" || j.Payload != payload(j.ID) {
			t.Fatalf("leased job: %+v", j)
		}
		wantTime(t, "LeaseExpiresAt", j.LeaseExpiresAt, now.Add(jobTTL))
		wantTime(t, "UpdatedAt", j.UpdatedAt, now)
		diffJob(t, "GetJob of a leased job", e.getJob(e.scope, j.ID), j)
	}
	wantIDs(t, "second lease", jobIDs(e.leaseJobs("worker-2", 5)), []string{"job-a"})
	wantIDs(t, "third lease", jobIDs(e.leaseJobs("worker-3", 5)), nil)
	e.wantCounts(t, storekit.JobCounts{Leased: 3})
}

func testJobLeasedOnce(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	e.leaseOne("worker-1")
	if got := e.leaseJobs("worker-2", 5); len(got) != 0 {
		t.Fatalf("a leased job was leased again: %v", jobIDs(got))
	}
	e.advance(jobTTL + time.Second)
	if got := e.leaseJobs("worker-2", 5); len(got) != 0 {
		t.Fatalf("an expired, unreaped lease was leased again: %v", jobIDs(got))
	}
	n, err := e.s.ReapJobLeases(e.ctx)
	if err != nil || n != 1 {
		t.Fatalf("ReapJobLeases = %d, %v; want 1", n, err)
	}
	got := e.leaseOne("worker-2")
	if got.ID != j.ID || got.Attempt != 2 || got.LeasedBy != "worker-2" {
		t.Fatalf("lease after reap: %+v", got)
	}
}

func testJobComplete(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	e.leaseOne("worker-1")
	e.advance(10 * time.Second)
	c1 := e.proposal(j.ID, memorykit.KindFact, "Deploy Day", "Deploys happen on Tuesday.")
	c2 := e.proposal(j.ID, memorykit.KindPreference, "review size", "Keep reviews small.")
	c2.Metadata = map[string]string{"confidence": "high"}
	c2.Sources = []memorykit.Source{{Kind: "conversation", Ref: "run-1/turn-1"}}
	if n := e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Candidates: []memorykit.NewRecord{c1, c2}}); n != 2 {
		t.Fatalf("CompleteJob created %d candidates, want 2", n)
	}
	now := e.now()
	done := e.getJob(e.scope, j.ID)
	wantTombstone(t, done, storekit.JobDone)
	if done.Candidates != 2 || done.Attempt != 1 {
		t.Fatalf("done job: %+v", done)
	}
	wantTime(t, "UpdatedAt", done.UpdatedAt, now)
	for _, c := range []memorykit.NewRecord{c1, c2} {
		r := e.get(e.scope, c.ID)
		if r.Status != memorykit.StatusCandidate || r.Version != 1 || r.Content != c.Content || r.Key != storekit.NormalizeKey(c.Key) ||
			r.CreatedBy != workerAc || r.ContentHash != storekit.ContentHash(c.Content) {
			t.Fatalf("stored candidate: %+v", r)
		}
		wantTime(t, "candidate CreatedAt", r.CreatedAt, now)
		revs := e.revisions(e.scope, c.ID)
		if len(revs) != 1 || revs[0].Action != memorykit.ActionCreate || revs[0].Actor != workerAc || revs[0].Reason != "extracted" {
			t.Fatalf("candidate revisions: %+v", revs)
		}
	}
	if r := e.get(e.scope, c2.ID); r.Metadata["confidence"] != "high" || len(r.Sources) != 1 {
		t.Fatalf("candidate metadata/sources: %+v", r)
	}
	e.wantCounts(t, storekit.JobCounts{Done: 1})
	e.refused(t, "a second CompleteJob", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Candidates: []memorykit.NewRecord{c1}})
		return err
	})
	e.refused(t, "FailJob of a done job", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Reason: "late_failure"})
		return err
	})
	if got := e.leaseJobs("worker-2", 5); len(got) != 0 {
		t.Fatalf("a done job was leased: %v", jobIDs(got))
	}
}

func testJobCompleteSkips(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	c1 := e.proposal(j.ID, memorykit.KindFact, "deploy day", "Tuesday, as first proposed.")
	first := e.create(c1)
	e.leaseOne("worker-1")
	again := c1
	again.Content = "Wednesday, from a retry."
	c2 := e.proposal(j.ID, memorykit.KindNote, "note", "A new note.")
	dup := c2
	dup.Content = "The same candidate twice in one batch."
	n := e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Candidates: []memorykit.NewRecord{again, c2, dup}})
	if n != 1 {
		t.Fatalf("CompleteJob created %d candidates, want 1", n)
	}
	diffRecord(t, "existing candidate", e.get(e.scope, c1.ID), first)
	if r := e.get(e.scope, c2.ID); r.Content != c2.Content {
		t.Fatalf("the first of two equal IDs was not the one stored: %q", r.Content)
	}
	if got := e.getJob(e.scope, j.ID); got.Candidates != 1 || got.State != storekit.JobDone {
		t.Fatalf("job after completion: %+v", got)
	}
	all, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Limit: 10})
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %d records, %v; want 2", len(all), err)
	}
}

func testJobCompleteEmpty(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	e.leaseOne("worker-1")
	if n := e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID)}); n != 0 {
		t.Fatalf("CompleteJob without candidates created %d", n)
	}
	got := e.getJob(e.scope, j.ID)
	wantTombstone(t, got, storekit.JobDone)
	if got.Candidates != 0 {
		t.Fatalf("Candidates = %d", got.Candidates)
	}
}

func testJobCompleteOther(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	leased := e.leaseOne("worker-1")
	c := e.proposal(j.ID, memorykit.KindFact, "k", "v")
	e.refused(t, "CompleteJob by a worker without the lease", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-2", LeaseToken: e.tok(j.ID), Candidates: []memorykit.NewRecord{c}})
		return err
	})
	diffJob(t, "job after a foreign completion", e.getJob(e.scope, j.ID), leased)
	e.refused(t, "CompleteJob of an unknown job", memorykit.ErrNotFound, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: "job-unknown", WorkerID: "worker-1", LeaseToken: e.tok("job-unknown")})
		return err
	})
	if n := e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Candidates: []memorykit.NewRecord{c}}); n != 1 {
		t.Fatalf("holder's completion created %d", n)
	}
}

func testJobCompleteExpired(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	e.leaseOne("worker-1")
	e.advance(jobTTL + time.Second)
	c := e.proposal(j.ID, memorykit.KindFact, "k", "v")
	e.refused(t, "CompleteJob after the lease expired", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Candidates: []memorykit.NewRecord{c}})
		return err
	})
	e.refused(t, "FailJob after the lease expired", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Reason: "too_slow"})
		return err
	})
	e.refused(t, "ReleaseJob after the lease expired", memorykit.ErrLeaseLost, func() error {
		return e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID)})
	})
}

func testJobCompleteInvalid(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	leased := e.leaseOne("worker-1")
	good := e.proposal(j.ID, memorykit.KindFact, "good", "A fine candidate.")
	marked := e.proposal(j.ID, memorykit.KindFact, "bad", "contains "+RejectMarker)
	active := e.proposal(j.ID, memorykit.KindFact, "active", "wants to be active")
	active.Status = memorykit.StatusActive
	elsewhere := good
	elsewhere.Scope = Scope(t, "tenant-a", "project-2")
	elsewhere.ID = storekit.CandidateID(elsewhere.Scope, j.ID, memorykit.KindFact, "good")
	unknownKind := e.proposal(j.ID, memorykit.KindFact, "kind", "x")
	unknownKind.Kind = "rumour"
	emptyContent := e.proposal(j.ID, memorykit.KindFact, "empty", "")
	var tooMany []memorykit.NewRecord
	for i := 0; i <= Limits().MaxListSize; i++ {
		tooMany = append(tooMany, e.proposal(j.ID, memorykit.KindNote, fmt.Sprintf("n%d", i), "bulk"))
	}
	batches := map[string][]memorykit.NewRecord{
		"validator rejection":   {good, marked},
		"active status":         {good, active},
		"another Scope":         {good, elsewhere},
		"unknown kind":          {good, unknownKind},
		"empty content":         {good, emptyContent},
		"more than MaxListSize": tooMany,
	}
	for name, batch := range batches {
		e.refused(t, "CompleteJob with "+name, memorykit.ErrInvalidInput, func() error {
			_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Candidates: batch})
			return err
		})
	}
	diffJob(t, "job after rejected completions", e.getJob(e.scope, j.ID), leased)
	if n := e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Candidates: []memorykit.NewRecord{good}}); n != 1 {
		t.Fatalf("valid completion created %d", n)
	}
}

func testJobFailRetry(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	for attempt := 1; attempt <= 2; attempt++ {
		got := e.leaseOne("worker-1")
		if got.Attempt != attempt {
			t.Fatalf("lease %d has attempt %d", attempt, got.Attempt)
		}
		retryAt := e.clk.Now().Add(time.Minute)
		f, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Reason: "extract_timeout", RetryAt: retryAt})
		if err != nil {
			t.Fatal(err)
		}
		want := got
		want.State, want.LeasedBy, want.LeaseExpiresAt = storekit.JobQueued, "", time.Time{}
		want.AvailableAt, want.LastError, want.UpdatedAt = retryAt.UTC().Truncate(time.Microsecond), "extract_timeout", e.now()
		want.Failures = attempt
		diffJob(t, fmt.Sprintf("job after failure %d", attempt), f, want)
		diffJob(t, "GetJob after failure", e.getJob(e.scope, j.ID), want)
		e.advance(59 * time.Second)
		if early := e.leaseJobs("worker-1", 5); len(early) != 0 {
			t.Fatalf("job leased before RetryAt: %v", jobIDs(early))
		}
		e.advance(2 * time.Second)
	}
	last := e.leaseOne("worker-1")
	if last.Attempt != 3 {
		t.Fatalf("third lease has attempt %d", last.Attempt)
	}
	f, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Reason: "extract_timeout", RetryAt: e.clk.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	wantTombstone(t, f, storekit.JobFailed)
	if f.Attempt != 3 || f.LastError != "extract_timeout" {
		t.Fatalf("failed job: %+v", f)
	}
	diffJob(t, "GetJob of the failed job", e.getJob(e.scope, j.ID), f)
	e.advance(time.Hour)
	if got := e.leaseJobs("worker-1", 5); len(got) != 0 {
		t.Fatalf("a failed job was leased: %v", jobIDs(got))
	}
	e.wantCounts(t, storekit.JobCounts{Failed: 1})
}

func testJobFailFinal(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 5)
	e.leaseOne("worker-1")
	f, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Reason: "bad_payload", Final: true})
	if err != nil {
		t.Fatal(err)
	}
	wantTombstone(t, f, storekit.JobFailed)
	if f.Attempt != 1 || f.LastError != "bad_payload" {
		t.Fatalf("final failure: %+v", f)
	}
	e.wantCounts(t, storekit.JobCounts{Failed: 1})
}

func testJobFailOther(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	e.leaseOne("worker-1")
	e.refused(t, "FailJob by another worker", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-2", LeaseToken: e.tok(j.ID), Reason: "nope"})
		return err
	})
	e.refused(t, "FailJob of an unknown job", memorykit.ErrNotFound, func() error {
		_, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: "job-unknown", WorkerID: "worker-1", LeaseToken: e.tok("job-unknown"), Reason: "nope"})
		return err
	})
	// A zero RetryAt requeues the job for now.
	f, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Reason: "flaky"})
	if err != nil {
		t.Fatal(err)
	}
	if f.State != storekit.JobQueued || !f.AvailableAt.Equal(e.now()) {
		t.Fatalf("failure without RetryAt: %+v", f)
	}
	if got := e.leaseOne("worker-2"); got.Attempt != 2 {
		t.Fatalf("re-lease attempt %d", got.Attempt)
	}
}

func testJobRelease(t *testing.T, e *env) {
	j := e.enqueueLimits("run-1/turn-1", 2, 10)
	e.leaseOne("worker-1")
	e.refused(t, "ReleaseJob by another worker", memorykit.ErrLeaseLost, func() error {
		return e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "worker-2", LeaseToken: e.tok(j.ID)})
	})
	e.refused(t, "ReleaseJob of an unknown job", memorykit.ErrNotFound, func() error {
		return e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: "job-unknown", WorkerID: "worker-1", LeaseToken: e.tok("job-unknown")})
	})
	e.advance(5 * time.Second)
	if err := e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID)}); err != nil {
		t.Fatal(err)
	}
	got := e.getJob(e.scope, j.ID)
	if got.State != storekit.JobQueued || got.Attempt != 0 || got.LeasedBy != "" || !got.LeaseExpiresAt.IsZero() || got.Payload != j.Payload {
		t.Fatalf("released job: %+v", got)
	}
	wantTime(t, "AvailableAt", got.AvailableAt, e.now())
	// Releases never use up attempts.
	for i := 0; i < 3; i++ {
		l := e.leaseOne("worker-2")
		if l.Attempt != 1 {
			t.Fatalf("lease after %d releases has attempt %d", i+1, l.Attempt)
		}
		if err := e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "worker-2", LeaseToken: e.tok(j.ID)}); err != nil {
			t.Fatal(err)
		}
	}
	e.wantCounts(t, storekit.JobCounts{Queued: 1})
}

func testJobReap(t *testing.T, e *env) {
	j1 := e.enqueue("run-1/turn-1", 2)
	j2 := e.enqueue("run-1/turn-2", 1)
	e.leaseJobs("worker-1", 5)
	e.advance(jobTTL - time.Second)
	if n, err := e.s.ReapJobLeases(e.ctx); err != nil || n != 0 {
		t.Fatalf("ReapJobLeases before expiry = %d, %v", n, err)
	}
	e.advance(2 * time.Second)
	if n, err := e.s.ReapJobLeases(e.ctx); err != nil || n != 2 {
		t.Fatalf("ReapJobLeases after expiry = %d, %v; want 2", n, err)
	}
	g1 := e.getJob(e.scope, j1.ID)
	if g1.State != storekit.JobQueued || g1.Attempt != 1 || g1.LeasedBy != "" || g1.Payload != j1.Payload {
		t.Fatalf("reaped job with attempts left: %+v", g1)
	}
	wantTime(t, "requeued AvailableAt", g1.AvailableAt, e.now())
	g2 := e.getJob(e.scope, j2.ID)
	wantTombstone(t, g2, storekit.JobFailed)
	if g2.LastError != "lease_expired" || g2.Attempt != 1 {
		t.Fatalf("reaped job without attempts left: %+v", g2)
	}
	if n, err := e.s.ReapJobLeases(e.ctx); err != nil || n != 0 {
		t.Fatalf("second ReapJobLeases = %d, %v", n, err)
	}
	e.wantCounts(t, storekit.JobCounts{Queued: 1, Failed: 1})
	e.refused(t, "CompleteJob by the reaped worker", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j1.ID, WorkerID: "worker-1", LeaseToken: e.tok(j1.ID)})
		return err
	})
}

func testJobCrash(t *testing.T, e *env) {
	j := e.enqueue("run-7/turn-3", 3)
	e.leaseOne("worker-1") // worker-1 dies holding the lease
	e.advance(jobTTL + time.Second)
	if n, err := e.s.ReapJobLeases(e.ctx); err != nil || n != 1 {
		t.Fatalf("ReapJobLeases = %d, %v", n, err)
	}
	second := e.leaseOne("worker-2")
	if second.Attempt != 2 {
		t.Fatalf("second worker's attempt %d", second.Attempt)
	}
	cands := []memorykit.NewRecord{
		e.proposal(j.ID, memorykit.KindFact, "a", "first"),
		e.proposal(j.ID, memorykit.KindFact, "b", "second"),
	}
	if n := e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-2", LeaseToken: e.tok(j.ID), Candidates: cands}); n != 2 {
		t.Fatalf("second worker created %d", n)
	}
	e.refused(t, "the crashed worker's late completion", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Candidates: cands})
		return err
	})
	all, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Limit: 10})
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %d records, %v; want exactly 2", len(all), err)
	}
	e.wantCounts(t, storekit.JobCounts{Done: 1})
}

func testJobCount(t *testing.T, e *env) {
	other := Scope(t, "tenant-b", "project-1")
	e.enqueue("q1", 3)
	e.enqueueIn(other, "q2", 3)
	e.enqueueIn(other, "l1", 3)
	e.enqueue("d1", 3)
	e.enqueue("f1", 1)
	e.wantCounts(t, storekit.JobCounts{Queued: 5})
	js := e.leaseJobs("worker-1", 5)
	if len(js) != 5 {
		t.Fatalf("leased %d", len(js))
	}
	for _, j := range js {
		switch j.ID {
		case storekit.ExtractionJobID(e.scope, "q1"), storekit.ExtractionJobID(other, "q2"):
			if err := e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "worker-1", LeaseToken: j.LeaseToken}); err != nil {
				t.Fatal(err)
			}
		case storekit.ExtractionJobID(e.scope, "d1"):
			e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: j.LeaseToken})
		case storekit.ExtractionJobID(e.scope, "f1"):
			if _, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: j.LeaseToken, Reason: "boom"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.wantCounts(t, storekit.JobCounts{Queued: 2, Leased: 1, Done: 1, Failed: 1})
	for _, j := range js {
		if j.ID == storekit.ExtractionJobID(other, "l1") && j.Scope != other {
			t.Fatalf("job of %s leased with scope %s", other, j.Scope)
		}
	}
}

func testJobGet(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	_, err := e.s.GetJob(e.ctx, Scope(t, "tenant-a", "project-2"), j.ID)
	wantErr(t, err, memorykit.ErrNotFound)
	_, err = e.s.GetJob(e.ctx, e.scope, "job-unknown")
	wantErr(t, err, memorykit.ErrNotFound)
}

// tok returns the fencing token of the job's latest lease, or 1 for a job
// that does not exist in the env's Scope (so a call reaches the store's
// lookup instead of failing validation).
func (e *env) tok(id string) int64 {
	e.t.Helper()
	j, err := e.s.GetJob(e.ctx, e.scope, id)
	if err != nil || j.LeaseToken == 0 {
		return 1
	}
	return j.LeaseToken
}

// testJobStaleToken: a worker leases a job, the reaper takes the lease back
// and the job is leased again by a worker with the same ID. Every call
// carrying the first lease's token is refused as lease lost and changes
// nothing; the current lease's token still works.
func testJobStaleToken(t *testing.T, e *env) {
	j := e.enqueue("run-1/turn-1", 3)
	first := e.leaseOne("worker-1")
	if first.LeaseToken <= 0 {
		t.Fatalf("leased job has token %d, want a positive one", first.LeaseToken)
	}
	e.advance(jobTTL)
	if n, err := e.s.ReapJobLeases(e.ctx); err != nil || n != 1 {
		t.Fatalf("ReapJobLeases = %d, %v; want 1", n, err)
	}
	second := e.leaseOne("worker-1")
	if second.LeaseToken <= first.LeaseToken {
		t.Fatalf("second lease token %d is not above the first %d", second.LeaseToken, first.LeaseToken)
	}
	stale := first.LeaseToken
	cand := e.proposal(j.ID, memorykit.KindFact, "stale key", "stale attempt's candidate")
	e.refused(t, "CompleteJob with a stale token", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: stale,
			Candidates: []memorykit.NewRecord{cand}})
		return err
	})
	e.refused(t, "CompleteJob without candidates with a stale token", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: stale})
		return err
	})
	e.refused(t, "FailJob with a stale token", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: stale,
			Reason: "stale_failure", Final: true})
		return err
	})
	e.refused(t, "ReleaseJob with a stale token", memorykit.ErrLeaseLost, func() error {
		return e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "worker-1", LeaseToken: stale})
	})
	e.refused(t, "CompleteJob with a token never issued", memorykit.ErrLeaseLost, func() error {
		_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: second.LeaseToken + 1000})
		return err
	})
	real := e.proposal(j.ID, memorykit.KindFact, "real key", "current attempt's candidate")
	if n := e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: second.LeaseToken,
		Candidates: []memorykit.NewRecord{real}}); n != 1 {
		t.Fatalf("CompleteJob by the current lease created %d candidates, want 1", n)
	}
	if _, err := e.s.Get(e.ctx, e.scope, cand.ID); !errors.Is(err, memorykit.ErrNotFound) {
		t.Fatalf("the stale attempt's candidate exists: %v", err)
	}
	wantTombstone(t, e.getJob(e.scope, j.ID), storekit.JobDone)
}

// reapOnce lets the job's lease expire and reaps it.
func (e *env) reapOnce(t testing.TB) {
	t.Helper()
	e.advance(jobTTL)
	if n, err := e.s.ReapJobLeases(e.ctx); err != nil || n != 1 {
		t.Fatalf("ReapJobLeases = %d, %v; want 1", n, err)
	}
}

// testJobReapsNotAttempts: a job whose worker dies more times than
// MaxAttempts (each lease reaped) is not failed for it; failed attempts
// are still bounded by MaxAttempts on their own.
func testJobReapsNotAttempts(t *testing.T, e *env) {
	const maxAttempts = 2
	j := e.enqueueLimits("run-1/turn-1", maxAttempts, 10)
	for i := 1; i <= maxAttempts+2; i++ {
		e.leaseOne("worker-1")
		e.reapOnce(t)
		got := e.getJob(e.scope, j.ID)
		if got.State != storekit.JobQueued || got.Reaps != i || got.Failures != 0 || got.Payload != j.Payload {
			t.Fatalf("after reap %d: state %s reaps %d failures %d", i, got.State, got.Reaps, got.Failures)
		}
	}
	// One real failure is retried (1 < MaxAttempts), whatever the reaps.
	l := e.leaseOne("worker-1")
	f, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: l.LeaseToken, Reason: "extract_error"})
	if err != nil || f.State != storekit.JobQueued || f.Failures != 1 {
		t.Fatalf("FailJob after reaps = %+v, %v; want queued with 1 failure", f, err)
	}
	l = e.leaseOne("worker-1")
	if n := e.complete(storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: l.LeaseToken}); n != 0 {
		t.Fatalf("created %d", n)
	}
	got := e.getJob(e.scope, j.ID)
	wantTombstone(t, got, storekit.JobDone)
	if got.Reaps != maxAttempts+2 || got.Failures != 1 || got.Attempt != maxAttempts+4 {
		t.Fatalf("done job: reaps %d failures %d attempt %d", got.Reaps, got.Failures, got.Attempt)
	}
	// A second job: failures alone end it at MaxAttempts.
	k := e.enqueueLimits("run-1/turn-2", maxAttempts, 10)
	for i := 1; i <= maxAttempts; i++ {
		l := e.leaseOne("worker-1")
		f, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: k.ID, WorkerID: "worker-1", LeaseToken: l.LeaseToken, Reason: "extract_error"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]storekit.JobState{true: storekit.JobFailed, false: storekit.JobQueued}[i == maxAttempts]; f.State != want {
			t.Fatalf("after failure %d the job is %s, want %s", i, f.State, want)
		}
	}
}

// testJobPoisonReaps: a job that kills every worker that leases it ends
// failed (ReasonLeaseExpired) once it was reaped MaxReaps times, even with
// its MaxAttempts unused.
func testJobPoisonReaps(t *testing.T, e *env) {
	j := e.enqueueLimits("run-1/turn-1", 5, 3)
	for i := 1; i <= 3; i++ {
		e.leaseOne("worker-1")
		e.reapOnce(t)
	}
	got := e.getJob(e.scope, j.ID)
	wantTombstone(t, got, storekit.JobFailed)
	if got.LastError != storekit.ReasonLeaseExpired || got.Reaps != 3 || got.Failures != 0 {
		t.Fatalf("poison job: last error %q reaps %d failures %d", got.LastError, got.Reaps, got.Failures)
	}
	if more := e.leaseJobs("worker-1", 5); len(more) != 0 {
		t.Fatalf("a failed job was leased: %v", jobIDs(more))
	}
}

// testJobHandBackLimit: hand-backs do not use attempts either, but count
// with reaps toward MaxReaps; the hand-back that reaches it fails the job
// (ReasonHandBackLimit).
func testJobHandBackLimit(t *testing.T, e *env) {
	j := e.enqueueLimits("run-1/turn-1", 5, 3)
	e.leaseOne("worker-1")
	e.reapOnce(t)
	for i := 1; i <= 2; i++ {
		l := e.leaseOne("worker-1")
		if err := e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "worker-1", LeaseToken: l.LeaseToken}); err != nil {
			t.Fatal(err)
		}
		got := e.getJob(e.scope, j.ID)
		if got.HandBacks != i || got.Reaps != 1 || got.Failures != 0 {
			t.Fatalf("after hand-back %d: %+v", i, got)
		}
		if i == 1 && got.State != storekit.JobQueued {
			t.Fatalf("after one reap and one hand-back the job is %s", got.State)
		}
	}
	got := e.getJob(e.scope, j.ID)
	wantTombstone(t, got, storekit.JobFailed)
	if got.LastError != storekit.ReasonHandBackLimit {
		t.Fatalf("last error %q, want %q", got.LastError, storekit.ReasonHandBackLimit)
	}
}
