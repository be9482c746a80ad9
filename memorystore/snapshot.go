package memorystore

import (
	"context"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
)

// SnapshotEmbedding is one stored vector of a record, as NewSnapshot takes
// it: the profile it was made with and the content hash it was made from.
// A vector whose hash is not its record's current content hash is kept out
// of recall, as Recall keeps it out.
type SnapshotEmbedding struct {
	RecordID    string
	Profile     string
	ContentHash string
	Vector      []float32
}

// Snapshot is a read-only recall index over a fixed set of records: the
// same index and the same ranking Store.Recall uses, built once from
// records loaded elsewhere (pgstore's recall cache builds one per Scope
// from its rows). It is safe for concurrent use.
type Snapshot struct {
	s *Store
}

// NewSnapshot indexes recs (records of any status; only active ones take
// part in recall) and embs. Records and vectors are copied, so the caller
// may reuse its slices. clk is the source of "now" for each recall's
// effective-window checks.
func NewSnapshot(clk clock.Clock, recs []memorykit.Record, embs []SnapshotEmbedding) *Snapshot {
	s := &Store{
		clk:     clk,
		records: make(map[string]*entry, len(recs)),
		indexes: make(map[memorykit.Scope]*scopeIndex),
	}
	for _, r := range recs {
		e := &entry{rec: r.Clone()}
		if r.Status == memorykit.StatusActive {
			e.terms = termSet(r.Key, r.Content)
		}
		s.records[r.ID] = e
		s.sync(e)
		// The posting lists now hold the record's terms; the set itself is
		// read only to unindex the record, which a snapshot never does.
		e.terms = nil
		if e.ix != nil {
			e.ix.terms = nil
		}
	}
	for _, m := range embs {
		e := s.records[m.RecordID]
		if e == nil {
			continue
		}
		if e.embeddings == nil {
			e.embeddings = make(map[string]*embedding)
		}
		e.embeddings[m.Profile] = &embedding{hash: m.ContentHash, vector: m.Vector, norm: norm(m.Vector)}
		s.syncVector(e, m.Profile)
		// The scope's slab now holds a copy of the vector, which is all
		// recall reads; a snapshot is never synced again, so the record
		// need not keep its own.
		delete(e.embeddings, m.Profile)
	}
	return &Snapshot{s: s}
}

// Recall ranks q over the snapshot exactly as Store.Recall ranks it over a
// store holding the same records and vectors.
func (x *Snapshot) Recall(ctx context.Context, q memorykit.RecallQuery) (memorykit.RecallResult, error) {
	return x.s.Recall(ctx, q)
}
