package mkotel_test

import (
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	mkotel "github.com/goagents/memorykit/otel"
)

// TestEveryEventKindIsCountedAndForwarded emits one event of every kind
// (with a reason that is not a code on one of them) and checks the Host's
// sink got each one unchanged, memorykit.events counted each kind once, the
// per-kind instruments moved, and no label kept the bad reason.
func TestEveryEventKindIsCountedAndForwarded(t *testing.T) {
	sink := &testkit.Sink{}
	tel, reader, _ := newTelemetry(t, sink)
	kinds := []memorykit.EventKind{
		memorykit.EventRecallDegraded, memorykit.EventRecallCompleted, memorykit.EventWriteFailed,
		memorykit.EventWriteStored, memorykit.EventCandidateStored, memorykit.EventExtractionEnqueued,
		memorykit.EventExtractionEnqueueFailed, memorykit.EventJobCompleted, memorykit.EventJobRetry,
		memorykit.EventJobFailed, memorykit.EventCandidateInvalid, memorykit.EventEmbeddingStored,
		memorykit.EventEmbeddingRetry, memorykit.EventEmbeddingFailed, memorykit.EventLeasesReaped,
		memorykit.EventActorRestarted, memorykit.EventActorGaveUp, memorykit.EventActorStopped,
		memorykit.EventWorkerError, memorykit.EventLifecycle, memorykit.EventActorDegraded,
		memorykit.EventActorRecovered,
	}
	for _, k := range kinds {
		e := memorykit.Event{Kind: k, Actor: "worker:embed", Count: 2, Reason: "store_down"}
		switch k {
		case memorykit.EventLifecycle:
			e.Actor, e.Action, e.Reason = "reviewer:rita", memorykit.ActionActivate, "ok"
		case memorykit.EventWriteFailed:
			e.Actor, e.Reason = "model:agent-1", "bad reason "+canary
		}
		tel.Emit(e)
	}
	if got := len(sink.Events()); got != len(kinds) {
		t.Fatalf("sink got %d events, want %d", got, len(kinds))
	}
	ms := collect(t, reader)
	for _, k := range kinds {
		if n := sum(t, ms, mkotel.MetricEvents, map[string]string{"memorykit.event.kind": string(k)}); n != 1 {
			t.Errorf("events{%s} = %d, want 1", k, n)
		}
	}
	checks := []struct {
		name string
		attr map[string]string
		want int64
	}{
		{mkotel.MetricRecallDegraded, map[string]string{"memorykit.reason": "store_down"}, 1},
		{mkotel.MetricWrites, map[string]string{"memorykit.write.path": "model", "memorykit.outcome": "failed", "memorykit.reason": "invalid"}, 1},
		{mkotel.MetricWrites, map[string]string{"memorykit.outcome": "stored"}, 2},
		{mkotel.MetricCandidates, map[string]string{"memorykit.outcome": "stored"}, 2},
		{mkotel.MetricCandidates, map[string]string{"memorykit.outcome": "invalid"}, 2},
		{mkotel.MetricCandidates, map[string]string{"memorykit.outcome": "activated", "memorykit.write.path": "reviewer"}, 1},
		{mkotel.MetricLifecycle, map[string]string{"memorykit.action": "activate", "memorykit.outcome": "ok"}, 1},
		{mkotel.MetricJobs, nil, 5},
		{mkotel.MetricJobs, map[string]string{"memorykit.outcome": "retry", "memorykit.reason": "store_down"}, 1},
		{mkotel.MetricEmbeddings, map[string]string{"memorykit.outcome": "failed"}, 2},
		{mkotel.MetricLeasesReaped, nil, 2},
		{mkotel.MetricActorEvents, map[string]string{"memorykit.actor": "embed"}, 5},
		{mkotel.MetricActorEvents, map[string]string{"memorykit.event.kind": "actor.degraded", "memorykit.reason": "store_down"}, 1},
		{mkotel.MetricWorkerErrors, map[string]string{"memorykit.reason": "store_down"}, 1},
	}
	for _, c := range checks {
		if got := sum(t, ms, c.name, c.attr); got != c.want {
			t.Errorf("%s%v = %d, want %d", c.name, c.attr, got, c.want)
		}
	}
	if labels := allLabels(ms); strings.Contains(labels, canary) {
		t.Errorf("a label holds the canary:\n%s", labels)
	}
}

// TestNewRefusesPartialConfig: every Config field is required.
func TestNewRefusesPartialConfig(t *testing.T) {
	full := mkotel.Config{MeterProvider: noop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider(), Next: memorykit.DiscardEvents{}}
	if _, err := mkotel.New(full); err != nil {
		t.Fatalf("full config: %v", err)
	}
	for name, mutate := range map[string]func(*mkotel.Config){
		"meter":  func(c *mkotel.Config) { c.MeterProvider = nil },
		"tracer": func(c *mkotel.Config) { c.TracerProvider = nil },
		"next":   func(c *mkotel.Config) { c.Next = nil },
	} {
		c := full
		mutate(&c)
		if _, err := mkotel.New(c); !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("no %s: %v", name, err)
		}
	}
	tel, err := mkotel.New(full)
	if err != nil {
		t.Fatal(err)
	}
	if err := tel.ObserveHealth(nil); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Errorf("ObserveHealth(nil) = %v", err)
	}
	if err := tel.ObserveQueue(nil, "memorykit/hash-v1"); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Errorf("ObserveQueue(nil) = %v", err)
	}
}

// BenchmarkEmit is the cost Telemetry adds to each event on a request
// path, with the SDK's MeterProvider behind it.
func BenchmarkEmit(b *testing.B) {
	tel, _, _ := newTelemetry(b, memorykit.DiscardEvents{})
	e := memorykit.Event{Kind: memorykit.EventWriteStored, Actor: "user:alice", Count: 1, Reason: "active"}
	b.ReportAllocs()
	for b.Loop() {
		tel.Emit(e)
	}
}
