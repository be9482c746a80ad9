package memorystore

import (
	"context"
	"runtime"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
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

// Snapshot is a recall index over a set of records loaded elsewhere: the
// same index and the same ranking Store.Recall uses (pgstore's recall
// cache keeps one per Scope, built from its rows and brought up to date
// with Apply). It is safe for concurrent use: recalls run side by side, and
// Apply waits for them and holds them off while it changes the index.
type Snapshot struct {
	s *Store
	// bytes is the estimate of the heap the snapshot holds (see Bytes);
	// it changes only under s.mu held for writing.
	bytes int64
	// strs interns the short strings records repeat (Scope, kind, status,
	// actors), so a Scope's records share one copy of each.
	strs map[string]string
}

// str returns the snapshot's copy of v.
func (x *Snapshot) str(v string) string {
	if c, ok := x.strs[v]; ok {
		return c
	}
	if len(x.strs) >= maxInterned {
		// Many distinct actors: stop sharing rather than grow without
		// bound (each record then keeps its own copy, as it came).
		return v
	}
	x.strs[v] = v
	return v
}

// yieldEvery is how many records or vectors NewSnapshot indexes between
// yields (a few hundred microseconds of work).
const yieldEvery = 64

// maxInterned bounds Snapshot.strs.
const maxInterned = 4096

// share makes r use the snapshot's copies of its repeated strings.
func (x *Snapshot) share(r *memorykit.Record) {
	r.Scope.TenantID = x.str(r.Scope.TenantID)
	r.Scope.SubjectType = memorykit.SubjectType(x.str(string(r.Scope.SubjectType)))
	r.Scope.SubjectID = x.str(r.Scope.SubjectID)
	r.Kind = memorykit.Kind(x.str(string(r.Kind)))
	r.Status = memorykit.Status(x.str(string(r.Status)))
	r.CreatedBy.Kind = memorykit.ActorKind(x.str(string(r.CreatedBy.Kind)))
	r.CreatedBy.ID = x.str(r.CreatedBy.ID)
	r.TouchedBy.Kind = memorykit.ActorKind(x.str(string(r.TouchedBy.Kind)))
	r.TouchedBy.ID = x.str(r.TouchedBy.ID)
}

// NewSnapshot indexes recs (records of any status; only active ones take
// part in recall) and embs. Records and vectors are copied, so the caller
// may reuse its slices. clk is the source of "now" for each recall's
// effective-window checks.
func NewSnapshot(clk clock.Clock, recs []memorykit.Record, embs []SnapshotEmbedding) *Snapshot {
	x := &Snapshot{
		s: &Store{
			clk:     clk,
			records: make(map[string]*entry, len(recs)),
			indexes: make(map[memorykit.Scope]*scopeIndex),
		},
		bytes: snapshotOverhead,
		strs:  make(map[string]string),
	}
	x.add(recs, embs, true)
	return x
}

// Apply brings the snapshot up to date after the records named in changed
// changed: each of them leaves the index, then recs (the current rows of
// those still present, any status) and embs (their current vectors) are
// indexed as NewSnapshot indexes them. A record named in changed and
// absent from recs (deleted, or no longer active) is gone afterwards.
func (x *Snapshot) Apply(changed []string, recs []memorykit.Record, embs []SnapshotEmbedding) {
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range changed {
		e := s.records[id]
		if e == nil {
			continue
		}
		x.bytes -= entryBytes(e)
		if e.ix != nil {
			s.unindex(e)
		}
		delete(s.records, id)
	}
	x.add(recs, embs, false)
}

// add indexes recs and then embs; the caller holds s.mu for writing or
// owns the snapshot alone. With yield (a snapshot being built, which no
// recall waits on) it lets other goroutines run every yieldEvery items:
// building a large snapshot is CPU-bound work in the background, and a
// recall of another Scope made runnable meanwhile should not wait for
// the scheduler to preempt it (10 ms) when every core is busy.
func (x *Snapshot) add(recs []memorykit.Record, embs []SnapshotEmbedding, yield bool) {
	s := x.s
	for i, r := range recs {
		if yield && i > 0 && i%yieldEvery == 0 {
			runtime.Gosched()
		}
		if r.Status != memorykit.StatusActive {
			// Only active records take part in recall; the others need
			// no place in the snapshot.
			continue
		}
		if old := s.records[r.ID]; old != nil {
			x.bytes -= entryBytes(old)
			if old.ix != nil {
				s.unindex(old)
			}
		}
		e := &entry{rec: r.Clone()}
		x.share(&e.rec)
		s.records[r.ID] = e
		s.sync(e)
		x.bytes += entryBytes(e)
	}
	for i, m := range embs {
		if yield && i > 0 && i%yieldEvery == 0 {
			runtime.Gosched()
		}
		e := s.records[m.RecordID]
		if e == nil {
			continue
		}
		e.embeddings = embeddingSet{{profile: m.Profile, hash: m.ContentHash, vector: m.Vector}}
		x.bytes -= entryBytes(e)
		s.syncVector(e, m.Profile)
		// The scope's slab now holds a copy of the vector, which is all
		// recall reads; the record need not keep the embedding (unindexing
		// removes the slab rows through e.ix.rows, and with no embedding
		// left to return to, drops the vectors).
		e.embeddings = nil
		x.bytes += entryBytes(e)
	}
}

// Recall ranks q over the snapshot exactly as Store.Recall ranks it over a
// store holding the same records and vectors.
func (x *Snapshot) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	return x.s.Recall(ctx, q)
}

// Bytes estimates the heap the snapshot holds: a fixed overhead, and per
// indexed record its strings, its share of the posting lists and its
// vectors. The per-item constants were calibrated against the heap after
// GC (pgstore's BenchmarkRecallCacheLoad reports both) and keep the
// estimate above it for records of tens of words.
func (x *Snapshot) Bytes() int64 {
	x.s.mu.RLock()
	defer x.s.mu.RUnlock()
	return x.bytes
}

// Per-item overheads of Snapshot.Bytes, from BenchmarkSnapshotBytes (20k
// records of about 40 words, 384-d: 2,958 bytes per record on the heap
// then, 2,836 since the entry and index state shrank) and pgstore's
// BenchmarkRecallCacheLoad (10k records of about 36 words and a larger
// vocabulary: 2,956 then, 2,828 since), with a margin: the entry, its map slot,
// index state and key list, and the share of the term dictionary of a
// Scope with many distinct words; a term's bytes in its posting list; a
// vector's norms and slot beside its slab row.
const (
	snapshotOverhead = 2048 // the store, its index maps and the cache entry, so empty Scopes count too
	recordOverhead   = 896
	termOverhead     = 4
	vectorOverhead   = 32
)

// entryBytes is e's share of Snapshot.Bytes: its strings, its index terms
// (about one per 6 bytes of text) and each of its slab rows.
func entryBytes(e *entry) int64 {
	r := &e.rec
	text := len(r.Content) + len(r.Key)
	n := recordOverhead + int64(len(r.ID)+len(r.ContentHash)+len(r.CreatedBy.ID)+len(r.TouchedBy.ID)+text)
	n += int64(text/6+1) * termOverhead
	for k, v := range r.Metadata {
		n += int64(len(k)+len(v)) + 48
	}
	for _, src := range r.Sources {
		n += int64(len(src.Kind)+len(src.Ref)) + 32
	}
	if e.ix != nil {
		for _, row := range e.ix.rows {
			n += vectorOverhead + 4*int64(row.dims)
		}
	}
	return n
}
