package testkit

// Test support for the recall engine and the packages built on it
// (projector, memorytools): fault-injecting RecallStore and Embedder
// doubles. The fixtures that plant records recall must never return are in
// recallfixtures.go.

import (
	"context"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// EmbedAll stores emb's vector of each record's EmbeddingText, as the
// embedding worker would.
func EmbedAll(t testing.TB, s storekit.EmbeddingStore, emb memorykit.Embedder, recs ...memorykit.Record) {
	t.Helper()
	ctx := context.Background()
	for _, r := range recs {
		vs, err := emb.Embed(ctx, []string{r.EmbeddingText()})
		if err != nil {
			t.Fatalf("embed %s: %v", r.ID, err)
		}
		if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{
			Scope: r.Scope, RecordID: r.ID, Profile: emb.Profile(), ContentHash: r.ContentHash,
			Vector: vs[0], WorkerID: "embedder-test",
		}); err != nil {
			t.Fatalf("put embedding %s: %v", r.ID, err)
		}
	}
}

// FaultStore wraps a RecallStore and injects failures.
type FaultStore struct {
	Inner storekit.RecallStore
	// Err, when set, is returned instead of calling Inner.
	Err error
	// VectorErr, when set, is put into the result's VectorErr.
	VectorErr error
	// Edit, when set, may change the result before it is returned (to
	// forge integrity violations).
	Edit func(*storekit.RecallResult)

	mu    sync.Mutex
	calls int
}

// Recall implements storekit.RecallStore.
func (f *FaultStore) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if f.Err != nil {
		return storekit.RecallResult{}, f.Err
	}
	res, err := f.Inner.Recall(ctx, q)
	if err != nil {
		return res, err
	}
	if f.VectorErr != nil {
		res.VectorErr = f.VectorErr
	}
	if f.Edit != nil {
		f.Edit(&res)
	}
	return res, nil
}

// Calls reports how many times Recall ran.
func (f *FaultStore) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// BlockingStore blocks every Recall until its context is done. It closes
// Blocked (once) when the first call is blocked, so a test advances a mock
// clock only after the engine's deadline timer exists and the call waits.
type BlockingStore struct {
	Inner storekit.RecallStore
	// Late, when set, makes Recall answer with Inner's result after the
	// context ends, like a store that ignores cancellation.
	Late bool

	once    sync.Once
	blocked chan struct{}
}

// NewBlockingStore returns a BlockingStore around inner.
func NewBlockingStore(inner storekit.RecallStore, late bool) *BlockingStore {
	return &BlockingStore{Inner: inner, Late: late, blocked: make(chan struct{})}
}

// Blocked is closed once a Recall call is waiting.
func (b *BlockingStore) Blocked() <-chan struct{} { return b.blocked }

// Recall implements storekit.RecallStore.
func (b *BlockingStore) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	b.once.Do(func() { close(b.blocked) })
	<-ctx.Done()
	if b.Late {
		return b.Inner.Recall(context.WithoutCancel(ctx), q)
	}
	return storekit.RecallResult{}, memorykit.WrapError("testkit.blocking", memorykit.ErrUnavailable, "context_done", ctx.Err())
}

// FaultEmbedder wraps an Embedder and injects failures or blocks.
type FaultEmbedder struct {
	Inner memorykit.Embedder
	// Err, when set, is returned by Embed.
	Err error
	// Vectors, when set, replaces Inner's answer (to forge a bad shape).
	Vectors [][]float32
	// Block makes Embed wait for its context to end; Blocked is closed
	// once it waits.
	Block bool

	once    sync.Once
	blocked chan struct{}
	mu      sync.Mutex
	texts   []string
}

// NewFaultEmbedder returns a FaultEmbedder around inner.
func NewFaultEmbedder(inner memorykit.Embedder) *FaultEmbedder {
	return &FaultEmbedder{Inner: inner, blocked: make(chan struct{})}
}

// Profile implements memorykit.Embedder.
func (f *FaultEmbedder) Profile() string { return f.Inner.Profile() }

// Dimension implements memorykit.Embedder.
func (f *FaultEmbedder) Dimension() int { return f.Inner.Dimension() }

// Blocked is closed once an Embed call waits (with Block set).
func (f *FaultEmbedder) Blocked() <-chan struct{} { return f.blocked }

// Texts returns every text Embed was asked for.
func (f *FaultEmbedder) Texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.texts...)
}

// Embed implements memorykit.Embedder.
func (f *FaultEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.texts = append(f.texts, texts...)
	f.mu.Unlock()
	if f.Block {
		f.once.Do(func() { close(f.blocked) })
		<-ctx.Done()
		return nil, &memorykit.Error{Op: "testkit.embed", Kind: memorykit.ErrUnavailable, Reason: "canceled", Err: ctx.Err(), Retry: true}
	}
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Vectors != nil {
		return f.Vectors, nil
	}
	return f.Inner.Embed(ctx, texts)
}
