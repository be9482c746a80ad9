package extractworker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testkit"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/supervisor"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	envDSN     = "MEMORYKIT_POSTGRES_TEST_DSN"
	envRequire = "MEMORYKIT_REQUIRE_POSTGRES"
)

// testDSN returns the PostgreSQL test DSN, skipping the test without one
// (failing it when MEMORYKIT_REQUIRE_POSTGRES=1).
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		if os.Getenv(envRequire) == "1" {
			t.Fatalf("%s=1 but %s is not set", envRequire, envDSN)
		}
		t.Skipf("%s is not set: skipping the PostgreSQL test (set it, and %s=1 to make a missing database fail)", envDSN, envRequire)
	}
	return dsn
}

// withAppName tags a DSN's connections with an application_name, so a test
// can terminate exactly its own backends.
func withAppName(t testing.TB, dsn, app string) string {
	t.Helper()
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("test DSN does not parse as a URL")
		}
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " application_name=" + app
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// pgDB is one test's PostgreSQL schema; every Store opened on it tags its
// connections with app.
type pgDB struct {
	dsn, schema, app string
}

func newPGDB(t *testing.T) *pgDB {
	t.Helper()
	dsn := testDSN(t)
	db := &pgDB{dsn: dsn, schema: randomName("mk_xw_"), app: randomName("mk_xw_app_")}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema: connect failed")
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+db.schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", db.schema, err)
		}
	})
	return db
}

// open opens a Store (with its own pool) on the test's schema.
func (db *pgDB) open(t *testing.T, clk clock.Clock) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), withAppName(t, db.dsn, db.app),
		pgstore.Config{Clock: clk, Guard: testkit.NewGuard(t), Schema: db.schema, MaxConns: 4})
	if err != nil {
		if os.Getenv(envRequire) == "1" || !errors.Is(err, memorykit.ErrUnavailable) {
			t.Fatalf("open pgstore: %v", err)
		}
		t.Skipf("open pgstore: %v (set %s=1 to fail instead)", err, envRequire)
	}
	t.Cleanup(s.Close)
	return s
}

// terminate kills every backend of the test's stores from a separate
// connection, the way a database restart or failover would.
func (db *pgDB) terminate(t testing.TB) int {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		t.Errorf("terminate: connect failed")
		return 0
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1`, db.app).Scan(&n)
	if err != nil {
		t.Errorf("terminate backends: %v", err)
	}
	return n
}

// env is one test's store, clock, scope, events and logs.
type env struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Mock
	store memorykit.Store
	guard *memorykit.WriteGuard
	scope memorykit.Scope
	sink  *sink
	logs  *observer.ObservedLogs
	log   *zap.Logger
	pg    *pgDB // nil for memorystore
}

// eachStore runs fn as a subtest on memorystore and on pgstore.
func eachStore(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("memorystore", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.store = testkit.MemStore(t, e.clk)
		fn(t, e)
	})
	t.Run("pgstore", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.pg = newPGDB(t)
		e.store = e.pg.open(t, e.clk)
		fn(t, e)
	})
}

// pgOnly runs fn on pgstore.
func pgOnly(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.pg = newPGDB(t)
	e.store = e.pg.open(t, e.clk)
	return e
}

func newEnv(t *testing.T) *env {
	core, logs := observer.New(zapcore.DebugLevel)
	return &env{
		t: t, ctx: context.Background(), clk: testkit.NewClock(), guard: testkit.NewGuard(t),
		scope: testkit.Scope(t, "tenant-a", "project-1"), sink: &sink{},
		logs: logs, log: zap.New(core),
	}
}

// sink records events and lets a test wait for them.
type sink struct {
	testkit.Sink
	mu      sync.Mutex
	waiters []*waiter
}

type waiter struct {
	kind memorykit.EventKind
	n    int
	seen int
	done chan struct{}
}

// Emit implements memorykit.EventSink.
func (s *sink) Emit(e memorykit.Event) {
	s.Sink.Emit(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiters {
		if w.kind == e.Kind {
			w.seen++
			if w.seen == w.n {
				close(w.done)
			}
		}
	}
}

// after returns a channel closed once n more events of kind have arrived.
func (s *sink) after(kind memorykit.EventKind, n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &waiter{kind: kind, n: n, done: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	return w.done
}

// await fails the test if ch is not closed within a generous real-time
// bound: a failsafe against a hung test, not a wait for work.
func await(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(2 * time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// noContent fails the test if canary appears in any log entry or event.
func (e *env) noContent(canary string) {
	e.t.Helper()
	for _, l := range e.logs.All() {
		line := l.Message + " " + fmt.Sprint(l.ContextMap()) + " " + l.LoggerName
		if strings.Contains(line, canary) {
			e.t.Errorf("log entry carries content: %q", l.Message)
		}
	}
	e.sink.AssertNoCanary(e.t, canary)
}

// policy values shared by the tests.
var (
	retry        = extractworker.Backoff{Initial: 10 * time.Second, Max: time.Minute, Multiplier: 3}
	storeBackoff = extractworker.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}
)

const (
	leaseTTL     = 10 * time.Minute
	jobDeadline  = time.Minute
	pollInterval = 5 * time.Second
)

// config returns a valid worker Config on e.
func (e *env) config(id string, x memorykit.Extractor) extractworker.Config {
	return extractworker.Config{
		Store: e.store, Extractor: x, Guard: e.guard, Clock: e.clk, Logger: e.log, Events: e.sink,
		WorkerID: id, LeaseTTL: leaseTTL, BatchSize: 4, PollInterval: pollInterval,
		JobDeadline: jobDeadline, Retry: retry, StoreBackoff: storeBackoff, HandBackTimeout: 5 * time.Second,
	}
}

func (e *env) worker(cfg extractworker.Config) *extractworker.Worker {
	e.t.Helper()
	w, err := extractworker.New(cfg)
	if err != nil {
		e.t.Fatalf("extractworker.New: %v", err)
	}
	return w
}

func (e *env) reaper(onWait func(supervisor.Wait)) *extractworker.Reaper {
	e.t.Helper()
	r, err := extractworker.NewReaper(extractworker.ReaperConfig{
		Store: e.store, Clock: e.clk, Logger: e.log, Events: e.sink,
		Interval: 30 * time.Second, StoreBackoff: storeBackoff, OnWait: onWait,
	})
	if err != nil {
		e.t.Fatalf("NewReaper: %v", err)
	}
	return r
}

// enqueue stores n jobs with deterministic identities and returns them.
func (e *env) enqueue(n, maxAttempts int, payload func(i int) string) []memorykit.Job {
	e.t.Helper()
	jobs := make([]memorykit.Job, n)
	for i := range jobs {
		j, err := e.store.EnqueueJob(e.ctx, memorykit.NewJob{
			ID:    memorykit.ExtractionJobID(e.scope, fmt.Sprintf("run-%d/turn-1", i)),
			Scope: e.scope, Payload: payload(i), MaxAttempts: maxAttempts,
		})
		if err != nil {
			e.t.Fatalf("enqueue %d: %v", i, err)
		}
		jobs[i] = j
	}
	return jobs
}

func turnPayload(i int) string { return fmt.Sprintf("the team agreed on plan %d during the turn", i) }

func (e *env) job(id string) memorykit.Job {
	e.t.Helper()
	j, err := e.store.GetJob(e.ctx, e.scope, id)
	if err != nil {
		e.t.Fatalf("GetJob: %v", err)
	}
	return j
}

// candidates lists every candidate record in e's scope.
func (e *env) candidates() []memorykit.Record {
	e.t.Helper()
	var out []memorykit.Record
	after := ""
	for {
		page, err := e.store.List(e.ctx, memorykit.ListFilter{
			Scope: e.scope, Statuses: []memorykit.Status{memorykit.StatusCandidate}, Limit: 100, AfterID: after,
		})
		if err != nil {
			e.t.Fatalf("List: %v", err)
		}
		out = append(out, page...)
		if len(page) < 100 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

func (e *env) counts() memorykit.JobCounts {
	e.t.Helper()
	c, err := e.store.CountJobs(e.ctx)
	if err != nil {
		e.t.Fatalf("CountJobs: %v", err)
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

// driver advances a mock clock only when every actor it watches is
// waiting on that clock, to the earliest instant one of them waits for. No
// actor is ever mid-work when time moves, so leases never expire under a
// live worker, and no test sleeps.
type driver struct {
	clk  *clock.Mock
	want int

	mu   sync.Mutex
	wake map[string]time.Time
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newDriver(t *testing.T, clk *clock.Mock, actors int) *driver {
	d := &driver{
		clk: clk, want: actors, wake: make(map[string]time.Time),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go d.loop()
	t.Cleanup(d.halt)
	return d
}

// hook returns an OnWait hook reporting actor name.
func (d *driver) hook(name string) func(supervisor.Wait) {
	return func(w supervisor.Wait) { d.armed(name, w.Delay) }
}

// onBackoff is a supervisor OnBackoffArmed hook.
func (d *driver) onBackoff(name string, _ int, delay time.Duration) { d.armed(name, delay) }

func (d *driver) armed(name string, delay time.Duration) {
	d.mu.Lock()
	d.wake[name] = d.clk.Now().Add(delay)
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *driver) loop() {
	defer close(d.done)
	for {
		select {
		case <-d.stop:
			return
		case <-d.kick:
		}
		for {
			select {
			case <-d.stop:
				return
			default:
			}
			d.mu.Lock()
			if len(d.wake) < d.want {
				d.mu.Unlock()
				break
			}
			var next time.Time
			for _, at := range d.wake {
				if next.IsZero() || at.Before(next) {
					next = at
				}
			}
			for name, at := range d.wake {
				if !at.After(next) {
					delete(d.wake, name)
				}
			}
			now := d.clk.Now()
			d.mu.Unlock()
			d.clk.Add(next.Sub(now))
		}
	}
}

// halt stops the driver; it is idempotent.
func (d *driver) halt() {
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	<-d.done
}

// newSupervisor builds a supervisor on e's clock whose backoff waits are
// reported to d.
func (e *env) newSupervisor(d *driver, actors ...supervisor.Actor) *supervisor.Supervisor {
	e.t.Helper()
	cfg := supervisor.Config{
		Clock: e.clk, Logger: e.log, Events: e.sink,
		Backoff: supervisor.BackoffPolicy{Initial: time.Second, Max: time.Minute, Multiplier: 2, MaxRestarts: 5},
	}
	if d != nil {
		cfg.OnBackoffArmed = d.onBackoff
	}
	s, err := supervisor.New(cfg, actors...)
	if err != nil {
		e.t.Fatalf("supervisor.New: %v", err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			e.t.Errorf("Stop: %v", err)
		}
	})
	return s
}

// faultStore wraps a Store and can fail chosen calls.
type faultStore struct {
	memorykit.Store
	mu       sync.Mutex
	failNext map[string]int // method -> calls left to fail
	err      error
}

func newFaultStore(s memorykit.Store) *faultStore {
	return &faultStore{Store: s, failNext: make(map[string]int)}
}

// failCalls makes the next n calls of method fail with err.
func (f *faultStore) failCalls(method string, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[method] = n
	f.err = err
}

func (f *faultStore) fault(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failNext[method] > 0 {
		f.failNext[method]--
		return f.err
	}
	return nil
}

func (f *faultStore) LeaseJobs(ctx context.Context, p memorykit.JobLease) ([]memorykit.Job, error) {
	if err := f.fault("LeaseJobs"); err != nil {
		return nil, err
	}
	return f.Store.LeaseJobs(ctx, p)
}

func (f *faultStore) CompleteJob(ctx context.Context, c memorykit.JobCompletion) (int, error) {
	if err := f.fault("CompleteJob"); err != nil {
		return 0, err
	}
	return f.Store.CompleteJob(ctx, c)
}

func (f *faultStore) FailJob(ctx context.Context, fl memorykit.JobFailure) (memorykit.Job, error) {
	if err := f.fault("FailJob"); err != nil {
		return memorykit.Job{}, err
	}
	return f.Store.FailJob(ctx, fl)
}

func (f *faultStore) ReleaseJob(ctx context.Context, jobID, workerID string) error {
	if err := f.fault("ReleaseJob"); err != nil {
		return err
	}
	return f.Store.ReleaseJob(ctx, jobID, workerID)
}

func (f *faultStore) EnqueueJob(ctx context.Context, j memorykit.NewJob) (memorykit.Job, error) {
	if err := f.fault("EnqueueJob"); err != nil {
		return memorykit.Job{}, err
	}
	return f.Store.EnqueueJob(ctx, j)
}

func (f *faultStore) ReapJobLeases(ctx context.Context) (int, error) {
	if err := f.fault("ReapJobLeases"); err != nil {
		return 0, err
	}
	return f.Store.ReapJobLeases(ctx)
}

// dbDown is a recoverable store error like the one a lost connection gives.
var dbDown = &memorykit.Error{Op: "test.store", Kind: memorykit.ErrUnavailable, Reason: "connection_lost", Retry: true}

// wantKind fails unless err is a *memorykit.Error matching kind.
func wantKind(t testing.TB, err, kind error) *memorykit.Error {
	t.Helper()
	var me *memorykit.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *memorykit.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want kind %v", err, kind)
	}
	return me
}

// newFaultStoreOn wraps a fresh memorystore in a faultStore.
func newFaultStoreOn(t *testing.T, e *env) *faultStore {
	return newFaultStore(testkit.MemStore(t, e.clk))
}
