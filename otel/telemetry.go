package mkotel

import (
	"context"
	"errors"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/goagents/memorykit"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

// ScopeName is the instrumentation scope of every meter and tracer this
// package creates.
const ScopeName = "github.com/goagents/memorykit/otel"

// Attribute keys. Metric attributes hold only bounded codes (kinds,
// outcomes, reason codes, channels, actor names); span attributes may also
// hold identifiers and counts. None ever holds content, keys, query text or
// error messages.
const (
	AttrChannel     = attribute.Key("memorykit.channel")
	AttrOutcome     = attribute.Key("memorykit.outcome")
	AttrReason      = attribute.Key("memorykit.reason")
	AttrWritePath   = attribute.Key("memorykit.write.path")
	AttrAction      = attribute.Key("memorykit.action")
	AttrActor       = attribute.Key("memorykit.actor")
	AttrActorState  = attribute.Key("memorykit.actor.state")
	AttrActorKind   = attribute.Key("memorykit.actor.kind")
	AttrJobState    = attribute.Key("memorykit.job.state")
	AttrEventKind   = attribute.Key("memorykit.event.kind")
	AttrRuntime     = attribute.Key("memorykit.runtime.state")
	AttrVector      = attribute.Key("memorykit.recall.vector")
	AttrProfile     = attribute.Key("memorykit.embedder.profile")
	AttrErrorKind   = attribute.Key("memorykit.error.kind")
	AttrTenantID    = attribute.Key("memorykit.tenant_id")
	AttrSubjectType = attribute.Key("memorykit.subject_type")
	AttrSubjectID   = attribute.Key("memorykit.subject_id")
	AttrRecordID    = attribute.Key("memorykit.record.id")
	AttrRecordKind  = attribute.Key("memorykit.record.kind")
	AttrStatus      = attribute.Key("memorykit.record.status")
	AttrVersion     = attribute.Key("memorykit.record.version")
	AttrJobID       = attribute.Key("memorykit.job.id")
	AttrAttempt     = attribute.Key("memorykit.attempt")
	AttrCount       = attribute.Key("memorykit.count")
	AttrWorkerID    = attribute.Key("memorykit.worker.id")
	AttrExactKeys   = attribute.Key("memorykit.recall.exact_keys")
	AttrTerms       = attribute.Key("memorykit.recall.terms")
	AttrHitsExact   = attribute.Key("memorykit.recall.hits.exact")
	AttrHitsFull    = attribute.Key("memorykit.recall.hits.full_text")
	AttrHitsVector  = attribute.Key("memorykit.recall.hits.vector")
)

// Config holds what a Telemetry needs. MeterProvider and TracerProvider
// come from the Host's SDK (or are no-op providers); Next is the Host's own
// event sink, which every event is forwarded to unchanged.
type Config struct {
	// MeterProvider creates the instruments. Required.
	MeterProvider metric.MeterProvider
	// TracerProvider creates the spans of the Wrap* decorators. Required.
	TracerProvider trace.TracerProvider
	// Next receives every event after it is counted. Required; pass
	// memorykit.DiscardEvents{} to keep none.
	Next memorykit.EventSink
}

// Telemetry is an EventSink that records metrics from memorykit events and
// forwards them to the Host's sink, plus decorators that add spans. It is
// safe for concurrent use.
type Telemetry struct {
	next   memorykit.EventSink
	meter  metric.Meter
	tracer trace.Tracer

	recallDuration metric.Float64Histogram
	recallDegraded metric.Int64Counter
	storeDuration  metric.Float64Histogram
	recallHits     metric.Int64Histogram
	embedDuration  metric.Float64Histogram
	writes         metric.Int64Counter
	candidates     metric.Int64Counter
	lifecycle      metric.Int64Counter
	jobs           metric.Int64Counter
	embeddings     metric.Int64Counter
	reaped         metric.Int64Counter
	actorEvents    metric.Int64Counter
	workerErrors   metric.Int64Counter
	events         metric.Int64Counter

	mu   sync.Mutex
	regs []metric.Registration
}

// New validates cfg and creates every synchronous instrument.
func New(cfg Config) (*Telemetry, error) {
	const op = "otel.new"
	switch {
	case cfg.MeterProvider == nil:
		return nil, memorykit.ConfigError(op, "meter_provider", "missing")
	case cfg.TracerProvider == nil:
		return nil, memorykit.ConfigError(op, "tracer_provider", "missing")
	case cfg.Next == nil:
		return nil, memorykit.ConfigError(op, "next", "missing")
	}
	t := &Telemetry{
		next:   cfg.Next,
		meter:  cfg.MeterProvider.Meter(ScopeName),
		tracer: cfg.TracerProvider.Tracer(ScopeName),
	}
	m := t.meter
	var errs []error
	fh := func(name, unit, desc string, bounds ...float64) metric.Float64Histogram {
		opts := []metric.Float64HistogramOption{metric.WithUnit(unit), metric.WithDescription(desc)}
		if len(bounds) > 0 {
			opts = append(opts, metric.WithExplicitBucketBoundaries(bounds...))
		}
		h, err := m.Float64Histogram(name, opts...)
		errs = append(errs, err)
		return h
	}
	ih := func(name, unit, desc string, bounds ...float64) metric.Int64Histogram {
		h, err := m.Int64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return h
	}
	ic := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	secs := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	t.recallDuration = fh(MetricRecallDuration, "s", "Duration of whole recalls, by outcome.", secs...)
	t.recallDegraded = ic(MetricRecallDegraded, "{recall}", "Recalls that dropped a channel or all memory, by channel and reason.")
	t.storeDuration = fh(MetricRecallStoreDuration, "s", "Duration of the store round trip that answers the recall channels.", secs...)
	t.recallHits = ih(MetricRecallHits, "{hit}", "Hits per recall, by channel.", 0, 1, 2, 5, 10, 20, 50, 100)
	t.embedDuration = fh(MetricEmbedderDuration, "s", "Duration of Embedder calls (query and worker), by profile and outcome.", secs...)
	t.writes = ic(MetricWrites, "{write}", "Writes by path (actor kind) and outcome.")
	t.candidates = ic(MetricCandidates, "{candidate}", "Candidates by outcome: stored, invalid, activated, rejected.")
	t.lifecycle = ic(MetricLifecycle, "{transition}", "Reviewer transitions by action and outcome.")
	t.jobs = ic(MetricJobs, "{job}", "Extraction job outcomes.")
	t.embeddings = ic(MetricEmbeddings, "{record}", "Embedding worker outcomes per record.")
	t.reaped = ic(MetricLeasesReaped, "{lease}", "Expired leases returned by the reaper.")
	t.actorEvents = ic(MetricActorEvents, "{event}", "Supervisor actor transitions by actor and kind.")
	t.workerErrors = ic(MetricWorkerErrors, "{error}", "Worker errors by reason.")
	t.events = ic(MetricEvents, "{event}", "Every memorykit event, by kind.")
	if err := errors.Join(errs...); err != nil {
		return nil, memorykit.WrapError(op, memorykit.ErrInvalidConfig, "instrument_failed", err)
	}
	return t, nil
}

// Instrument names. Units follow the OpenTelemetry conventions: seconds
// for durations, curly-brace annotations for counts.
const (
	MetricRecallDuration      = "memorykit.recall.duration"
	MetricRecallDegraded      = "memorykit.recall.degraded"
	MetricRecallStoreDuration = "memorykit.recall.store.duration"
	MetricRecallHits          = "memorykit.recall.hits"
	MetricEmbedderDuration    = "memorykit.embedder.duration"
	MetricWrites              = "memorykit.writes"
	MetricCandidates          = "memorykit.candidates"
	MetricLifecycle           = "memorykit.lifecycle.transitions"
	MetricJobs                = "memorykit.jobs"
	MetricEmbeddings          = "memorykit.embeddings"
	MetricLeasesReaped        = "memorykit.leases.reaped"
	MetricActorEvents         = "memorykit.actor.events"
	MetricWorkerErrors        = "memorykit.worker.errors"
	MetricEvents              = "memorykit.events"
	MetricQueueDepth          = "memorykit.queue.depth"
	MetricEmbeddingsPending   = "memorykit.embeddings.pending"
	MetricActorState          = "memorykit.actor.state"
	MetricActorFailures       = "memorykit.actor.failures"
	MetricRuntimeState        = "memorykit.runtime.state"
)

// Emit records e's metrics and forwards e to the Host's sink. It never
// blocks on anything but the Host's sink and the SDK's instruments.
func (t *Telemetry) Emit(e memorykit.Event) {
	t.record(e)
	t.next.Emit(e)
}

func (t *Telemetry) record(e memorykit.Event) {
	ctx := context.Background()
	add := func(c metric.Int64Counter, n int, kv ...attribute.KeyValue) {
		c.Add(ctx, int64(n), metric.WithAttributes(kv...))
	}
	atLeastOne := max(e.Count, 1)
	reason := code(e.Reason)
	add(t.events, 1, AttrEventKind.String(string(e.Kind)))
	switch e.Kind {
	case memorykit.EventRecallCompleted, memorykit.EventRecallDegraded:
		if e.Kind == memorykit.EventRecallDegraded {
			add(t.recallDegraded, 1, AttrChannel.String(channel(e.Channel)), AttrReason.String(reason))
		}
		if e.Channel == "" { // the whole-recall event carries the duration
			outcome := "completed"
			if e.Kind == memorykit.EventRecallDegraded {
				outcome = "degraded"
			}
			t.recallDuration.Record(ctx, e.Duration.Seconds(),
				metric.WithAttributes(AttrOutcome.String(outcome), AttrReason.String(reason)))
		}
	case memorykit.EventWriteStored:
		add(t.writes, atLeastOne, AttrWritePath.String(actorKind(e.Actor)), AttrOutcome.String("stored"))
	case memorykit.EventCandidateStored:
		add(t.writes, atLeastOne, AttrWritePath.String(actorKind(e.Actor)), AttrOutcome.String("candidate"))
		add(t.candidates, atLeastOne, AttrOutcome.String("stored"), AttrWritePath.String(actorKind(e.Actor)))
	case memorykit.EventWriteFailed:
		add(t.writes, 1, AttrWritePath.String(actorKind(e.Actor)), AttrOutcome.String("failed"), AttrReason.String(reason))
	case memorykit.EventCandidateInvalid:
		add(t.candidates, atLeastOne, AttrOutcome.String("invalid"), AttrWritePath.String(actorKind(e.Actor)))
	case memorykit.EventLifecycle:
		if e.Action == "" { // supervisor drained/stopped notices
			return
		}
		outcome := "ok"
		if e.Reason != "ok" {
			outcome = "failed"
		}
		add(t.lifecycle, 1, AttrAction.String(string(e.Action)), AttrOutcome.String(outcome), AttrReason.String(reason))
		if outcome == "ok" {
			switch e.Action {
			case memorykit.ActionActivate:
				add(t.candidates, 1, AttrOutcome.String("activated"), AttrWritePath.String(actorKind(e.Actor)))
			case memorykit.ActionReject:
				add(t.candidates, 1, AttrOutcome.String("rejected"), AttrWritePath.String(actorKind(e.Actor)))
			}
		}
	case memorykit.EventExtractionEnqueued:
		add(t.jobs, 1, AttrOutcome.String("enqueued"))
	case memorykit.EventExtractionEnqueueFailed:
		add(t.jobs, 1, AttrOutcome.String("enqueue_failed"), AttrReason.String(reason))
	case memorykit.EventJobCompleted:
		add(t.jobs, 1, AttrOutcome.String("completed"))
	case memorykit.EventJobRetry:
		add(t.jobs, 1, AttrOutcome.String("retry"), AttrReason.String(reason))
	case memorykit.EventJobFailed:
		add(t.jobs, 1, AttrOutcome.String("failed"), AttrReason.String(reason))
	case memorykit.EventEmbeddingStored:
		add(t.embeddings, atLeastOne, AttrOutcome.String("stored"))
	case memorykit.EventEmbeddingRetry:
		add(t.embeddings, atLeastOne, AttrOutcome.String("retry"), AttrReason.String(reason))
	case memorykit.EventEmbeddingFailed:
		add(t.embeddings, atLeastOne, AttrOutcome.String("failed"), AttrReason.String(reason))
	case memorykit.EventLeasesReaped:
		add(t.reaped, e.Count, AttrReason.String(reason))
	case memorykit.EventActorRestarted, memorykit.EventActorGaveUp, memorykit.EventActorStopped,
		memorykit.EventActorDegraded, memorykit.EventActorRecovered:
		add(t.actorEvents, 1, AttrActor.String(actorName(e.Actor)),
			AttrEventKind.String(string(e.Kind)), AttrReason.String(reason))
	case memorykit.EventWorkerError:
		add(t.workerErrors, 1, AttrReason.String(reason))
	}
}

// code keeps a reason only when it is a well-formed reason code, so a
// metric label can never carry anything else; "none" stands for empty.
func code(reason string) string {
	if reason == "" {
		return "none"
	}
	if storekit.CheckReasonCode("", reason) != nil {
		return "invalid"
	}
	return reason
}

func channel(c memorykit.Channel) string {
	switch c {
	case memorykit.ChannelExact, memorykit.ChannelFullText, memorykit.ChannelVector:
		return string(c)
	case "":
		return "all"
	}
	return "invalid"
}

// actorKind turns an event's "kind:id" actor into its kind, the write path.
func actorKind(a string) string {
	k, _, _ := strings.Cut(a, ":")
	if !memorykit.ActorKind(k).Valid() {
		return "unknown"
	}
	return k
}

// actorName turns a supervisor event's "worker:name" into the actor name.
func actorName(a string) string {
	_, name, ok := strings.Cut(a, ":")
	if !ok || name == "" {
		return "unknown"
	}
	return name
}

// HealthSource is what ObserveHealth reads; *runtime.Runtime satisfies it.
type HealthSource interface {
	Health() mkruntime.Health
}

// ObserveHealth registers observable gauges fed from src.Health() at each
// collection: memorykit.actor.state (1 for each actor's current state, 0
// for the others), memorykit.actor.failures and memorykit.runtime.state.
// Call it once the Runtime exists (it needs this Telemetry as its sink
// first); Close unregisters.
func (t *Telemetry) ObserveHealth(src HealthSource) error {
	const op = "otel.observe_health"
	if src == nil {
		return memorykit.ConfigError(op, "source", "missing")
	}
	state, err1 := t.meter.Int64ObservableGauge(MetricActorState, metric.WithUnit("{actor}"),
		metric.WithDescription("1 for each background actor's current state (running, backing_off, stopped), 0 otherwise."))
	fails, err2 := t.meter.Int64ObservableGauge(MetricActorFailures, metric.WithUnit("{failure}"),
		metric.WithDescription("Consecutive failures behind an actor's backing_off state."))
	rt, err3 := t.meter.Int64ObservableGauge(MetricRuntimeState, metric.WithUnit("{state}"),
		metric.WithDescription("1 for the Runtime's current lifecycle state (new, running, draining, stopped), 0 otherwise."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return memorykit.WrapError(op, memorykit.ErrInvalidConfig, "instrument_failed", err)
	}
	states := []supervisor.ActorState{supervisor.ActorRunning, supervisor.ActorBackingOff, supervisor.ActorStopped}
	lifecycle := []string{"new", "running", "draining", "stopped"}
	reg, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		h := src.Health()
		for _, a := range h.Actors {
			name := AttrActor.String(a.Name)
			for _, s := range states {
				o.ObserveInt64(state, b2i(a.State == s), metric.WithAttributes(name, AttrActorState.String(string(s))))
			}
			o.ObserveInt64(fails, int64(a.Failures), metric.WithAttributes(name))
		}
		for _, s := range lifecycle {
			o.ObserveInt64(rt, b2i(h.State == s), metric.WithAttributes(AttrRuntime.String(s)))
		}
		return nil
	}, state, fails, rt)
	if err != nil {
		return memorykit.WrapError(op, memorykit.ErrInvalidConfig, "callback_failed", err)
	}
	t.keep(reg)
	return nil
}

// QueueSource is what ObserveQueue reads: the job store's counts and the
// embedding store's pending count for one profile. A storekit.Store
// satisfies it.
type QueueSource interface {
	CountJobs(ctx context.Context) (storekit.JobCounts, error)
	PendingEmbeddings(ctx context.Context, profile string) (int, error)
}

// ObserveQueue registers observable gauges read from src at each
// collection: memorykit.queue.depth (jobs by state: queued, leased, done,
// failed) and memorykit.embeddings.pending (records of profile still
// without a current embedding). Each collection costs two store reads,
// bounded by the collection's context; a failed read skips its gauge.
func (t *Telemetry) ObserveQueue(src QueueSource, profile string) error {
	const op = "otel.observe_queue"
	if src == nil {
		return memorykit.ConfigError(op, "source", "missing")
	}
	if profile == "" {
		return memorykit.ConfigError(op, "profile", "missing")
	}
	depth, err1 := t.meter.Int64ObservableGauge(MetricQueueDepth, metric.WithUnit("{job}"),
		metric.WithDescription("Extraction jobs by state."))
	pending, err2 := t.meter.Int64ObservableGauge(MetricEmbeddingsPending, metric.WithUnit("{record}"),
		metric.WithDescription("Records whose embedding for the profile is missing or stale."))
	if err := errors.Join(err1, err2); err != nil {
		return memorykit.WrapError(op, memorykit.ErrInvalidConfig, "instrument_failed", err)
	}
	prof := AttrProfile.String(profile)
	reg, err := t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		if c, err := src.CountJobs(ctx); err == nil {
			for _, s := range []struct {
				name string
				n    int
			}{{"queued", c.Queued}, {"leased", c.Leased}, {"done", c.Done}, {"failed", c.Failed}} {
				o.ObserveInt64(depth, int64(s.n), metric.WithAttributes(AttrJobState.String(s.name)))
			}
		}
		if n, err := src.PendingEmbeddings(ctx, profile); err == nil {
			o.ObserveInt64(pending, int64(n), metric.WithAttributes(prof))
		}
		return nil
	}, depth, pending)
	if err != nil {
		return memorykit.WrapError(op, memorykit.ErrInvalidConfig, "callback_failed", err)
	}
	t.keep(reg)
	return nil
}

func (t *Telemetry) keep(r metric.Registration) {
	t.mu.Lock()
	t.regs = append(t.regs, r)
	t.mu.Unlock()
}

// Close unregisters the observable-gauge callbacks. The synchronous
// instruments stay usable; the Host shuts its SDK providers down itself.
func (t *Telemetry) Close() error {
	t.mu.Lock()
	regs := t.regs
	t.regs = nil
	t.mu.Unlock()
	var errs []error
	for _, r := range regs {
		errs = append(errs, r.Unregister())
	}
	if err := errors.Join(errs...); err != nil {
		return memorykit.WrapError("otel.close", memorykit.ErrUnavailable, "unregister_failed", err)
	}
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
