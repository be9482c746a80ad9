package mkotel_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/benbjohnson/clock"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/memorystore"
	mkotel "github.com/goagents/memorykit/otel"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// anyProject lets alice act on acme/apollo and denies everything else.
type anyProject struct{}

func (anyProject) Authorize(_ context.Context, p memorykit.Principal, _ memorykit.Permission, s memorykit.Scope) error {
	if p.TenantID == "acme" && s.SubjectID == "apollo" && p.Actor.ID == "alice" {
		return nil
	}
	return errors.New("denied")
}

type acceptContent struct{}

func (acceptContent) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

type noProposals struct{}

func (noProposals) Extract(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	return nil, nil
}

// countingSink is the Host's own EventSink; actors emit concurrently.
type countingSink struct{ n atomic.Int64 }

func (c *countingSink) Emit(memorykit.Event) { c.n.Add(1) }

// Example_wiring is the wiring docs/observability.md shows verbatim, on
// no-op providers (a Host passes its SDK's).
func Example_wiring() {
	ctx, clk := context.Background(), clock.New()
	guard, _ := memorykit.NewWriteGuard(memorykit.LimitsV1(), acceptContent{})
	keyer, _ := memorykit.NewTombstoneKeyer([]byte("example tombstone secret: load yours from a secret store"))
	store, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: keyer})
	if err != nil {
		panic(err)
	}
	cfg := mkruntime.Preset(mkruntime.Essentials{
		Guard: guard, Store: store, Authorizer: anyProject{}, Embedder: embedder.NewLocalV2(),
		Extractor: noProposals{}, Clock: clk, WorkerID: "host-1", Logger: zap.NewNop(), Events: memorykit.DiscardEvents{},
	})
	mp, tp, hostSink := metricnoop.NewMeterProvider(), tracenoop.NewTracerProvider(), &countingSink{}

	tel, err := mkotel.New(mkotel.Config{
		MeterProvider:  mp,       // the Host's SDK MeterProvider (or a no-op one)
		TracerProvider: tp,       // the Host's SDK TracerProvider (or a no-op one)
		Next:           hostSink, // the Host's own EventSink; every event is forwarded unchanged
	})
	if err != nil {
		panic(err)
	}
	defer tel.Close()                                  // unregisters the gauges
	cfg.Events = tel                                   // metrics from events
	cfg.Stores = tel.WrapStores(cfg.Stores, cfg.Clock) // spans: recall, writes, worker store calls
	cfg.Embedder = tel.WrapEmbedder(cfg.Embedder, cfg.Clock)
	cfg.Extractor = tel.WrapExtractor(cfg.Extractor)
	rt, err := mkruntime.New(cfg)
	if err != nil {
		panic(err)
	}
	if err := tel.ObserveHealth(rt); err != nil { // actor and runtime state
		panic(err)
	}
	if err := tel.ObserveQueue(store, cfg.Policy.EmbeddingProfile); err != nil { // queue depth, pending embeddings
		panic(err)
	}

	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	alice := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}
	_, err = rt.Session(ctx, mkruntime.Request{Caller: alice, Scope: scope, ModelID: "agent-1"})
	fmt.Println("session:", err, "stop:", rt.Stop(ctx), "events reached the Host's sink:", hostSink.n.Load() > 0)
	// Output:
	// session: <nil> stop: <nil> events reached the Host's sink: true
}
