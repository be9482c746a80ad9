package runtime

import (
	"context"
	"sync"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/storekit"
)

// roundSignal wakes everyone waiting for the embedding worker's next
// round: each round closes the current channel and opens a new one.
type roundSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newRoundSignal() *roundSignal { return &roundSignal{ch: make(chan struct{})} }

// next returns the channel the next round (or Drain or Stop) closes.
func (s *roundSignal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// fire wakes every waiter.
func (s *roundSignal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.ch)
	s.ch = make(chan struct{})
}

func (s *roundSignal) onRound(embedworker.Round) { s.fire() }

// PendingEmbeddings counts the Scope's active records that still wait for
// an embedding of the Runtime's profile (parked ones included). It needs a
// Stores.Embeddings that implements storekit.ScopedPendingCounter (both
// stores do) and is 0 under a LexicalOnly policy, which embeds nothing.
func (r *Runtime) PendingEmbeddings(ctx context.Context, scope memorykit.Scope) (int, error) {
	const op = "runtime.pending_embeddings"
	if err := scope.Validate(); err != nil {
		return 0, err
	}
	if r.cfg.Embedder == nil {
		return 0, nil
	}
	c, ok := r.cfg.Stores.Embeddings.(storekit.ScopedPendingCounter)
	if !ok {
		return 0, memorykit.ConfigError(op, "stores.embeddings", "no_scoped_pending_count")
	}
	n, err := c.PendingEmbeddingsIn(ctx, scope, r.cfg.Policy.EmbeddingProfile)
	if err != nil {
		return 0, storekit.Contain(op, err)
	}
	return n, nil
}

// AwaitEmbedded returns nil once the Scope has no pending embeddings (see
// PendingEmbeddings), for example after an Import, before a Host relies on
// vector recall of what it wrote. It counts once, then again after each
// round of this Runtime's embedding worker, which wakes it: the caller
// runs no polling loop, and on a mock clock the wait moves as the test
// advances the worker. A record the worker parked after repeated failures
// stays pending, so bound the wait with ctx.
//
// It returns ctx's error (an ErrUnavailable *memorykit.Error) when ctx ends
// first, and the gate's typed error before Start or after Drain or Stop,
// when no worker of this Runtime would embed anything. Under a LexicalOnly
// policy there is nothing to wait for and it returns nil at once.
func (r *Runtime) AwaitEmbedded(ctx context.Context, scope memorykit.Scope) error {
	const op = "runtime.await_embedded"
	if err := scope.Validate(); err != nil {
		return err
	}
	if r.cfg.Embedder == nil {
		return nil
	}
	for {
		if err := r.gate.check(op); err != nil {
			return err
		}
		wake := r.rounds.next() // before counting, so no round is missed
		n, err := r.PendingEmbeddings(ctx, scope)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", ctx.Err())
		}
	}
}
