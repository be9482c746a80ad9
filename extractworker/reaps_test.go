package extractworker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
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
func (e *env) enqueueLimits(maxAttempts, maxReaps int) storekit.Job {
	e.T.Helper()
	j, err := e.store.EnqueueJob(e.Ctx, storekit.NewJob{
		ID: storekit.ExtractionJobID(e.Scope, "run-0/turn-1"), Scope: e.Scope, Payload: turnPayload(0),
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
		if got := e.job(job.ID); got.State != storekit.JobQueued || got.Reaps != maxAttempts+2 || got.Failures != 0 {
			t.Fatalf("after the deaths: state %s reaps %d failures %d", got.State, got.Reaps, got.Failures)
		}
		w := e.worker(e.config("worker-a", newExtractor(e.Clock)))
		if r := runOnce(t, w); r.Completed != 1 {
			t.Fatalf("round = %+v, want one completed", r)
		}
		if got := e.job(job.ID); got.State != storekit.JobDone || got.Attempt != maxAttempts+3 {
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
		if got.State != storekit.JobFailed || got.LastError != storekit.ReasonLeaseExpired || got.Payload != "" || got.Failures != 0 {
			t.Fatalf("job = state %s last error %q failures %d payload %d bytes", got.State, got.LastError, got.Failures, len(got.Payload))
		}
		w := e.worker(e.config("worker-b", newExtractor(e.Clock)))
		if r := runOnce(t, w); r.Completed != 0 || r.Leased != 0 {
			t.Fatalf("round = %+v, want nothing leased", r)
		}
	})
}

// TestExtractorReasonRecordsKindAndRecoverability: a plain Extractor error
// no longer records the bare "error": the job's LastError says what kind of
// failure it was and whether it was recoverable.
func TestExtractorReasonRecordsKindAndRecoverability(t *testing.T) {
	plain := errors.New("model said no")
	for _, c := range []struct {
		err  error
		want string
	}{
		{plain, "extractor_error_final"},
		{memorykit.Recoverable(plain), "extractor_error_recoverable"},
		{testkit.DBDown, "connection_lost"}, // the Host's own reason code stays
		{memorykit.NewError("host.extract", memorykit.ErrForbidden, ""), "extractor_forbidden_final"},
		{context.DeadlineExceeded, "extractor_deadline_final"},
	} {
		got := extractworker.ExtractorReason(c.err)
		if got != c.want {
			t.Errorf("ExtractorReason(%v) = %q, want %q", c.err, got, c.want)
		}
		if err := storekit.CheckReasonCode("test", got); err != nil {
			t.Errorf("%q is not a reason code: %v", got, err)
		}
	}
	long := memorykit.NewError("host.extract", memorykit.ErrUnavailable, strings.Repeat("x", 65))
	if got := extractworker.ExtractorReason(long); got != "extractor_unavailable_final" {
		t.Errorf("an unusable reason gives %q", got)
	}
}

// TestPlainExtractorErrorRecordsItsKind: the job failed by a plain,
// non-recoverable Extractor error records extractor_error_final.
func TestPlainExtractorErrorRecordsItsKind(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueue(1, 3, turnPayload)[0]
		x := newExtractor(e.Clock)
		x.fn = func(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			return nil, errors.New("model refused")
		}
		if r := runOnce(t, e.worker(e.config("worker-a", x))); r.Failed != 1 {
			t.Fatalf("round = %+v", r)
		}
		if got := e.job(job.ID); got.State != storekit.JobFailed || got.LastError != "extractor_error_final" {
			t.Fatalf("job = state %s last error %q", got.State, got.LastError)
		}
	})
}

// TestHandledOutageLogsAWarning: an outcome the store cannot take because
// it is down (recoverably) until the lease runs out is a handled outage:
// logged at WARN, not ERROR, and counted.
func TestHandledOutageLogsAWarning(t *testing.T) {
	e := newEnv(t)
	e.store = testkit.MemStore(t, e.Clock)
	e.enqueue(1, 3, turnPayload)
	fs := newFaultStore(e.store)
	fs.FailCalls("CompleteJob", 1, testkit.DBDown)
	cfg := e.config("worker-a", newExtractor(e.Clock))
	cfg.Store = fs
	// The first store retry would end past the lease: give up at once.
	cfg.StoreBackoff = memorykit.Backoff{Initial: leaseTTL, Max: leaseTTL, Multiplier: 1}
	w := e.worker(cfg)
	if r := runOnce(t, w); r.Abandoned != 1 {
		t.Fatalf("round = %+v, want one abandoned", r)
	}
	if n := w.StoreOutages(); n != 1 {
		t.Fatalf("StoreOutages = %d, want 1", n)
	}
	msg := "could not store the job's outcome; the lease will expire"
	logs := e.Logs.FilterMessage(msg).All()
	if len(logs) != 1 || logs[0].Level != zapcore.WarnLevel {
		t.Fatalf("outage logs = %+v, want one WARN", logs)
	}
	if n := e.Logs.FilterLevelExact(zapcore.ErrorLevel).Len(); n != 0 {
		t.Fatalf("%d ERROR logs for a handled outage", n)
	}
}

// TestExtractorSeesTheRunRef: the Extractor gets the run reference the
// turn was enqueued with.
func TestExtractorSeesTheRunRef(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		res := e.enqueuer(e.store, testkit.NewAuthorizer().Grant("u1", e.Scope, memorykit.PermExtract)).Enqueue(e.Ctx, extractworker.Turn{
			Principal: testkit.Principal(e.Scope.TenantID, memorykit.ActorUser, "u1"), Scope: e.Scope,
			RunRef: "run-42/turn-3", Payload: turnPayload(0),
		})
		if res.Status != extractworker.EnqueueQueued {
			t.Fatalf("enqueue = %+v", res)
		}
		var got string
		x := newExtractor(e.Clock)
		x.fn = func(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			got = in.RunRef
			return nil, nil
		}
		if r := runOnce(t, e.worker(e.config("worker-a", x))); r.Completed != 1 {
			t.Fatalf("round = %+v", r)
		}
		if got != "run-42/turn-3" {
			t.Fatalf("ExtractionInput.RunRef = %q", got)
		}
		if j := e.job(res.JobID); j.RunRef != "run-42/turn-3" {
			t.Fatalf("job RunRef = %q", j.RunRef)
		}
	})
}
