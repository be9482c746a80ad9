package mkotel

import (
	"context"

	"github.com/benbjohnson/clock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/goagents/memorykit"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
)

// Span names. Every span is started by a decorator around a part the Host
// hands to the Runtime, so the core packages need no tracing import.
const (
	SpanRecall        = "memorykit.recall"
	SpanWritePrefix   = "memorykit.write." // + create, activate, reject, correct, forget, erase
	SpanEmbedLease    = "memorykit.embed.lease"
	SpanEmbedPut      = "memorykit.embed.put"
	SpanEmbedPutBatch = "memorykit.embed.put_batch"
	SpanWriteBatch    = "memorykit.write.create_batch"
	SpanJobEnqueue    = "memorykit.job.enqueue"
	SpanJobLease      = "memorykit.job.lease"
	SpanJobComplete   = "memorykit.job.complete"
	SpanJobFail       = "memorykit.job.fail"
	SpanEmbedderEmbed = "memorykit.embedder.embed"
	SpanExtractorRun  = "memorykit.extractor.extract"
)

// WrapStores returns s with every role decorated: recall, writes
// (create and every transition), embedding leases and puts, and job
// enqueue, lease, complete and fail each run in a span. The recall
// decorator also records memorykit.recall.store.duration and
// memorykit.recall.hits, timed on clk (pass the Runtime's clock). Methods
// not listed pass through untouched.
//
// The optional batch interfaces survive the wrapping: a wrapped store
// implements storekit.BatchCreator or storekit.EmbeddingBatchPutter
// exactly when the store it wraps does (the embedding worker looks for the
// latter), and those calls get spans too.
func (t *Telemetry) WrapStores(s mkruntime.Stores, clk clock.Clock) mkruntime.Stores {
	out := mkruntime.Stores{
		Lifecycle:  lifecycleStore{LifecycleStore: s.Lifecycle, t: t},
		Recall:     recallStore{RecallStore: s.Recall, t: t, clk: clk},
		Embeddings: embeddingStore{EmbeddingStore: s.Embeddings, t: t},
		Jobs:       jobStore{JobStore: s.Jobs, t: t},
	}
	if b, ok := s.Lifecycle.(storekit.BatchCreator); ok {
		out.Lifecycle = batchLifecycleStore{lifecycleStore: out.Lifecycle.(lifecycleStore), batch: b}
	}
	if b, ok := s.Embeddings.(storekit.EmbeddingBatchPutter); ok {
		out.Embeddings = batchEmbeddingStore{embeddingStore: out.Embeddings.(embeddingStore), batch: b}
	}
	return out
}

// WrapEmbedder returns emb with every Embed call in a span (profile, text
// count, outcome) and timed into memorykit.embedder.duration on clk. The
// Runtime uses one Embedder for query embedding and for the embedding
// worker, so both appear.
func (t *Telemetry) WrapEmbedder(emb memorykit.Embedder, clk clock.Clock) memorykit.Embedder {
	return embedder{Embedder: emb, t: t, clk: clk}
}

// WrapExtractor returns ex with every Extract call in a span (job id,
// Scope, attempt, proposal count, outcome).
func (t *Telemetry) WrapExtractor(ex memorykit.Extractor) memorykit.Extractor {
	return extractor{ex: ex, t: t}
}

func scopeAttrs(s memorykit.Scope) []attribute.KeyValue {
	return []attribute.KeyValue{
		AttrTenantID.String(id(s.TenantID)),
		AttrSubjectType.String(id(string(s.SubjectType))),
		AttrSubjectID.String(id(s.SubjectID)),
	}
}

// id keeps a value only when it is shaped like a memorykit identifier, so
// a malformed caller-supplied value never reaches a span.
func id(v string) string {
	if storekit.ValidateID("", "", v) != nil {
		return "invalid"
	}
	return v
}

// end closes a span with content-free error details: the error's kind and
// reason codes, never its message.
func end(span trace.Span, err error) {
	if err != nil {
		reason := memorykit.ReasonCode(err)
		span.SetAttributes(AttrErrorKind.String(memorykit.KindCode(err)), AttrReason.String(code(reason)))
		span.SetStatus(codes.Error, code(reason))
	}
	span.End()
}

// kindOf keeps an actor kind only when it is a known one.
func kindOf(k memorykit.ActorKind) string {
	if !k.Valid() {
		return "invalid"
	}
	return string(k)
}

func outcome(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

type recallStore struct {
	storekit.RecallStore
	t   *Telemetry
	clk clock.Clock
}

func (s recallStore) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	attrs := append(scopeAttrs(q.Scope),
		AttrExactKeys.Int(len(q.ExactKeys)), AttrTerms.Int(len(q.Terms)), AttrVector.Bool(q.Vector != nil))
	ctx, span := s.t.tracer.Start(ctx, SpanRecall, trace.WithAttributes(attrs...))
	start := s.clk.Now()
	res, err := s.RecallStore.Recall(ctx, q)
	elapsed := s.clk.Since(start)
	s.t.storeDuration.Record(ctx, elapsed.Seconds(), metric.WithAttributes(
		AttrVector.Bool(q.Vector != nil), AttrOutcome.String(outcome(err))))
	if err == nil {
		span.SetAttributes(AttrHitsExact.Int(len(res.Exact)), AttrHitsFull.Int(len(res.FullText)),
			AttrHitsVector.Int(len(res.Vector)))
		for ch, n := range map[memorykit.Channel]int{
			memorykit.ChannelExact: len(res.Exact), memorykit.ChannelFullText: len(res.FullText), memorykit.ChannelVector: len(res.Vector),
		} {
			s.t.recallHits.Record(ctx, int64(n), metric.WithAttributes(AttrChannel.String(string(ch))))
		}
		if res.VectorErr != nil {
			span.SetAttributes(AttrChannel.String(string(memorykit.ChannelVector)),
				attribute.String("memorykit.recall.vector_reason", code(memorykit.ReasonCode(res.VectorErr))))
		}
	}
	end(span, err)
	return res, err
}

type lifecycleStore struct {
	storekit.LifecycleStore
	t *Telemetry
}

func (s lifecycleStore) start(ctx context.Context, action string, scope memorykit.Scope, kv ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs := append(scopeAttrs(scope), kv...)
	return s.t.tracer.Start(ctx, SpanWritePrefix+action, trace.WithAttributes(attrs...))
}

func recordAttrs(span trace.Span, r memorykit.Record, err error) {
	if err == nil {
		span.SetAttributes(AttrRecordID.String(id(r.ID)), AttrStatus.String(code(string(r.Status))), AttrVersion.Int64(r.Version))
	}
}

func (s lifecycleStore) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	ctx, span := s.start(ctx, "create", in.Scope, AttrRecordKind.String(code(string(in.Kind))),
		AttrStatus.String(code(string(in.Status))), AttrActorKind.String(kindOf(in.Actor.Kind)))
	r, err := s.LifecycleStore.Create(ctx, in)
	recordAttrs(span, r, err)
	end(span, err)
	return r, err
}

func (s lifecycleStore) transition(ctx context.Context, action string, t storekit.Transition,
	do func(context.Context, storekit.Transition) (memorykit.Record, error)) (memorykit.Record, error) {
	ctx, span := s.start(ctx, action, t.Scope, AttrRecordID.String(id(t.ID)), AttrActorKind.String(kindOf(t.Actor.Kind)))
	r, err := do(ctx, t)
	recordAttrs(span, r, err)
	end(span, err)
	return r, err
}

func (s lifecycleStore) Activate(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "activate", t, s.LifecycleStore.Activate)
}

func (s lifecycleStore) Reject(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "reject", t, s.LifecycleStore.Reject)
}

func (s lifecycleStore) Forget(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "forget", t, s.LifecycleStore.Forget)
}

func (s lifecycleStore) Erase(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "erase", t, s.LifecycleStore.Erase)
}

func (s lifecycleStore) Correct(ctx context.Context, c storekit.Correction) (memorykit.Record, error) {
	ctx, span := s.start(ctx, "correct", c.Scope, AttrRecordID.String(id(c.ID)), AttrActorKind.String(kindOf(c.Actor.Kind)))
	r, err := s.LifecycleStore.Correct(ctx, c)
	recordAttrs(span, r, err)
	end(span, err)
	return r, err
}

type embeddingStore struct {
	storekit.EmbeddingStore
	t *Telemetry
}

func (s embeddingStore) LeaseEmbeddings(ctx context.Context, p storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	ctx, span := s.t.tracer.Start(ctx, SpanEmbedLease, trace.WithAttributes(AttrWorkerID.String(id(p.WorkerID))))
	tasks, err := s.EmbeddingStore.LeaseEmbeddings(ctx, p)
	span.SetAttributes(AttrCount.Int(len(tasks)))
	end(span, err)
	return tasks, err
}

func (s embeddingStore) PutEmbedding(ctx context.Context, p storekit.EmbeddingPut) error {
	ctx, span := s.t.tracer.Start(ctx, SpanEmbedPut, trace.WithAttributes(
		append(scopeAttrs(p.Scope), AttrRecordID.String(id(p.RecordID)), AttrWorkerID.String(id(p.WorkerID)))...))
	err := s.EmbeddingStore.PutEmbedding(ctx, p)
	end(span, err)
	return err
}

// batchLifecycleStore is a lifecycleStore over a store that also creates
// in batches.
type batchLifecycleStore struct {
	lifecycleStore
	batch storekit.BatchCreator
}

func (s batchLifecycleStore) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	ctx, span := s.t.tracer.Start(ctx, SpanWriteBatch, trace.WithAttributes(AttrCount.Int(len(items))))
	recs, err := s.batch.CreateBatch(ctx, items)
	end(span, err)
	return recs, err
}

// batchEmbeddingStore is an embeddingStore over a store that also puts
// embeddings in batches.
type batchEmbeddingStore struct {
	embeddingStore
	batch storekit.EmbeddingBatchPutter
}

func (s batchEmbeddingStore) PutEmbeddings(ctx context.Context, puts []storekit.EmbeddingPut) ([]error, error) {
	ctx, span := s.t.tracer.Start(ctx, SpanEmbedPutBatch, trace.WithAttributes(AttrCount.Int(len(puts))))
	errs, err := s.batch.PutEmbeddings(ctx, puts)
	failed := 0
	for _, e := range errs {
		if e != nil {
			failed++
		}
	}
	span.SetAttributes(attribute.Int("memorykit.failed", failed))
	end(span, err)
	return errs, err
}

type jobStore struct {
	storekit.JobStore
	t *Telemetry
}

func (s jobStore) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	ctx, span := s.t.tracer.Start(ctx, SpanJobEnqueue, trace.WithAttributes(
		append(scopeAttrs(j.Scope), AttrJobID.String(id(j.ID)))...))
	job, err := s.JobStore.EnqueueJob(ctx, j)
	end(span, err)
	return job, err
}

func (s jobStore) LeaseJobs(ctx context.Context, p storekit.JobLease) ([]storekit.Job, error) {
	ctx, span := s.t.tracer.Start(ctx, SpanJobLease, trace.WithAttributes(AttrWorkerID.String(id(p.WorkerID))))
	jobs, err := s.JobStore.LeaseJobs(ctx, p)
	span.SetAttributes(AttrCount.Int(len(jobs)))
	end(span, err)
	return jobs, err
}

func (s jobStore) CompleteJob(ctx context.Context, c storekit.JobCompletion) (int, error) {
	ctx, span := s.t.tracer.Start(ctx, SpanJobComplete, trace.WithAttributes(
		AttrJobID.String(id(c.JobID)), AttrWorkerID.String(id(c.WorkerID))))
	n, err := s.JobStore.CompleteJob(ctx, c)
	span.SetAttributes(AttrCount.Int(n))
	end(span, err)
	return n, err
}

func (s jobStore) FailJob(ctx context.Context, f storekit.JobFailure) (storekit.Job, error) {
	ctx, span := s.t.tracer.Start(ctx, SpanJobFail, trace.WithAttributes(
		AttrJobID.String(id(f.JobID)), AttrWorkerID.String(id(f.WorkerID))))
	job, err := s.JobStore.FailJob(ctx, f)
	end(span, err)
	return job, err
}

type embedder struct {
	memorykit.Embedder
	t   *Telemetry
	clk clock.Clock
}

func (e embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	prof := AttrProfile.String(e.Profile())
	ctx, span := e.t.tracer.Start(ctx, SpanEmbedderEmbed, trace.WithAttributes(prof, AttrCount.Int(len(texts))))
	start := e.clk.Now()
	v, err := e.Embedder.Embed(ctx, texts)
	e.t.embedDuration.Record(ctx, e.clk.Since(start).Seconds(), metric.WithAttributes(prof, AttrOutcome.String(outcome(err))))
	end(span, err)
	return v, err
}

type extractor struct {
	ex memorykit.Extractor
	t  *Telemetry
}

func (x extractor) Extract(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	ctx, span := x.t.tracer.Start(ctx, SpanExtractorRun, trace.WithAttributes(
		append(scopeAttrs(in.Scope), AttrJobID.String(id(in.JobID)), AttrAttempt.Int(in.Attempt))...))
	props, err := x.ex.Extract(ctx, in)
	span.SetAttributes(AttrCount.Int(len(props)))
	end(span, err)
	return props, err
}

// Purge passes a project purge to the wrapped store, in a span, when that
// store is a storekit.Purger; otherwise it answers ErrInvalidConfig with
// reason "purge_unsupported", as the runtime does for such a store.
func (s lifecycleStore) Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error) {
	p, ok := s.LifecycleStore.(storekit.Purger)
	if !ok {
		return memorykit.PurgeReport{}, memorykit.NewError("otel.purge", memorykit.ErrInvalidConfig, "purge_unsupported")
	}
	ctx, span := s.start(ctx, "purge", scope, AttrActorKind.String(kindOf(actor.Kind)))
	rep, err := p.Purge(ctx, scope, actor, reason)
	if err == nil {
		span.SetAttributes(AttrCount.Int(rep.Records))
	}
	end(span, err)
	return rep, err
}

// PendingEmbeddingsIn passes a per-Scope pending count to the wrapped store
// when it is a storekit.ScopedPendingCounter; otherwise it answers
// ErrInvalidConfig with reason "pending_in_scope_unsupported".
func (s embeddingStore) PendingEmbeddingsIn(ctx context.Context, scope memorykit.Scope, profile string) (int, error) {
	c, ok := s.EmbeddingStore.(storekit.ScopedPendingCounter)
	if !ok {
		return 0, memorykit.NewError("otel.pending_embeddings_in", memorykit.ErrInvalidConfig, "pending_in_scope_unsupported")
	}
	return c.PendingEmbeddingsIn(ctx, scope, profile)
}
