package extractworker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

// TestRunRetryInstantsUnderSupervisor: the same exact-instant contract as
// TestRetryInstants, with the worker and the reaper running as supervised
// actors that poll on the mock clock.
func TestRunRetryInstantsUnderSupervisor(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const maxAttempts = 4
		job := e.enqueue(1, maxAttempts, turnPayload)[0]
		x := newExtractor(e.Clock)
		x.fn = func(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			return nil, memorykit.Recoverable(errors.New("rate limited"))
		}
		d := testkit.NewDriver(t, e.Clock, 2)
		cfg := e.config("worker-a", x)
		cfg.OnWait = d.Hook("worker")
		w := e.worker(cfg)
		failed := e.Sink.After(memorykit.EventJobFailed, 1)
		t0 := e.Clock.Now()
		sup := e.Supervisor(d, w, e.reaper(d.Hook("reaper")))
		if err := sup.Start(e.Ctx); err != nil {
			t.Fatal(err)
		}
		testkit.Await(t, failed, "the job's final failure")
		d.Halt()
		if err := sup.Drain(e.Ctx); err != nil {
			t.Fatalf("Drain: %v", err)
		}
		want := []time.Duration{0, 10 * time.Second, 40 * time.Second, 100 * time.Second}
		calls := x.callsFor(job.ID)
		if len(calls) != maxAttempts {
			t.Fatalf("Extract called %d times, want %d", len(calls), maxAttempts)
		}
		for i, at := range calls {
			if got := at.Sub(t0); got != want[i] {
				t.Errorf("attempt %d at +%v, want +%v", i+1, got, want[i])
			}
		}
		got := e.job(job.ID)
		if got.State != storekit.JobFailed || got.Payload != "" || got.LastError != "extractor_error_recoverable" {
			t.Fatalf("job = state %s payload %q last error %q", got.State, got.Payload, got.LastError)
		}
		if n := len(e.Sink.OfKind(memorykit.EventJobFailed)); n != 1 {
			t.Fatalf("%d job.failed events", n)
		}
	})
}

// gated makes x pass g before extracting as worker.
func gated(x *extractor, worker string, g *testkit.Gate) *extractor {
	x.fn = func(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
		if err := g.Pass(ctx, worker); err != nil {
			return nil, err
		}
		return proposals(in), nil
	}
	return x
}

// drainSetup starts a supervisor with two workers and the reaper over
// jobs queued jobs, and returns once both workers hold leased work at the
// gate.
func drainSetup(t *testing.T, e *env, jobs int) (*supervisor.Supervisor, *testkit.Gate, []*extractor, []storekit.Job) {
	queued := e.enqueue(jobs, 3, turnPayload)
	g := testkit.NewGate(40)
	xa, xb := gated(newExtractor(e.Clock), "a", g), gated(newExtractor(e.Clock), "b", g)
	ca, cb := e.config("worker-a", xa), e.config("worker-b", xb)
	ca.BatchSize, cb.BatchSize = 10, 10
	sup := e.Supervisor(nil, e.worker(ca), e.worker(cb), e.reaper(nil))
	if err := sup.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	g.WaitHeld(t, "a", "b")
	return sup, g, []*extractor{xa, xb}, queued
}

// checkNothingLost asserts every job is done (with its candidates, once) or
// queued, no lease is left, and no job was extracted twice. It returns the
// number of done jobs.
func checkNothingLost(t *testing.T, e *env, jobs []storekit.Job, xs []*extractor) int {
	t.Helper()
	c := e.counts()
	if c.Leased != 0 || c.Failed != 0 || c.Done+c.Queued != len(jobs) {
		t.Fatalf("counts = %+v, want every one of %d jobs done or queued", c, len(jobs))
	}
	calls := make(map[string]int)
	for _, x := range xs {
		m, _ := x.snapshot()
		for id, n := range m {
			calls[id] += n
		}
	}
	done := 0
	for _, j := range jobs {
		got := e.job(j.ID)
		if calls[j.ID] > 1 {
			t.Errorf("job %s extracted %d times", j.ID, calls[j.ID])
		}
		switch got.State {
		case storekit.JobDone:
			done++
			if calls[j.ID] != 1 || got.Candidates != 2 {
				t.Errorf("done job %s: %d calls, %d candidates", j.ID, calls[j.ID], got.Candidates)
			}
		case storekit.JobQueued:
			if got.Attempt != 0 || got.LeasedBy != "" {
				t.Errorf("queued job %s: attempt %d, leased by %q", j.ID, got.Attempt, got.LeasedBy)
			}
		}
	}
	if n := len(e.candidates()); n != 2*done {
		t.Fatalf("%d candidates for %d done jobs", n, done)
	}
	return done
}

// TestDrainFinishesInFlightWork: with hundreds of queued jobs and batches
// in flight, Drain stops intake, lets the in-flight batches finish, and
// returns; every job is done or still queued, no lease is held, and Stop
// leaves no goroutine (goleak in TestMain).
func TestDrainFinishesInFlightWork(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		sup, g, xs, jobs := drainSetup(t, e, 300)
		drained := testkit.DrainAsync(t, e.Ctx, sup, e.Sink)
		select {
		case err := <-drained:
			t.Fatalf("Drain returned (%v) while work was in flight", err)
		default:
		}
		g.Release()
		if err := <-drained; err != nil {
			t.Fatalf("Drain = %v", err)
		}
		if sup.State() != supervisor.StateDrained {
			t.Fatalf("state %s", sup.State())
		}
		done := checkNothingLost(t, e, jobs, xs)
		if done <= 40 || done == len(jobs) {
			t.Fatalf("%d jobs done: want the in-flight batches finished and the rest left queued", done)
		}
		if err := sup.Stop(e.Ctx); err != nil {
			t.Fatalf("Stop = %v", err)
		}
	})
}

// TestDrainDeadlineHandsBack: when Drain's context ends before in-flight
// work finishes, the work context is cancelled and the workers hand their
// leases back without counting the attempt.
func TestDrainDeadlineHandsBack(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		sup, _, xs, jobs := drainSetup(t, e, 200)
		ctx, cancel := context.WithCancel(e.Ctx)
		drained := testkit.DrainAsync(t, ctx, sup, e.Sink)
		cancel()
		err := <-drained
		testkit.WantKind(t, err, memorykit.ErrUnavailable)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Drain = %v, want context.Canceled inside", err)
		}
		// Jobs already past the gate may be handed back too: their
		// outcome is not stored once the work context has ended.
		if done := checkNothingLost(t, e, jobs, xs); done == len(jobs) {
			t.Fatalf("%d jobs done", done)
		}
		if n := e.Logs.FilterMessage("lease handed back").Len(); n == 0 {
			t.Fatal("no lease was handed back")
		}
		if err := sup.Stop(e.Ctx); err != nil {
			t.Fatalf("Stop = %v", err)
		}
	})
}

// TestPostgresTwoRuntimesShareOneQueue: two runtimes, each a supervisor
// with its own worker identity and its own pgstore.Store on the same
// schema, drain one queue together: every job is extracted and completed
// exactly once.
func TestPostgresTwoRuntimesShareOneQueue(t *testing.T) {
	t.Parallel()
	e := pgOnly(t)
	other := e.pg.Open(t, e.Clock)
	const n = 200
	jobs := e.enqueue(n, 3, turnPayload)

	// Each worker's first call waits until the other worker has called
	// too, so both runtimes provably take part.
	var mu sync.Mutex
	firsts := make(map[string]bool)
	both := make(chan struct{})
	meet := func(x *extractor, worker string) *extractor {
		x.fn = func(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			mu.Lock()
			first := !firsts[worker]
			firsts[worker] = true
			if len(firsts) == 2 && first {
				close(both)
			}
			mu.Unlock()
			if first {
				select {
				case <-both:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return proposals(in), nil
		}
		return x
	}
	xa, xb := meet(newExtractor(e.Clock), "a"), meet(newExtractor(e.Clock), "b")

	d := testkit.NewDriver(t, e.Clock, 4)
	ca := e.config("host-1.extract", xa)
	ca.OnWait = d.Hook("a/worker")
	cb := e.config("host-2.extract", xb)
	cb.Store, cb.OnWait = other, d.Hook("b/worker")
	ra, err := extractworker.NewReaper(extractworker.ReaperConfig{
		Store: e.store, Clock: e.Clock, Logger: e.Log, Events: e.Sink, Interval: 30 * time.Second,
		StoreBackoff: storeBackoff, OnWait: d.Hook("a/reaper"),
	})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := extractworker.NewReaper(extractworker.ReaperConfig{
		Store: other, Clock: e.Clock, Logger: e.Log, Events: e.Sink, Interval: 30 * time.Second,
		StoreBackoff: storeBackoff, OnWait: d.Hook("b/reaper"),
	})
	if err != nil {
		t.Fatal(err)
	}
	completed := e.Sink.After(memorykit.EventJobCompleted, n)
	supA := e.Supervisor(nil, e.worker(ca), ra)
	supB := e.Supervisor(nil, e.worker(cb), rb)
	if err := supA.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := supB.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Await(t, completed, "every job's completion")
	d.Halt()
	for _, s := range []*supervisor.Supervisor{supA, supB} {
		if err := s.Drain(e.Ctx); err != nil {
			t.Fatalf("Drain: %v", err)
		}
	}

	ma, na := xa.snapshot()
	mb, nb := xb.snapshot()
	if na == 0 || nb == 0 || na+nb != n {
		t.Fatalf("Extract calls: runtime A %d, runtime B %d, want both > 0 and %d in all", na, nb, n)
	}
	for _, j := range jobs {
		if c := ma[j.ID] + mb[j.ID]; c != 1 {
			t.Errorf("job %s extracted %d times", j.ID, c)
		}
	}
	if c := e.counts(); c.Done != n || c.Queued+c.Leased+c.Failed != 0 {
		t.Fatalf("counts = %+v", c)
	}
	if got := len(e.candidates()); got != 2*n {
		t.Fatalf("%d candidates, want %d", got, 2*n)
	}
	t.Logf("runtime A extracted %d jobs, runtime B %d", na, nb)
}

// TestPostgresOutage: PostgreSQL drops every connection of the runtime
// several times while the worker runs. The worker and the reaper see
// recoverable errors, back off on the clock, and finish once connections
// come back; nothing is lost or duplicated.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	e := pgOnly(t)
	const n = 60
	jobs := e.enqueue(n, 2, turnPayload)

	var mu sync.Mutex
	killed, storeWaits := 0, 0
	x := newExtractor(e.Clock)
	x.fn = func(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
		_, total := x.snapshot()
		if total%15 == 5 {
			k := e.pg.Terminate(t)
			mu.Lock()
			killed += k
			mu.Unlock()
		}
		return proposals(in), nil
	}
	d := testkit.NewDriver(t, e.Clock, 2)
	count := func(hook func(supervisor.Wait)) func(supervisor.Wait) {
		return func(w supervisor.Wait) {
			if w.Reason != supervisor.WaitIdle {
				mu.Lock()
				storeWaits++
				mu.Unlock()
			}
			hook(w)
		}
	}
	cfg := e.config("worker-a", x)
	cfg.BatchSize = 1
	cfg.OnWait = count(d.Hook("worker"))
	completed := e.Sink.After(memorykit.EventJobCompleted, n)
	sup := e.Supervisor(d, e.worker(cfg), e.reaper(count(d.Hook("reaper"))))
	if err := sup.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Await(t, completed, "every job's completion")
	d.Halt()
	if err := sup.Drain(e.Ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if killed == 0 {
		t.Fatal("no backend was terminated")
	}
	if storeWaits == 0 {
		t.Fatal("the workers never saw a recoverable store error")
	}
	calls, total := x.snapshot()
	if total != n {
		t.Fatalf("%d Extract calls for %d jobs", total, n)
	}
	for _, j := range jobs {
		if calls[j.ID] != 1 {
			t.Errorf("job %s extracted %d times", j.ID, calls[j.ID])
		}
	}
	if c := e.counts(); c.Done != n {
		t.Fatalf("counts = %+v", c)
	}
	if got := len(e.candidates()); got != 2*n {
		t.Fatalf("%d candidates, want %d", got, 2*n)
	}
	if e.Logs.FilterMessage("store unavailable; retrying").Len()+e.Logs.FilterMessage("lease failed; backing off").Len() == 0 {
		t.Fatal("no recoverable store error was logged")
	}
	t.Logf("terminated %d backends; %d store backoff waits", killed, storeWaits)
}

// TestReaperBacksOff: the reaper retries recoverable store errors after
// StoreBackoff and otherwise reaps every Interval.
func TestReaperBacksOff(t *testing.T) {
	e := newEnv(t)
	e.store = newFaultStoreOn(t, e)
	fs := e.store.(*faultStore)
	fs.FailCalls("ReapJobLeases", 2, testkit.DBDown)
	waits := make(chan supervisor.Wait, 10)
	r := e.reaper(func(w supervisor.Wait) { waits <- w })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, ctx) }()
	for i, want := range []supervisor.Wait{
		{Reason: supervisor.WaitStoreBackoff, Delay: 100 * time.Millisecond},
		{Reason: supervisor.WaitStoreBackoff, Delay: 200 * time.Millisecond},
		{Reason: supervisor.WaitIdle, Delay: 30 * time.Second},
		{Reason: supervisor.WaitIdle, Delay: 30 * time.Second},
	} {
		got := <-waits
		if got != want {
			t.Fatalf("wait %d = %+v, want %+v", i, got, want)
		}
		e.Clock.Add(got.Delay)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}
