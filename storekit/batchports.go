package storekit

import (
	"context"

	"github.com/goagents/memorykit"
)

// BatchItem is one record of a batch write, with an optional embedding of
// its content.
type BatchItem struct {
	Record memorykit.NewRecord
	// Embedding, when set, is stored with the record as PutEmbedding would
	// store it for the record's content hash. Only an active record may
	// carry one.
	Embedding *BatchEmbedding
}

// BatchEmbedding is a vector computed from a batch item's
// EmbeddingText(key, content) for an embedding profile.
type BatchEmbedding struct {
	Profile string
	Vector  []float32
}

// BatchCreator is implemented by stores that can create many records in one
// atomic step, for imports and projections. memorystore and pgstore
// implement it; check for it with a type assertion.
//
// CreateBatch validates every item exactly as Create would (the WriteGuard,
// then the store's own checks) before changing anything, and then applies
// the items in order as if each were one Create: an active item supersedes
// the active record with the same Scope, kind and key, including one created
// earlier in the same batch, and its Expect is checked against the state the
// earlier items left. It is all or nothing: any failure leaves the store
// unchanged.
//
// Item i of n is applied at storekit.BatchItemTime(now, i, n), so the items get
// distinct, increasing timestamps in item order.
//
// At most Limits.MaxListSize items are allowed per call; an empty batch
// does nothing. Failures are the errors Create would report, with the
// item's position prefixed to the field ("items[3].content"); an ID that is
// taken (or repeated within the batch) is ErrAlreadyExists and no record is
// returned. On success the records are returned in item order, as they are
// once the whole batch is applied (an item superseded by a later one is
// returned superseded).
type BatchCreator interface {
	CreateBatch(ctx context.Context, items []BatchItem) ([]memorykit.Record, error)
}

// EmbeddingBatchPutter is implemented by stores that can store many
// vectors in one step, which is what the embedding worker does after each
// Embed call. memorystore and pgstore implement it; embedworker uses it
// when its Store has it and calls PutEmbedding per record otherwise.
//
// PutEmbeddings applies each put exactly as PutEmbedding would, in order,
// and returns one result per put: nil when the vector is stored (or was
// already), ErrStale when the record is no longer active at the put's
// content hash, ErrNotFound when the record is not in the put's Scope, or
// ErrInvalidInput for a malformed put, each with the put's position in
// Field ("items[3]"). A refused put does not hold back the others. When
// two puts name the same record and profile, the later one's vector is the
// one kept.
//
// The error result reports a failure of the whole call (more than
// Limits.MaxListSize puts, a context that ended, an unavailable store);
// then no put was applied and the results are nil. An empty call does
// nothing.
type EmbeddingBatchPutter interface {
	PutEmbeddings(ctx context.Context, puts []EmbeddingPut) ([]error, error)
}
