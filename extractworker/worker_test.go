package extractworker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
	"github.com/goagents/memorykit/supervisor"
)

func runOnce(t *testing.T, w *extractworker.Worker) extractworker.Round {
	t.Helper()
	r, err := w.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return r
}

// TestCompleteStoresCandidates: a job's proposals become candidate records
// with deterministic identities, hidden from recall, and the job keeps only
// a content-free tombstone.
func TestCompleteStoresCandidates(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		jobs := e.enqueue(3, 3, turnPayload)
		x := newExtractor(e.Clock)
		w := e.worker(e.config("worker-a", x))

		r := runOnce(t, w)
		if r.Leased != 3 || r.Completed != 3 || r.Candidates != 6 {
			t.Fatalf("round = %+v, want 3 leased, 3 completed, 6 candidates", r)
		}
		cands := e.candidates()
		if len(cands) != 6 {
			t.Fatalf("%d candidates, want 6", len(cands))
		}
		byID := make(map[string]memorykit.Record)
		for _, c := range cands {
			byID[c.ID] = c
		}
		for _, j := range jobs {
			for _, p := range proposals(memorykit.ExtractionInput{JobID: j.ID, Payload: j.Payload}) {
				id := storekit.CandidateID(e.Scope, j.ID, p.Kind, storekit.NormalizeKey(p.Key))
				c, ok := byID[id]
				if !ok {
					t.Fatalf("candidate %s for job %s missing", id, j.ID)
				}
				if c.Status != memorykit.StatusCandidate || c.Content != p.Content || c.Key != storekit.NormalizeKey(p.Key) {
					t.Errorf("candidate %s = status %s key %q content %q", id, c.Status, c.Key, c.Content)
				}
				if c.CreatedBy != (memorykit.Actor{Kind: memorykit.ActorWorker, ID: "worker-a"}) {
					t.Errorf("candidate author = %+v", c.CreatedBy)
				}
			}
			got := e.job(j.ID)
			if got.State != storekit.JobDone || got.Payload != "" || got.Candidates != 2 || got.LeasedBy != "" {
				t.Errorf("job %s = state %s payload %q candidates %d leased by %q", j.ID, got.State, got.Payload, got.Candidates, got.LeasedBy)
			}
		}
		// Candidates never reach recall.
		res, err := e.store.Recall(e.Ctx, storekit.RecallQuery{
			Scope: e.Scope, Terms: storekit.SearchTerms("plan team agreed", 16), ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5,
		})
		if err != nil {
			t.Fatalf("Recall: %v", err)
		}
		if len(res.FullText) != 0 || len(res.Records) != 0 {
			t.Fatalf("recall returned candidates: %+v", res.FullText)
		}
		if n := len(e.Sink.OfKind(memorykit.EventJobCompleted)); n != 3 {
			t.Fatalf("%d job.completed events, want 3", n)
		}
		for _, ev := range e.Sink.OfKind(memorykit.EventJobCompleted) {
			if ev.Count != 2 || len(ev.RecordIDs) != 2 || ev.WorkerID != "worker-a" || ev.TenantID != "tenant-a" {
				t.Errorf("completion event = %+v", ev)
			}
		}
		// Nothing is left to lease.
		if r := runOnce(t, w); r.Leased != 0 {
			t.Fatalf("second round leased %d", r.Leased)
		}
	})
}

// TestRetryInstants: a job whose Extractor keeps failing recoverably is
// tried exactly MaxAttempts times, each at the instant the retry policy
// gives (never a microsecond early), then ends as a content-free failed
// tombstone with one EventJobFailed.
func TestRetryInstants(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const maxAttempts = 4
		job := e.enqueue(1, maxAttempts, turnPayload)[0]
		x := newExtractor(e.Clock)
		x.fn = func(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			return nil, memorykit.Recoverable(&memorykit.Error{Op: "test.provider", Kind: memorykit.ErrUnavailable, Reason: "provider_busy"})
		}
		w := e.worker(e.config("worker-a", x))

		t0 := e.Clock.Now()
		// Initial 10s, x3, capped at 60s: 10s, 30s, 60s.
		want := []time.Time{t0, t0.Add(10 * time.Second), t0.Add(40 * time.Second), t0.Add(100 * time.Second)}
		for i, at := range want {
			if i > 0 {
				e.Clock.Set(at.Add(-time.Microsecond))
				if r := runOnce(t, w); r.Leased != 0 {
					t.Fatalf("attempt %d leased %s early", i+1, time.Microsecond)
				}
				e.Clock.Set(at)
			}
			r := runOnce(t, w)
			if r.Leased != 1 {
				t.Fatalf("attempt %d: leased %d at its instant", i+1, r.Leased)
			}
			if i < maxAttempts-1 && r.Retried != 1 || i == maxAttempts-1 && r.Failed != 1 {
				t.Fatalf("attempt %d: round %+v", i+1, r)
			}
		}
		calls := x.callsFor(job.ID)
		if len(calls) != maxAttempts {
			t.Fatalf("Extract called %d times, want %d", len(calls), maxAttempts)
		}
		for i := range want {
			if !calls[i].Equal(want[i]) {
				t.Errorf("attempt %d at %v, want %v", i+1, calls[i].Sub(t0), want[i].Sub(t0))
			}
		}
		e.Clock.Add(time.Hour)
		if r := runOnce(t, w); r.Leased != 0 {
			t.Fatalf("failed job leased again")
		}
		got := e.job(job.ID)
		if got.State != storekit.JobFailed || got.Payload != "" || got.Attempt != maxAttempts || got.LastError != "provider_busy" {
			t.Fatalf("job = state %s payload %q attempt %d last error %q", got.State, got.Payload, got.Attempt, got.LastError)
		}
		if n := len(e.Sink.OfKind(memorykit.EventJobFailed)); n != 1 {
			t.Fatalf("%d job.failed events, want 1", n)
		}
		retries := e.Sink.OfKind(memorykit.EventJobRetry)
		if len(retries) != maxAttempts-1 {
			t.Fatalf("%d job.retry events, want %d", len(retries), maxAttempts-1)
		}
		for i, ev := range retries {
			if ev.Attempt != i+1 || ev.Reason != "provider_busy" || ev.JobID != job.ID {
				t.Errorf("retry event %d = %+v", i, ev)
			}
		}
		if len(e.candidates()) != 0 {
			t.Fatal("a failed job stored candidates")
		}
	})
}

// TestNonRecoverableFailsAtOnce: a non-recoverable Extractor error fails
// the job for good on its first attempt.
func TestNonRecoverableFailsAtOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueue(1, 5, turnPayload)[0]
		x := newExtractor(e.Clock)
		x.fn = func(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			return nil, &memorykit.Error{Op: "test.provider", Kind: memorykit.ErrForbidden, Reason: "model_refused"}
		}
		w := e.worker(e.config("worker-a", x))
		if r := runOnce(t, w); r.Failed != 1 {
			t.Fatalf("round = %+v, want one failed", r)
		}
		got := e.job(job.ID)
		if got.State != storekit.JobFailed || got.Attempt != 1 || got.LastError != "model_refused" || got.Payload != "" {
			t.Fatalf("job = %+v", got)
		}
		if evs := e.Sink.OfKind(memorykit.EventJobFailed); len(evs) != 1 || evs[0].Reason != "model_refused" {
			t.Fatalf("job.failed events = %+v", evs)
		}
	})
}

// TestJobDeadline: the per-job deadline is measured on the injected
// clock; an Extractor that overruns it fails the attempt with reason
// "deadline", and its late answer is not stored.
func TestJobDeadline(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueue(1, 3, turnPayload)[0]
		entered := make(chan struct{})
		x := newExtractor(e.Clock)
		x.fn = func(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			close(entered)
			<-ctx.Done() // a slow provider that honours its context
			return proposals(in), nil
		}
		w := e.worker(e.config("worker-a", x))
		done := make(chan extractworker.Round)
		go func() {
			r, _ := w.RunOnce(context.Background())
			done <- r
		}()
		<-entered
		e.Clock.Add(jobDeadline - time.Millisecond)
		select {
		case <-done:
			t.Fatal("the worker gave up before the deadline")
		default:
		}
		e.Clock.Add(time.Millisecond)
		r := <-done
		if r.Retried != 1 {
			t.Fatalf("round = %+v, want one retried", r)
		}
		got := e.job(job.ID)
		if got.State != storekit.JobQueued || got.LastError != extractworker.ReasonDeadline {
			t.Fatalf("job = state %s last error %q", got.State, got.LastError)
		}
		if want := e.Clock.Now().Add(retry.Initial).Truncate(time.Microsecond); !got.AvailableAt.Equal(want) {
			t.Fatalf("retry at %v, want %v", got.AvailableAt, want)
		}
		if len(e.candidates()) != 0 {
			t.Fatal("a late answer was stored")
		}
	})
}

// TestInvalidProposalFailsClosed: one bad proposal among good ones fails
// the attempt, stores nothing, and is reported with EventCandidateInvalid.
func TestInvalidProposalFailsClosed(t *testing.T) {
	bad := map[string]func(p *memorykit.Proposal){
		"unknown_kind":       func(p *memorykit.Proposal) { p.Kind = "gossip" },
		"empty_key":          func(p *memorykit.Proposal) { p.Key = "  " },
		"empty_content":      func(p *memorykit.Proposal) { p.Content = "" },
		"content_too_long":   func(p *memorykit.Proposal) { p.Content = strings.Repeat("x", storetest.Limits().MaxContentBytes+1) },
		"validator_rejects":  func(p *memorykit.Proposal) { p.Content = "contains " + testkit.RejectMarker },
		"nul_byte":           func(p *memorykit.Proposal) { p.Content = "a\x00b" },
		"bad_metadata_key":   func(p *memorykit.Proposal) { p.Metadata = map[string]string{"Bad Key": "v"} },
		"source_without_ref": func(p *memorykit.Proposal) { p.Sources = []memorykit.Source{{Kind: "conversation"}} },
		"duplicate_key":      func(p *memorykit.Proposal) { p.Kind, p.Key = memorykit.KindDecision, "PLAN  "+p.Key[5:] },
	}
	eachStore(t, func(t *testing.T, e *env) {
		for name, mutate := range bad {
			t.Run(name, func(t *testing.T) {
				x := newExtractor(e.Clock)
				x.fn = func(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
					ps := proposals(in)
					mutate(&ps[1])
					return ps, nil
				}
				before := len(e.Sink.OfKind(memorykit.EventCandidateInvalid))
				job, err := e.store.EnqueueJob(e.Ctx, storekit.NewJob{
					ID: storekit.ExtractionJobID(e.Scope, "bad/"+name), Scope: e.Scope, Payload: "turn text", MaxAttempts: 2, MaxReaps: 2,
				})
				if err != nil {
					t.Fatal(err)
				}
				w := e.worker(e.config("worker-"+strings.ReplaceAll(name, "_", "-"), x))
				if r := runOnce(t, w); r.Retried != 1 || r.Candidates != 0 {
					t.Fatalf("round = %+v, want the attempt failed", r)
				}
				got := e.job(job.ID)
				if got.State != storekit.JobQueued || got.LastError != extractworker.ReasonInvalidCandidate {
					t.Fatalf("job = state %s last error %q", got.State, got.LastError)
				}
				if n := len(e.candidates()); n != 0 {
					t.Fatalf("%d candidates stored from an invalid proposal set", n)
				}
				evs := e.Sink.OfKind(memorykit.EventCandidateInvalid)
				if len(evs) != before+1 || evs[len(evs)-1].JobID != job.ID || evs[len(evs)-1].Count != 2 {
					t.Fatalf("candidate.invalid events = %+v", evs[before:])
				}
				// Finish the job so later subtests start from an empty queue.
				e.Clock.Add(time.Hour)
				if r := runOnce(t, w); r.Failed != 1 {
					t.Fatalf("second attempt: round = %+v, want failed", r)
				}
			})
		}
	})
}

// TestStoreRejectsWhatTheGuardMissed: when the store's own guard refuses a
// completion the worker's guard accepted (a stricter store policy), the
// attempt fails closed.
func TestStoreRejectsWhatTheGuardMissed(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueue(1, 2, turnPayload)[0]
		x := newExtractor(e.Clock)
		x.fn = func(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			ps := proposals(in)
			ps[0].Content = "secret " + testkit.RejectMarker
			return ps, nil
		}
		cfg := e.config("worker-a", x)
		lenient, err := memorykit.NewWriteGuard(storetest.Limits(), testkit.Validator{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Guard = lenient
		w := e.worker(cfg)
		if r := runOnce(t, w); r.Retried != 1 || r.Completed != 0 {
			t.Fatalf("round = %+v", r)
		}
		if got := e.job(job.ID); got.LastError != extractworker.ReasonInvalidCandidate || got.State != storekit.JobQueued {
			t.Fatalf("job = %+v", got)
		}
		if len(e.candidates()) != 0 || len(e.Sink.OfKind(memorykit.EventCandidateInvalid)) != 1 {
			t.Fatal("a refused completion stored candidates or was not reported")
		}
	})
}

// TestPanicLeavesLeaseForReaper: a worker whose Extractor panics dies
// holding its lease. Once the clock passes the lease, the reaper returns
// the job (counting the attempt) and a second worker with another identity
// completes it: its candidates exist exactly once.
func TestPanicLeavesLeaseForReaper(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		jobs := e.enqueue(2, 3, turnPayload)
		crashing := newExtractor(e.Clock)
		crashing.fn = func(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			if in.JobID == jobs[0].ID {
				panic(errors.New("provider client bug"))
			}
			return proposals(in), nil
		}
		a := e.worker(e.config("worker-a", crashing))
		v := func() (v any) {
			defer func() { v = recover() }()
			_, _ = a.RunOnce(context.Background())
			return nil
		}()
		p, ok := v.(extractworker.ExtractorPanic)
		if !ok || p.Type != "*errors.errorString" {
			t.Fatalf("RunOnce panicked with %#v, want an ExtractorPanic", v)
		}
		// The other job of the batch was still completed.
		if got := e.job(jobs[1].ID); got.State != storekit.JobDone {
			t.Fatalf("the healthy job = %s", got.State)
		}
		held := e.job(jobs[0].ID)
		if held.State != storekit.JobLeased || held.LeasedBy != "worker-a" || held.Attempt != 1 {
			t.Fatalf("crashed job = state %s by %q attempt %d", held.State, held.LeasedBy, held.Attempt)
		}

		reaper := e.reaper(nil)
		b := e.worker(e.config("worker-b", newExtractor(e.Clock)))
		e.Clock.Add(leaseTTL - time.Microsecond)
		if n, err := reaper.RunOnce(e.Ctx); err != nil || n.Jobs != 0 {
			t.Fatalf("reaped %+v (%v) before expiry", n, err)
		}
		if r := runOnce(t, b); r.Leased != 0 {
			t.Fatal("a held lease was leased again")
		}
		e.Clock.Add(time.Microsecond)
		if n, err := reaper.RunOnce(e.Ctx); err != nil || n.Jobs != 1 {
			t.Fatalf("reaped %+v (%v), want one job", n, err)
		}
		if evs := e.Sink.OfKind(memorykit.EventLeasesReaped); len(evs) != 1 || evs[0].Count != 1 || evs[0].Reason != extractworker.ReapedJobLeases {
			t.Fatalf("leases.reaped events = %+v", evs)
		}
		r := runOnce(t, b)
		if r.Completed != 1 || r.Candidates != 2 {
			t.Fatalf("second worker: round = %+v", r)
		}
		got := e.job(jobs[0].ID)
		if got.State != storekit.JobDone || got.Attempt != 2 {
			t.Fatalf("job = state %s attempt %d, want done on attempt 2", got.State, got.Attempt)
		}
		if n := len(e.candidates()); n != 4 {
			t.Fatalf("%d candidates, want 4 (two jobs, two each)", n)
		}
		if n := len(crashing.callsFor(jobs[0].ID)); n != 1 {
			t.Fatalf("crashed worker extracted %d times", n)
		}
	})
}

// TestWorkContextEndHandsBack: when the work context ends mid-job the
// worker hands its lease back without counting the attempt, and another
// worker completes the job exactly once.
func TestWorkContextEndHandsBack(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueue(1, 2, turnPayload)[0]
		entered := make(chan struct{})
		x := newExtractor(e.Clock)
		x.fn = func(ctx context.Context, _ memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		a := e.worker(e.config("worker-a", x))
		fetchCtx, drain := context.WithCancel(context.Background())
		workCtx, stop := context.WithCancel(context.Background())
		defer drain()
		defer stop()
		done := make(chan error)
		go func() { done <- a.Run(fetchCtx, workCtx) }()
		<-entered
		drain()
		stop()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		got := e.job(job.ID)
		if got.State != storekit.JobQueued || got.Attempt != 0 || got.LeasedBy != "" {
			t.Fatalf("handed-back job = state %s attempt %d by %q", got.State, got.Attempt, got.LeasedBy)
		}
		b := e.worker(e.config("worker-b", newExtractor(e.Clock)))
		if r := runOnce(t, b); r.Completed != 1 {
			t.Fatalf("round = %+v", r)
		}
		if got := e.job(job.ID); got.Attempt != 1 || got.State != storekit.JobDone {
			t.Fatalf("job = %+v", got)
		}
		if n := len(e.candidates()); n != 2 {
			t.Fatalf("%d candidates, want 2", n)
		}
	})
}

// TestKilledWorkerReaped: a worker that dies without handing back (here the
// hand-back itself fails, as when the process is killed) leaves its lease;
// after expiry the reaper returns the job and another worker completes it.
func TestKilledWorkerReaped(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueue(1, 3, turnPayload)[0]
		fs := newFaultStore(e.store)
		fs.FailCalls("ReleaseJob", 1, testkit.DBDown)
		entered := make(chan struct{})
		x := newExtractor(e.Clock)
		x.fn = func(ctx context.Context, _ memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		cfg := e.config("worker-a", x)
		cfg.Store = fs
		a := e.worker(cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan extractworker.Round)
		go func() {
			r, _ := a.RunOnce(ctx)
			done <- r
		}()
		<-entered
		cancel()
		if r := <-done; r.Abandoned != 1 {
			t.Fatalf("round = %+v, want one abandoned", r)
		}
		if got := e.job(job.ID); got.State != storekit.JobLeased || got.LeasedBy != "worker-a" {
			t.Fatalf("job = %+v", got)
		}
		e.Clock.Add(leaseTTL)
		if n, err := e.reaper(nil).RunOnce(e.Ctx); err != nil || n.Jobs != 1 {
			t.Fatalf("reaped %+v (%v)", n, err)
		}
		b := e.worker(e.config("worker-b", newExtractor(e.Clock)))
		if r := runOnce(t, b); r.Completed != 1 {
			t.Fatalf("round = %+v", r)
		}
		if got := e.job(job.ID); got.Attempt != 2 || got.State != storekit.JobDone {
			t.Fatalf("job = %+v", got)
		}
		if n := len(e.candidates()); n != 2 {
			t.Fatalf("%d candidates, want 2", n)
		}
	})
}

// TestRecoverableStoreErrorRetriedWithinLease: a completion that meets a
// recoverable store error is retried after StoreBackoff on the clock, with
// the lease still held, and lands exactly once.
func TestRecoverableStoreErrorRetriedWithinLease(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueue(1, 1, turnPayload)[0]
		fs := newFaultStore(e.store)
		fs.FailCalls("CompleteJob", 3, testkit.DBDown)
		waits := make(chan supervisor.Wait, 10)
		cfg := e.config("worker-a", newExtractor(e.Clock))
		cfg.Store = fs
		cfg.OnWait = func(w supervisor.Wait) { waits <- w }
		w := e.worker(cfg)
		done := make(chan extractworker.Round)
		go func() {
			r, _ := w.RunOnce(context.Background())
			done <- r
		}()
		for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
			got := <-waits
			if got.Reason != supervisor.WaitStoreRetry || got.Delay != want {
				t.Fatalf("wait %d = %+v, want store_retry %v", i, got, want)
			}
			e.Clock.Add(got.Delay)
		}
		if r := <-done; r.Completed != 1 || r.Candidates != 2 {
			t.Fatalf("round = %+v", r)
		}
		// MaxAttempts is 1: had the outage cost an attempt, the job would
		// have failed.
		if got := e.job(job.ID); got.State != storekit.JobDone || got.Attempt != 1 {
			t.Fatalf("job = %+v", got)
		}
		if n := len(e.candidates()); n != 2 {
			t.Fatalf("%d candidates", n)
		}
	})
}

// TestRunBacksOffOnRecoverableLeaseErrors: Run logs a recoverable lease
// error as a reason code and waits StoreBackoff on the clock, growing with
// consecutive failures, then works again; a non-recoverable error is
// returned to the supervisor.
func TestRunBacksOffOnRecoverableLeaseErrors(t *testing.T) {
	e := newEnv(t)
	e.store = testkit.MemStore(t, e.Clock)
	e.enqueue(1, 1, turnPayload)
	fs := newFaultStore(e.store)
	fs.FailCalls("LeaseJobs", 3, testkit.DBDown)
	waits := make(chan supervisor.Wait, 10)
	cfg := e.config("worker-a", newExtractor(e.Clock))
	cfg.Store = fs
	cfg.OnWait = func(w supervisor.Wait) { waits <- w }
	w := e.worker(cfg)
	fetchCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(fetchCtx, context.Background()) }()
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		got := <-waits
		if got.Reason != supervisor.WaitStoreBackoff || got.Delay != want {
			t.Fatalf("wait %d = %+v, want store_backoff %v", i, got, want)
		}
		e.Clock.Add(got.Delay)
	}
	if got := <-waits; got.Reason != supervisor.WaitIdle || got.Delay != pollInterval {
		t.Fatalf("after recovery: wait %+v, want idle", got)
	}
	if c := e.counts(); c.Done != 1 {
		t.Fatalf("counts = %+v", c)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := e.Logs.FilterMessage("lease failed; backing off").FilterField(zap.String("reason", "connection_lost")).Len(); n != 3 {
		t.Fatalf("%d backoff log entries with the reason code, want 3", n)
	}

	// A non-recoverable error ends Run with that error.
	fs.FailCalls("LeaseJobs", 1, &memorykit.Error{Op: "test.store", Kind: memorykit.ErrIntegrity, Reason: "broken"})
	err := w.Run(context.Background(), context.Background())
	testkit.WantKind(t, err, memorykit.ErrIntegrity)
}

// TestIdempotentCandidateIdentity: the same job completed after a retry
// proposes the same identities, and a candidate that already exists (for
// example from an earlier, lost completion) is not duplicated.
func TestIdempotentCandidateIdentity(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		job := e.enqueue(1, 3, turnPayload)[0]
		ps := proposals(memorykit.ExtractionInput{JobID: job.ID, Payload: job.Payload})
		// One candidate already exists with the identity the worker derives.
		_, err := e.store.Create(e.Ctx, memorykit.NewRecord{
			ID:    storekit.CandidateID(e.Scope, job.ID, ps[0].Kind, storekit.NormalizeKey(ps[0].Key)),
			Scope: e.Scope, Kind: ps[0].Kind, Key: ps[0].Key, Content: ps[0].Content, Sources: ps[0].Sources,
			Status: memorykit.StatusCandidate, Actor: memorykit.Actor{Kind: memorykit.ActorWorker, ID: "worker-z"},
		})
		if err != nil {
			t.Fatal(err)
		}
		w := e.worker(e.config("worker-a", newExtractor(e.Clock)))
		if r := runOnce(t, w); r.Completed != 1 || r.Candidates != 1 {
			t.Fatalf("round = %+v, want one new candidate", r)
		}
		if n := len(e.candidates()); n != 2 {
			t.Fatalf("%d candidates, want 2", n)
		}
	})
}

// TestManyJobsOneWorkerBatches: a batch is leased and extracted
// concurrently; every job ends done with its own candidates.
func TestManyJobsOneWorkerBatches(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		jobs := e.enqueue(10, 2, turnPayload)
		x := newExtractor(e.Clock)
		w := e.worker(e.config("worker-a", x))
		total := 0
		for i := 0; i < 10; i++ {
			r := runOnce(t, w)
			if r.Leased > 4 {
				t.Fatalf("leased %d, above the batch size", r.Leased)
			}
			if r.Leased == 0 {
				break
			}
			total += r.Completed
		}
		if total != len(jobs) {
			t.Fatalf("completed %d of %d", total, len(jobs))
		}
		calls, n := x.snapshot()
		if n != len(jobs) {
			t.Fatalf("%d Extract calls for %d jobs: %v", n, len(jobs), calls)
		}
		if got := len(e.candidates()); got != 2*len(jobs) {
			t.Fatalf("%d candidates", got)
		}
	})
}

// slowLeaseStore blocks LeaseJobs until its context ends, signalling once
// it is blocked.
type slowLeaseStore struct {
	storekit.Store
	blocked chan struct{}
}

func (s *slowLeaseStore) LeaseJobs(ctx context.Context, _ storekit.JobLease) ([]storekit.Job, error) {
	close(s.blocked)
	<-ctx.Done()
	return nil, memorykit.WrapError("test.lease_jobs", memorykit.ErrUnavailable, "context_done", ctx.Err())
}

// TestLeaseSlowerThanHandBackTimeoutIsRecoverable: a lease call the store
// does not answer within HandBackTimeout is cut off on the clock and
// reported as recoverable, so Run backs off instead of failing the actor.
func TestLeaseSlowerThanHandBackTimeoutIsRecoverable(t *testing.T) {
	e := newEnv(t)
	e.store = testkit.MemStore(t, e.Clock)
	slow := &slowLeaseStore{Store: e.store, blocked: make(chan struct{})}
	cfg := e.config("w1", newExtractor(e.Clock))
	cfg.Store = slow
	w := e.worker(cfg)
	done := make(chan error, 1)
	go func() {
		_, err := w.RunOnce(context.Background())
		done <- err
	}()
	<-slow.blocked
	e.Clock.Add(cfg.HandBackTimeout)
	err := <-done
	if err == nil || !memorykit.IsRecoverable(err) {
		t.Fatalf("RunOnce = %v, want a recoverable error", err)
	}
}
