package embedworker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/embedworker"
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
	reaperBack   = memorykit.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}
)

const (
	leaseTTL      = 10 * time.Minute
	embedDeadline = 30 * time.Second
	pollInterval  = 5 * time.Second
)

// config returns a valid worker Config on e.
func (e *env) config(id string, emb memorykit.Embedder) embedworker.Config {
	return embedworker.Config{
		Store: e.store, Embedder: emb, Clock: e.Clock, Logger: e.Log, Events: e.Sink,
		WorkerID: id, LeaseTTL: leaseTTL, BatchSize: 10, PollInterval: pollInterval,
		EmbedDeadline: embedDeadline, Retry: retry, StoreBackoff: storeBackoff, HandBackTimeout: 5 * time.Second,
	}
}

func (e *env) worker(cfg embedworker.Config) *embedworker.Worker {
	e.T.Helper()
	w, err := embedworker.New(cfg)
	if err != nil {
		e.T.Fatalf("embedworker.New: %v", err)
	}
	return w
}

func (e *env) reaper(onWait func(supervisor.Wait)) *extractworker.Reaper {
	e.T.Helper()
	r, err := extractworker.NewReaper(extractworker.ReaperConfig{
		Store: e.store, Clock: e.Clock, Logger: e.Log, Events: e.Sink,
		Interval: 30 * time.Second, StoreBackoff: reaperBack, OnWait: onWait,
	})
	if err != nil {
		e.T.Fatalf("NewReaper: %v", err)
	}
	return r
}

var author = memorykit.Actor{Kind: memorykit.ActorUser, ID: "user-1"}

// create stores an active record in e's scope.
func (e *env) create(key, content string) memorykit.Record {
	e.T.Helper()
	r, err := e.store.Create(e.Ctx, memorykit.NewRecord{
		Scope: e.Scope, Kind: memorykit.KindFact, Key: key, Content: content,
		Status: memorykit.StatusActive, Actor: author, Reason: "test",
	})
	if err != nil {
		e.T.Fatalf("create %q: %v", key, err)
	}
	return r
}

// createN stores n active records with distinct keys and contents.
func (e *env) createN(n int) []memorykit.Record {
	e.T.Helper()
	out := make([]memorykit.Record, n)
	for i := range out {
		out[i] = e.create(fmt.Sprintf("service %03d region", i), fmt.Sprintf("service %03d runs in region eu-west-%d", i, i%3))
	}
	return out
}

func (e *env) pending() int {
	e.T.Helper()
	n, err := e.store.PendingEmbeddings(e.Ctx, embedder.LocalProfile)
	if err != nil {
		e.T.Fatalf("PendingEmbeddings: %v", err)
	}
	return n
}

// vectorHits runs the vector channel alone with the local embedding of
// text.
func (e *env) vectorHits(text string) []storekit.Hit {
	e.T.Helper()
	v, err := embedder.NewLocal().Embed(e.Ctx, []string{text})
	if err != nil {
		e.T.Fatal(err)
	}
	res, err := e.store.Recall(e.Ctx, storekit.RecallQuery{
		Scope: e.Scope, Vector: v[0], Profile: embedder.LocalProfile, ExactLimit: 1, FullTextLimit: 1, VectorLimit: 50,
	})
	if err != nil {
		e.T.Fatalf("Recall: %v", err)
	}
	return res.Vector
}

// fakeEmbedder wraps the local embedder, records every call's batch size
// and clock time, and can be scripted to fail.
type fakeEmbedder struct {
	clk   clock.Clock
	inner *embedder.Local

	mu      sync.Mutex
	fn      func(ctx context.Context, texts []string) ([][]float32, error)
	batches []int
	times   []time.Time
	texts   map[string]int
}

func newEmbedder(clk clock.Clock) *fakeEmbedder {
	return &fakeEmbedder{clk: clk, inner: embedder.NewLocal(), texts: make(map[string]int)}
}

func (f *fakeEmbedder) Profile() string { return f.inner.Profile() }
func (f *fakeEmbedder) Dimension() int  { return f.inner.Dimension() }

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.batches = append(f.batches, len(texts))
	f.times = append(f.times, f.clk.Now())
	for _, t := range texts {
		f.texts[t]++
	}
	fn := f.fn
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, texts)
	}
	return f.inner.Embed(ctx, texts)
}

func (f *fakeEmbedder) script(fn func(ctx context.Context, texts []string) ([][]float32, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fn = fn
}

func (f *fakeEmbedder) calls() ([]int, []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.batches...), append([]time.Time(nil), f.times...)
}

// faultStore wraps a Store and can fail chosen embedding calls.
type faultStore struct {
	storekit.Store
	testkit.Faults
}

func newFaultStore(s storekit.Store) *faultStore { return &faultStore{Store: s} }

func (f *faultStore) LeaseEmbeddings(ctx context.Context, p storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	if err := f.Fault("LeaseEmbeddings"); err != nil {
		return nil, err
	}
	return f.Store.LeaseEmbeddings(ctx, p)
}

func (f *faultStore) PutEmbedding(ctx context.Context, p storekit.EmbeddingPut) error {
	if err := f.Fault("PutEmbedding"); err != nil {
		return err
	}
	return f.Store.PutEmbedding(ctx, p)
}

func (f *faultStore) ReleaseEmbedding(ctx context.Context, r storekit.EmbeddingRelease) error {
	if err := f.Fault("ReleaseEmbedding"); err != nil {
		return err
	}
	return f.Store.ReleaseEmbedding(ctx, r)
}

// batchFaultStore is a faultStore that also offers PutEmbeddings (faults
// under that name) and counts the calls of both put methods.
type batchFaultStore struct {
	*faultStore
	mu             sync.Mutex
	batches, singl int
	short          bool // answer with one result too few
}

func newBatchFaultStore(s storekit.Store) *batchFaultStore {
	return &batchFaultStore{faultStore: newFaultStore(s)}
}

func (f *batchFaultStore) PutEmbeddings(ctx context.Context, puts []storekit.EmbeddingPut) ([]error, error) {
	f.mu.Lock()
	f.batches++
	short := f.short
	f.mu.Unlock()
	if err := f.Fault("PutEmbeddings"); err != nil {
		return nil, err
	}
	errs, err := f.faultStore.Store.(storekit.EmbeddingBatchPutter).PutEmbeddings(ctx, puts)
	if short && len(errs) > 0 {
		errs = errs[:len(errs)-1]
	}
	return errs, err
}

func (f *batchFaultStore) PutEmbedding(ctx context.Context, p storekit.EmbeddingPut) error {
	f.mu.Lock()
	f.singl++
	f.mu.Unlock()
	return f.faultStore.PutEmbedding(ctx, p)
}

// calls returns how many PutEmbeddings and PutEmbedding calls were made.
func (f *batchFaultStore) calls() (batches, singles int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.batches, f.singl
}
