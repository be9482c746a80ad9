package extractworker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// env is one test's harness (clock, scope, events, logs) and store.
type env struct {
	*testkit.Harness
	store storekit.Store
	pg    *testkit.DB // nil for memorystore
}

// eachStore runs fn as a parallel subtest on memorystore and on pgstore.
func eachStore(t *testing.T, fn func(t *testing.T, e *env)) {
	testkit.Each(t, func(t *testing.T, b testkit.Backend) { fn(t, newEnvOn(t, b)) })
}

// pgOnly returns an env on a fresh pgstore schema.
func pgOnly(t *testing.T) *env { return newEnvOn(t, testkit.Postgres(t)) }

// newEnv returns an env without a store.
func newEnv(t *testing.T) *env { return &env{Harness: testkit.NewHarness(t)} }

func newEnvOn(t *testing.T, b testkit.Backend) *env {
	e := newEnv(t)
	e.store, e.pg = b.Open(t, e.Clock), b.DB
	return e
}

// policy values shared by the tests.
var (
	retry        = memorykit.Backoff{Initial: 10 * time.Second, Max: time.Minute, Multiplier: 3}
	storeBackoff = memorykit.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}
)

const (
	leaseTTL     = 10 * time.Minute
	jobDeadline  = time.Minute
	pollInterval = 5 * time.Second
)

// config returns a valid worker Config on e.
func (e *env) config(id string, x memorykit.Extractor) extractworker.Config {
	return extractworker.Config{
		Store: e.store, Extractor: x, Guard: e.Guard, Clock: e.Clock, Logger: e.Log, Events: e.Sink,
		WorkerID: id, LeaseTTL: leaseTTL, BatchSize: 4, PollInterval: pollInterval,
		JobDeadline: jobDeadline, Retry: retry, StoreBackoff: storeBackoff, HandBackTimeout: 5 * time.Second,
	}
}

func (e *env) worker(cfg extractworker.Config) *extractworker.Worker {
	e.T.Helper()
	w, err := extractworker.New(cfg)
	if err != nil {
		e.T.Fatalf("extractworker.New: %v", err)
	}
	return w
}

func (e *env) reaper(onWait func(supervisor.Wait)) *extractworker.Reaper {
	e.T.Helper()
	r, err := extractworker.NewReaper(extractworker.ReaperConfig{
		Store: e.store, Clock: e.Clock, Logger: e.Log, Events: e.Sink,
		Interval: 30 * time.Second, StoreBackoff: storeBackoff, OnWait: onWait,
	})
	if err != nil {
		e.T.Fatalf("NewReaper: %v", err)
	}
	return r
}

// enqueue stores n jobs with deterministic identities and returns them.
func (e *env) enqueue(n, maxAttempts int, payload func(i int) string) []storekit.Job {
	e.T.Helper()
	jobs := make([]storekit.Job, n)
	for i := range jobs {
		j, err := e.store.EnqueueJob(e.Ctx, storekit.NewJob{
			ID:    storekit.ExtractionJobID(e.Scope, fmt.Sprintf("run-%d/turn-1", i)),
			Scope: e.Scope, Payload: payload(i), MaxAttempts: maxAttempts, MaxReaps: maxAttempts,
		})
		if err != nil {
			e.T.Fatalf("enqueue %d: %v", i, err)
		}
		jobs[i] = j
	}
	return jobs
}

func turnPayload(i int) string { return fmt.Sprintf("the team agreed on plan %d during the turn", i) }

func (e *env) job(id string) storekit.Job {
	e.T.Helper()
	j, err := e.store.GetJob(e.Ctx, e.Scope, id)
	if err != nil {
		e.T.Fatalf("GetJob: %v", err)
	}
	return j
}

// candidates lists every candidate record in e's scope.
func (e *env) candidates() []memorykit.Record {
	e.T.Helper()
	var out []memorykit.Record
	after := ""
	for {
		page, err := e.store.List(e.Ctx, storekit.ListFilter{
			Scope: e.Scope, Statuses: []memorykit.Status{memorykit.StatusCandidate}, Limit: 100, AfterID: after,
		})
		if err != nil {
			e.T.Fatalf("List: %v", err)
		}
		out = append(out, page...)
		if len(page) < 100 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

func (e *env) counts() storekit.JobCounts {
	e.T.Helper()
	c, err := e.store.CountJobs(e.Ctx)
	if err != nil {
		e.T.Fatalf("CountJobs: %v", err)
	}
	return c
}

// extractor is a scripted Extractor. It records every call's job and
// clock time; by default it proposes two memories per job.
type extractor struct {
	clk clock.Clock
	// fn, when set, replaces the default behaviour.
	fn func(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error)

	mu    sync.Mutex
	calls map[string][]time.Time
	total int
}

func newExtractor(clk clock.Clock) *extractor {
	return &extractor{clk: clk, calls: make(map[string][]time.Time)}
}

// Extract implements memorykit.Extractor.
func (x *extractor) Extract(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	x.mu.Lock()
	x.calls[in.JobID] = append(x.calls[in.JobID], x.clk.Now())
	x.total++
	fn := x.fn
	x.mu.Unlock()
	if fn != nil {
		return fn(ctx, in)
	}
	return proposals(in), nil
}

// proposals is the default, deterministic extraction of a job.
func proposals(in memorykit.ExtractionInput) []memorykit.Proposal {
	tag := in.JobID[len(in.JobID)-10:]
	return []memorykit.Proposal{
		{Kind: memorykit.KindDecision, Key: "Plan " + tag, Content: "decided: " + in.Payload,
			Sources: []memorykit.Source{{Kind: "conversation", Ref: in.JobID}}},
		{Kind: memorykit.KindFact, Key: "fact " + tag, Content: "noted: " + in.Payload,
			Metadata: map[string]string{"origin": "extraction"}},
	}
}

func (x *extractor) callsFor(id string) []time.Time {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]time.Time(nil), x.calls[id]...)
}

func (x *extractor) snapshot() (map[string]int, int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := make(map[string]int, len(x.calls))
	for k, v := range x.calls {
		m[k] = len(v)
	}
	return m, x.total
}

// faultStore wraps a Store and can fail chosen job calls.
type faultStore struct {
	storekit.Store
	testkit.Faults
}

func newFaultStore(s storekit.Store) *faultStore { return &faultStore{Store: s} }

func (f *faultStore) LeaseJobs(ctx context.Context, p storekit.JobLease) ([]storekit.Job, error) {
	if err := f.Fault("LeaseJobs"); err != nil {
		return nil, err
	}
	return f.Store.LeaseJobs(ctx, p)
}

func (f *faultStore) CompleteJob(ctx context.Context, c storekit.JobCompletion) (int, error) {
	if err := f.Fault("CompleteJob"); err != nil {
		return 0, err
	}
	return f.Store.CompleteJob(ctx, c)
}

func (f *faultStore) FailJob(ctx context.Context, fl storekit.JobFailure) (storekit.Job, error) {
	if err := f.Fault("FailJob"); err != nil {
		return storekit.Job{}, err
	}
	return f.Store.FailJob(ctx, fl)
}

func (f *faultStore) ReleaseJob(ctx context.Context, r storekit.JobRelease) error {
	if err := f.Fault("ReleaseJob"); err != nil {
		return err
	}
	return f.Store.ReleaseJob(ctx, r)
}

func (f *faultStore) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	if err := f.Fault("EnqueueJob"); err != nil {
		return storekit.Job{}, err
	}
	return f.Store.EnqueueJob(ctx, j)
}

func (f *faultStore) ReapJobLeases(ctx context.Context) (int, error) {
	if err := f.Fault("ReapJobLeases"); err != nil {
		return 0, err
	}
	return f.Store.ReapJobLeases(ctx)
}

// newFaultStoreOn wraps a fresh memorystore in a faultStore.
func newFaultStoreOn(t *testing.T, e *env) *faultStore {
	return newFaultStore(testkit.MemStore(t, e.Clock))
}
