package extractworker_test

import (
	"context"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testkit"
)

// killWorker leases the queued job with a worker whose process "dies"
// mid-extraction: the Extractor never returns on its own and the hand-back
// fails, so the lease is left for the reaper, which then takes it back.
func killWorker(t *testing.T, e *env, id string) {
	t.Helper()
	fs := newFaultStore(e.store)
	fs.FailCalls("ReleaseJob", 1, testkit.DBDown)
	entered := make(chan struct{})
	x := newExtractor(e.Clock)
	x.fn = func(ctx context.Context, _ memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	cfg := e.config(id, x)
	cfg.Store = fs
	w := e.worker(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = w.RunOnce(ctx)
	}()
	select {
	case <-entered:
	case <-done:
		cancel()
		t.Fatalf("%s leased nothing", id)
	}
	cancel()
	<-done
	e.Clock.Add(leaseTTL)
	if n, err := e.reaper(nil).RunOnce(e.Ctx); err != nil || n.Jobs != 1 {
		t.Fatalf("reaped %+v (%v)", n, err)
	}
}

// enqueueLimits stores one job with separate limits on failed attempts and
// on leases that end without a result.
func (e *env) enqueueLimits(maxAttempts, maxReaps int) memorykit.Job {
	e.T.Helper()
	j, err := e.store.EnqueueJob(e.Ctx, memorykit.NewJob{
		ID: memorykit.ExtractionJobID(e.Scope, "run-0/turn-1"), Scope: e.Scope, Payload: turnPayload(0),
		MaxAttempts: maxAttempts, MaxReaps: maxReaps,
	})
	if err != nil {
		e.T.Fatalf("enqueue: %v", err)
	}
	return j
}

// TestDeadWorkersDoNotUseAttempts: the job's worker dies more often than
// the job's MaxAttempts, under the same worker ID each time; the Extractor
// never fails, so the next live worker completes the job.
func TestDeadWorkersDoNotUseAttempts(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const maxAttempts = 2
		job := e.enqueueLimits(maxAttempts, 10)
		for range maxAttempts + 2 {
			killWorker(t, e, "worker-a")
		}
		if got := e.job(job.ID); got.State != memorykit.JobQueued || got.Reaps != maxAttempts+2 || got.Failures != 0 {
			t.Fatalf("after the deaths: state %s reaps %d failures %d", got.State, got.Reaps, got.Failures)
		}
		w := e.worker(e.config("worker-a", newExtractor(e.Clock)))
		if r := runOnce(t, w); r.Completed != 1 {
			t.Fatalf("round = %+v, want one completed", r)
		}
		if got := e.job(job.ID); got.State != memorykit.JobDone || got.Attempt != maxAttempts+3 {
			t.Fatalf("job = state %s attempt %d", got.State, got.Attempt)
		}
		if n := len(e.candidates()); n != 2 {
			t.Fatalf("%d candidates, want 2", n)
		}
	})
}

// TestPoisonJobThatKillsItsWorkerEnds: a job that kills every worker that
// takes it ends failed (lease_expired) after MaxReaps reaps, with its
// MaxAttempts untouched, and is never leased again.
func TestPoisonJobThatKillsItsWorkerEnds(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueueLimits(5, 3)
		for range 3 {
			killWorker(t, e, "worker-a")
		}
		got := e.job(job.ID)
		if got.State != memorykit.JobFailed || got.LastError != memorykit.ReasonLeaseExpired || got.Payload != "" || got.Failures != 0 {
			t.Fatalf("job = state %s last error %q failures %d payload %d bytes", got.State, got.LastError, got.Failures, len(got.Payload))
		}
		w := e.worker(e.config("worker-b", newExtractor(e.Clock)))
		if r := runOnce(t, w); r.Completed != 0 || r.Leased != 0 {
			t.Fatalf("round = %+v, want nothing leased", r)
		}
	})
}
