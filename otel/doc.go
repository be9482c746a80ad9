// Package mkotel turns memorykit's content-free events into OpenTelemetry
// metrics and wraps the parts a Host hands to the Runtime in spans. It uses
// only the OpenTelemetry metric and trace APIs: the Host brings the SDK,
// the exporter and the providers. Import it under its package name:
//
//	import mkotel "github.com/goagents/memorykit/otel"
//
// The core packages (memorykit, the stores, runtime and the workers) do not
// import OpenTelemetry; everything here hooks in from outside:
//
//	tel, err := mkotel.New(mkotel.Config{MeterProvider: mp, TracerProvider: tp, Next: hostSink})
//	cfg.Events = tel                                  // metrics from events, then the Host's sink
//	cfg.Stores = tel.WrapStores(cfg.Stores, cfg.Clock) // spans around recall, writes, worker store calls
//	cfg.Embedder = tel.WrapEmbedder(cfg.Embedder, cfg.Clock)
//	cfg.Extractor = tel.WrapExtractor(cfg.Extractor)
//	rt, err := mkruntime.New(cfg)
//	err = tel.ObserveHealth(rt)                       // actor and runtime state gauges
//	err = tel.ObserveQueue(store, cfg.Policy.EmbeddingProfile) // queue depth gauges
//	defer tel.Close()
//
// # Metrics
//
// Durations are in seconds on the Runtime's injected clock; counts carry a
// curly-brace unit. Metric attributes are bounded codes only, never tenant,
// subject or record identifiers (which would explode cardinality) and never
// content. A reason that is not a well-formed reason code is reported as
// "invalid"; an empty one as "none".
//
//	memorykit.recall.duration        histogram s        whole recalls; memorykit.outcome (completed, degraded), memorykit.reason
//	memorykit.recall.degraded        counter {recall}   memorykit.channel (vector, or all when no memory was used), memorykit.reason
//	memorykit.recall.store.duration  histogram s        the store round trip that answers the exact, full_text and vector channels
//	                                                    together; memorykit.recall.vector (whether a query vector was sent), memorykit.outcome
//	memorykit.recall.hits            histogram {hit}    hits per recall; memorykit.channel (exact, full_text, vector)
//	memorykit.embedder.duration      histogram s        Embed calls (query and worker); memorykit.embedder.profile, memorykit.outcome
//	memorykit.writes                 counter {write}    memorykit.write.path (the writing actor's kind: user, model, worker, ...),
//	                                                    memorykit.outcome (stored, candidate, failed), memorykit.reason on failures
//	memorykit.candidates             counter {candidate} memorykit.outcome (stored, invalid, activated, rejected), memorykit.write.path
//	memorykit.lifecycle.transitions  counter {transition} reviewer actions; memorykit.action, memorykit.outcome (ok, failed), memorykit.reason
//	memorykit.jobs                   counter {job}      memorykit.outcome (enqueued, enqueue_failed, completed, retry, failed), memorykit.reason
//	memorykit.embeddings             counter {record}   memorykit.outcome (stored, retry, failed), memorykit.reason
//	memorykit.leases.reaped          counter {lease}    expired leases returned by the reaper
//	memorykit.actor.events           counter {event}    memorykit.actor, memorykit.event.kind (actor.restarted, actor.gave_up,
//	                                                    actor.stopped, actor.degraded, actor.recovered), memorykit.reason
//	memorykit.worker.errors          counter {error}    memorykit.reason
//	memorykit.events                 counter {event}    every event; memorykit.event.kind
//	memorykit.queue.depth            gauge {job}        extraction jobs; memorykit.job.state (queued, leased, done, failed)
//	memorykit.embeddings.pending     gauge {record}     records without a current embedding; memorykit.embedder.profile
//	memorykit.actor.state            gauge {actor}      1 for an actor's current state, 0 for the others; memorykit.actor,
//	                                                    memorykit.actor.state (running, backing_off, stopped)
//	memorykit.actor.failures         gauge {failure}    consecutive failures behind backing_off; memorykit.actor
//	memorykit.runtime.state          gauge {state}      1 for the Runtime's lifecycle state; memorykit.runtime.state (new, running,
//	                                                    draining, stopped)
//
// The store answers all three recall channels in one round trip, so there
// is no separate latency per channel: memorykit.recall.store.duration is
// that round trip, memorykit.embedder.duration the query (and worker)
// embedding the vector channel waits for, and memorykit.recall.hits what
// each channel returned.
//
// # Spans
//
// memorykit.recall (the recall store call), memorykit.write.create,
// memorykit.write.activate, .reject, .correct, .forget and .erase,
// memorykit.write.create_batch, memorykit.embed.lease,
// memorykit.embed.put, memorykit.embed.put_batch, memorykit.job.enqueue,
// memorykit.job.lease, memorykit.job.complete, memorykit.job.fail,
// memorykit.embedder.embed and memorykit.extractor.extract. Their
// attributes are identifiers (tenant, subject, record, job, worker),
// counts, kinds, statuses, versions and reason codes. A failed call sets
// the span's status to Error with the reason code as description and adds
// memorykit.error.kind and memorykit.reason; the error's message is never
// recorded, and neither are keys, content, metadata, sources, query text,
// vectors or payloads.
package mkotel
