package main

import (
	"context"
	"errors"
	"net/http"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/goagents/memorykit"
	mkotel "github.com/goagents/memorykit/otel"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
)

// observability is the Host's OpenTelemetry wiring: a MeterProvider that
// the Prometheus exporter reads on every scrape of GET /metrics, and the
// memorykit/otel Telemetry that feeds it. The example exports no traces (a
// no-op TracerProvider); a Host that has a collector passes an SDK
// TracerProvider with its exporter instead, and the same decorators then
// produce spans.
type observability struct {
	tel     *mkotel.Telemetry
	mp      *sdkmetric.MeterProvider
	handler http.Handler
	// overloaded counts the requests the edge turned away, per class.
	overloaded metric.Int64Counter
}

// newObservability builds the providers; next is the Host's own event sink.
// The registry is the Host's own, not Prometheus's global one, so two Hosts
// in one process (the tests) never collide.
func newObservability(next memorykit.EventSink) (*observability, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, memorykit.WrapError("host.metrics", memorykit.ErrInvalidConfig, "exporter_failed", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	tel, err := mkotel.New(mkotel.Config{MeterProvider: mp, TracerProvider: tracenoop.NewTracerProvider(), Next: next})
	if err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, err
	}
	overloaded, err := mp.Meter("github.com/goagents/memorykit/examples/host-api").Int64Counter("host.http.overloaded",
		metric.WithDescription("Requests the Host turned away at its in-flight bound, by class."),
		metric.WithUnit("{request}"))
	if err != nil {
		_ = tel.Close()
		_ = mp.Shutdown(context.Background())
		return nil, memorykit.WrapError("host.metrics", memorykit.ErrInvalidConfig, "instrument_failed", err)
	}
	return &observability{tel: tel, mp: mp, handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), overloaded: overloaded}, nil
}

// refused counts a request the edge turned away.
func (o *observability) refused(ctx context.Context, class string) {
	o.overloaded.Add(ctx, 1, metric.WithAttributes(attribute.String("host_class", class)))
}

// instrument points cfg's event sink at the Telemetry and wraps its stores,
// embedder and extractor in spans.
func (o *observability) instrument(cfg *mkruntime.Config, clk clock.Clock) {
	cfg.Events = o.tel
	cfg.Stores = o.tel.WrapStores(cfg.Stores, clk)
	cfg.Embedder = o.tel.WrapEmbedder(cfg.Embedder, clk)
	cfg.Extractor = o.tel.WrapExtractor(cfg.Extractor)
}

// observe registers the gauges read at scrape time: actor and runtime state
// from rt.Health(), queue depth and pending embeddings from the store.
func (o *observability) observe(rt *mkruntime.Runtime, store storekit.Store, profile string) error {
	return errors.Join(o.tel.ObserveHealth(rt), o.tel.ObserveQueue(store, profile))
}

// close unregisters the gauges and shuts the MeterProvider down.
func (o *observability) close(ctx context.Context) error {
	return errors.Join(o.tel.Close(), o.mp.Shutdown(ctx))
}
