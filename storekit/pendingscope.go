package storekit

import (
	"context"

	"github.com/goagents/memorykit"
)

// ScopedPendingCounter is implemented by stores that count pending
// embeddings of one Scope; memorystore and pgstore implement it, and
// Runtime.AwaitEmbedded needs it.
//
// PendingEmbeddingsIn counts the Scope's active records with no embedding
// of the profile at their current content hash, parked ones included: what
// PendingEmbeddings counts, restricted to the Scope. An invalid Scope is
// ErrInvalidScope and an invalid profile ErrInvalidInput.
type ScopedPendingCounter interface {
	PendingEmbeddingsIn(ctx context.Context, scope memorykit.Scope, profile string) (int, error)
}
