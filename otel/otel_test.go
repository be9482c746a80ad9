package mkotel_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/memorytools"
	mkotel "github.com/goagents/memorykit/otel"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/runtime/runtimetest"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
	"github.com/goagents/memorykit/writer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// canary is planted in every piece of content, key and query of the
// scripted session; no span attribute, status or metric label may hold it.
const canary = "canary7f3aq"

// storeLatency is how long the scripted recall store takes on the mock
// clock.
const storeLatency = 40 * time.Millisecond

// slowRecall advances the mock clock by storeLatency on every recall, and
// fails it recoverably while down is set.
type slowRecall struct {
	storekit.RecallStore
	clk  *clock.Mock
	down *atomic.Bool
}

func (s slowRecall) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	s.clk.Add(storeLatency)
	if s.down.Load() {
		return storekit.RecallResult{}, &memorykit.Error{Op: "test.recall", Kind: memorykit.ErrUnavailable, Reason: "store_down", Retry: true}
	}
	return s.RecallStore.Recall(ctx, q)
}

// lineExtractor proposes one fact per "remember: key = value" line.
type lineExtractor struct{}

func (lineExtractor) Extract(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	var out []memorykit.Proposal
	for _, line := range strings.Split(in.Payload, "\n") {
		if rest, ok := strings.CutPrefix(line, "remember: "); ok {
			if k, v, ok := strings.Cut(rest, " = "); ok {
				out = append(out, memorykit.Proposal{Kind: memorykit.KindFact, Key: k, Content: v})
			}
		}
	}
	return out, nil
}

func newTelemetry(t testing.TB, next memorykit.EventSink) (*mkotel.Telemetry, *sdkmetric.ManualReader, *tracetest.SpanRecorder) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	tel, err := mkotel.New(mkotel.Config{MeterProvider: mp, TracerProvider: tp, Next: next})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Close() })
	return tel, reader, spans
}

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// matches reports whether set holds every key=value of want.
func matches(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.String() != v {
			return false
		}
	}
	return true
}

// sum adds the int64 data points of a counter or gauge matching want.
func sum(t *testing.T, ms map[string]metricdata.Metrics, name string, want map[string]string) int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	var pts []metricdata.DataPoint[int64]
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		pts = d.DataPoints
	case metricdata.Gauge[int64]:
		pts = d.DataPoints
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	var n int64
	for _, p := range pts {
		if matches(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// hist returns the count and sum of the float histogram points matching want.
func hist(t *testing.T, ms map[string]metricdata.Metrics, name string, want map[string]string) (uint64, float64) {
	t.Helper()
	d, ok := ms[name].Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s: no float64 histogram (%T)", name, ms[name].Data)
	}
	var c uint64
	var s float64
	for _, p := range d.DataPoints {
		if matches(p.Attributes, want) {
			c += p.Count
			s += p.Sum
		}
	}
	return c, s
}

// allLabels lists every attribute of every data point as text.
func allLabels(ms map[string]metricdata.Metrics) string {
	var b strings.Builder
	add := func(s attribute.Set) {
		for _, kv := range s.ToSlice() {
			fmt.Fprintf(&b, "%s=%s\n", kv.Key, kv.Value.String())
		}
	}
	for _, m := range ms {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				add(p.Attributes)
			}
		case metricdata.Gauge[int64]:
			for _, p := range d.DataPoints {
				add(p.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				add(p.Attributes)
			}
		case metricdata.Histogram[int64]:
			for _, p := range d.DataPoints {
				add(p.Attributes)
			}
		}
	}
	return b.String()
}

// stepper advances the mock clock one reap interval (the actors' longest
// idle wait) at a time and waits (on the
// OnWait hook, with a real-time guard against a hang) until the actors
// have armed their next waits.
type stepper struct {
	t     *testing.T
	clk   *clock.Mock
	waits chan string
}

func (s *stepper) armed() {
	s.t.Helper()
	left := map[string]bool{mkruntime.ActorEmbed: true, mkruntime.ActorExtract: true, mkruntime.ActorReap: true}
	for len(left) > 0 {
		select {
		case a := <-s.waits:
			delete(left, a)
		case <-time.After(time.Minute): // a guard against a hang, not a wait for work
			s.t.Fatalf("actors %v armed no wait", left)
		}
	}
}

func (s *stepper) until(what string, cond func() bool) {
	s.t.Helper()
	for i := 0; i < 60 && !cond(); i++ {
		s.clk.Add(5 * time.Second)
		s.armed()
	}
	if !cond() {
		s.t.Fatalf("%s did not happen", what)
	}
}

// TestScriptedSessionMetricsAndSpans runs a write, a recall, a degraded
// recall, an extraction that stores a candidate and the worker passes that
// embed and extract, on both stores, then reads every instrument through a
// ManualReader and every span through a SpanRecorder.
func TestScriptedSessionMetricsAndSpans(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		clk := testkit.NewClock()
		store := be.Open(t, clk)
		sink := &testkit.Sink{}
		tel, reader, spans := newTelemetry(t, sink)

		scope := testkit.Scope(t, "acme", "apollo")
		alice := testkit.Principal("acme", memorykit.ActorUser, "alice")
		az := testkit.NewAuthorizer()
		az.Grant("alice", scope, memorykit.PermRead, memorykit.PermWrite, memorykit.PermExtract, memorykit.PermReview)
		az.Grant("agent-1", scope, memorykit.PermRead, memorykit.PermModelWrite)

		down := &atomic.Bool{}
		stores := mkruntime.StoresOf(store)
		stores.Recall = slowRecall{RecallStore: store, clk: clk, down: down}
		b := memorykit.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2}
		st := &stepper{t: t, clk: clk, waits: make(chan string, 10000)}
		cfg := mkruntime.Config{
			Guard: testkit.NewGuard(t), Policy: testkit.Policy(),
			Embedder:   tel.WrapEmbedder(embedder.NewLocal(), clk),
			Extractor:  tel.WrapExtractor(lineExtractor{}),
			Authorizer: az, Stores: tel.WrapStores(stores, clk), Clock: clk,
			WorkerID: "host-a", Logger: zap.NewNop(), Events: tel,
			Workers: mkruntime.Workers{
				LeaseTTL: time.Hour, EmbedBatch: 16, EmbedPoll: time.Second, EmbedDeadline: 20 * time.Minute,
				EmbedRetry: b, ExtractBatch: 4, ExtractPoll: time.Second, JobDeadline: 20 * time.Minute,
				JobRetry: b, JobMaxAttempts: 3, JobMaxReaps: 5, ReapInterval: 5 * time.Second, StoreBackoff: b,
				HandBackTimeout: 20 * time.Minute,
				Restart:         memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}, MaxRestarts: 5,
			},
			Tools:  memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 400, MaxArgBytes: 8192},
			Outbox: mkruntime.OutboxV1(),
			Mode:   mkruntime.ModeAll,
		}
		runtimetest.WithHooks(&cfg, runtimetest.Hooks{OnWait: func(actor string, _ supervisor.Wait) { st.waits <- actor }})
		rt, err := mkruntime.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Stop(context.Background()) })
		if err := tel.ObserveHealth(rt); err != nil {
			t.Fatal(err)
		}
		if err := tel.ObserveQueue(store, cfg.Policy.EmbeddingProfile); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		st.armed()

		s, err := rt.Session(ctx, mkruntime.Request{Caller: alice, Scope: scope, ModelID: "agent-1", WriteIntent: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "region " + canary, Content: "The API runs in " + canary}); err != nil {
			t.Fatal(err)
		}
		ask := []projector.Message{{Role: projector.RoleUser, Content: "where does the API run " + canary}}
		if p, err := s.Project(ctx, ask); err != nil || !p.Injected {
			t.Fatalf("recall: injected=%v err=%v", p.Injected, err)
		}
		down.Store(true)
		if p, err := s.Project(ctx, ask); err != nil || p.Injected {
			t.Fatalf("degraded recall: injected=%v err=%v", p.Injected, err)
		}
		down.Store(false)
		// The session's two recalls, measured before the extraction job
		// runs its own related-memory recall over the transcript.
		recallMetrics, recallSpans := collect(t, reader), spans.Ended()
		if r := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1", Transcript: "remember: on-call " + canary + " = " + canary + " is on call"}); r.Status == extractworker.EnqueueFailed {
			t.Fatalf("enqueue failed: %+v", r)
		}
		st.until("a worker pass of each worker", func() bool {
			return len(sink.OfKind(memorykit.EventJobCompleted)) == 1 && len(sink.OfKind(memorykit.EventEmbeddingStored)) >= 1
		})

		ms := collect(t, reader)
		units := map[string]string{
			mkotel.MetricRecallDuration: "s", mkotel.MetricRecallDegraded: "{recall}",
			mkotel.MetricRecallStoreDuration: "s", mkotel.MetricRecallHits: "{hit}",
			mkotel.MetricEmbedderDuration: "s", mkotel.MetricWrites: "{write}",
			mkotel.MetricCandidates: "{candidate}", mkotel.MetricJobs: "{job}",
			mkotel.MetricEmbeddings: "{record}", mkotel.MetricEvents: "{event}",
			mkotel.MetricQueueDepth: "{job}", mkotel.MetricEmbeddingsPending: "{record}",
			mkotel.MetricActorState: "{actor}", mkotel.MetricActorFailures: "{failure}",
			mkotel.MetricRuntimeState: "{state}",
		}
		for name, unit := range units {
			m, ok := ms[name]
			if !ok {
				t.Errorf("metric %s missing", name)
				continue
			}
			if m.Unit != unit {
				t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
			}
		}

		// Recall latency: one completed and one degraded recall, each
		// taking the store's 40ms on the mock clock.
		for _, outcome := range []string{"completed", "degraded"} {
			n, secs := hist(t, recallMetrics, mkotel.MetricRecallDuration, map[string]string{"memorykit.outcome": outcome})
			if n != 1 || secs < storeLatency.Seconds() || secs > 2*storeLatency.Seconds() {
				t.Errorf("recall.duration{%s}: count %d sum %.3fs, want 1 and about %v", outcome, n, secs, storeLatency)
			}
		}
		if n, secs := hist(t, recallMetrics, mkotel.MetricRecallStoreDuration, map[string]string{"memorykit.outcome": "ok"}); n != 1 || secs != storeLatency.Seconds() {
			t.Errorf("recall.store.duration{ok}: count %d sum %v", n, secs)
		}
		if n := sum(t, recallMetrics, mkotel.MetricEvents, map[string]string{"memorykit.event.kind": "recall.completed"}); n != 1 {
			t.Errorf("events{recall.completed} = %d, want 1", n)
		}
		if n := sum(t, recallMetrics, mkotel.MetricRecallDegraded, map[string]string{"memorykit.channel": "all", "memorykit.reason": "store_unavailable"}); n != 1 {
			t.Errorf("recall.degraded{all,store_unavailable} = %d, want 1", n)
		}
		checks := []struct {
			name string
			attr map[string]string
			want int64
		}{
			{mkotel.MetricWrites, map[string]string{"memorykit.write.path": "user", "memorykit.outcome": "stored"}, 1},
			{mkotel.MetricWrites, map[string]string{"memorykit.write.path": "worker", "memorykit.outcome": "candidate"}, 1},
			{mkotel.MetricCandidates, map[string]string{"memorykit.outcome": "stored"}, 1},
			{mkotel.MetricJobs, map[string]string{"memorykit.outcome": "enqueued"}, 1},
			{mkotel.MetricJobs, map[string]string{"memorykit.outcome": "completed"}, 1},
			{mkotel.MetricEmbeddings, map[string]string{"memorykit.outcome": "stored"}, 1},
			{mkotel.MetricQueueDepth, map[string]string{"memorykit.job.state": "done"}, 1},
			{mkotel.MetricQueueDepth, map[string]string{"memorykit.job.state": "queued"}, 0},
			{mkotel.MetricEmbeddingsPending, nil, 0},
			{mkotel.MetricActorState, map[string]string{"memorykit.actor.state": "running"}, 3},
			{mkotel.MetricActorState, map[string]string{"memorykit.actor.state": "backing_off"}, 0},
			{mkotel.MetricRuntimeState, map[string]string{"memorykit.runtime.state": "running"}, 1},
			{mkotel.MetricRuntimeState, nil, 1},
		}
		for _, c := range checks {
			if got := sum(t, ms, c.name, c.attr); got != c.want {
				t.Errorf("%s%v = %d, want %d", c.name, c.attr, got, c.want)
			}
		}
		if labels := allLabels(ms); strings.Contains(labels, canary) {
			t.Errorf("a metric label holds the canary:\n%s", labels)
		}
		sink.AssertNoCanary(t, canary)

		// Spans: names, and no attribute, status or event holding the canary.
		names := map[string]int{}
		for _, sp := range spans.Ended() {
			names[sp.Name()]++
			var b strings.Builder
			for _, kv := range sp.Attributes() {
				fmt.Fprintf(&b, "%s=%s ", kv.Key, kv.Value.String())
			}
			for _, ev := range sp.Events() {
				b.WriteString(ev.Name)
				for _, kv := range ev.Attributes {
					fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
				}
			}
			b.WriteString(sp.Status().Description)
			if strings.Contains(b.String(), canary) {
				t.Errorf("span %s holds the canary: %s", sp.Name(), b.String())
			}
		}
		for _, want := range []string{
			mkotel.SpanRecall, mkotel.SpanWritePrefix + "create", mkotel.SpanEmbedderEmbed,
			mkotel.SpanExtractorRun, mkotel.SpanJobEnqueue, mkotel.SpanJobLease, mkotel.SpanJobComplete,
			mkotel.SpanEmbedLease, mkotel.SpanEmbedPutBatch,
		} {
			if names[want] == 0 {
				t.Errorf("no span %s (have %v)", want, names)
			}
		}
		var failed, hits, recalls int
		for _, sp := range recallSpans {
			if sp.Name() != mkotel.SpanRecall {
				continue
			}
			recalls++
			if sp.Status().Code == codes.Error && sp.Status().Description == "store_down" {
				failed++
			}
			for _, kv := range sp.Attributes() {
				if kv.Key == mkotel.AttrHitsFull && kv.Value.AsInt64() == 1 {
					hits++
				}
			}
		}
		if failed != 1 || hits != 1 {
			t.Errorf("recall spans: %d failed with store_down, %d with one full-text hit; want 1 and 1", failed, hits)
		}
		if recalls != 2 {
			t.Errorf("%d recall spans in the session, want 2", recalls)
		}
		if names[mkotel.SpanRecall] < 3 {
			t.Errorf("%d recall spans in all, want the session's 2 and the extraction job's related-memory recall", names[mkotel.SpanRecall])
		}
	})
}

// bareEmbeddings and bareLifecycle hide a store's batch methods.
type bareEmbeddings struct{ storekit.EmbeddingStore }
type bareLifecycle struct{ storekit.LifecycleStore }

// TestWrapStoresKeepsBatchInterfaces: the embedding worker puts a batch in
// one call only when its store implements storekit.EmbeddingBatchPutter,
// so the decorators must keep that (and storekit.BatchCreator) exactly
// when the wrapped store has it.
func TestWrapStoresKeepsBatchInterfaces(t *testing.T) {
	clk := testkit.NewClock()
	tel, _, _ := newTelemetry(t, memorykit.DiscardEvents{})
	store := testkit.MemStore(t, clk)
	w := tel.WrapStores(mkruntime.StoresOf(store), clk)
	if _, ok := w.Embeddings.(storekit.EmbeddingBatchPutter); !ok {
		t.Error("wrapped embedding store lost PutEmbeddings")
	}
	if _, ok := w.Lifecycle.(storekit.BatchCreator); !ok {
		t.Error("wrapped lifecycle store lost CreateBatch")
	}
	bare := mkruntime.StoresOf(store)
	bare.Embeddings, bare.Lifecycle = bareEmbeddings{store}, bareLifecycle{store}
	w = tel.WrapStores(bare, clk)
	if _, ok := w.Embeddings.(storekit.EmbeddingBatchPutter); ok {
		t.Error("wrapped embedding store grew PutEmbeddings")
	}
	if _, ok := w.Lifecycle.(storekit.BatchCreator); ok {
		t.Error("wrapped lifecycle store grew CreateBatch")
	}
}
