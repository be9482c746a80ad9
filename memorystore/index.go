package memorystore

import (
	"encoding/binary"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// scopeIndex holds what Recall reads for one Scope, kept up to date by every
// write, so a recall touches only what it needs: the active records, an
// inverted index from each term to the records holding it with the term's
// document frequency, the canonical keys, and the current vectors of every
// profile stored back to back.
//
// A record gets a slot when it becomes active (or is corrected while
// active) and loses it when it leaves. Slots are not reused until the
// index is compacted, so posting lists only grow at their end and a
// removal leaves a hole (docs[slot] == nil) that readers skip.
//
// The index is laid out for size (issue 16: a few hundred bytes per record
// besides the vector and the record itself). Terms are interned: each
// distinct term of the Scope has a dense id, and a record remembers the ids
// it was indexed with as one []int32 rather than a set of strings. Posting
// lists are []int32 slot numbers by term id. A current vector lives only
// in its slab while its record is indexed (the record's embedding keeps
// its hash; see vectorOf), and slabs are chunked so they never
// copy or over-allocate a whole Scope's vectors when they grow.
type scopeIndex struct {
	docs  []*entry // by slot; nil marks a hole
	holes int
	// termIDs interns the terms of live records; postings and df are
	// indexed by term id (whoever drops a term knows its text, so no list
	// of terms by id is kept). postings lists the slots holding the term in
	// ascending order, holes included; df counts the live ones. A term
	// whose df reaches zero leaves termIDs (so no word of an unindexed
	// record lingers) and its id goes to free for reuse.
	termIDs  map[string]int32
	postings []postingList
	df       []int32
	free     []int32
	keys     keySlots // canonical key -> live slots
	// active counts live slots and windowed those with an EffectiveUntil;
	// maxFrom is at least the latest EffectiveFrom among live slots. With
	// no windowed record and now >= maxFrom every indexed record is
	// recallable and recall skips the per-record window check.
	active   int
	windowed int
	maxFrom  time.Time
	vectors  map[vecKey]*vectorSlab
}

// vecKey names a slab: vectors of one profile and dimension.
type vecKey struct {
	profile string
	dims    int
}

// slabChunkRows is the number of vectors in each chunk of a slab: large
// enough that a scan runs over long contiguous stretches, small enough
// that growing a slab never copies much nor leaves much unused.
const slabChunkRows = 256

// vectorSlab holds the current vectors of one profile and dimension in one
// scope, row after row in chunks of slabChunkRows rows, with their norms
// and slots.
type vectorSlab struct {
	dims   int
	chunks [][]float32 // every chunk but the last holds slabChunkRows rows
	norms  []float64
	inv    []float64 // 1 / norms
	slots  []int32
}

// row returns row i's vector (not a copy).
func (v *vectorSlab) row(i int) []float32 {
	c := v.chunks[i/slabChunkRows]
	o := (i % slabChunkRows) * v.dims
	return c[o : o+v.dims : o+v.dims]
}

// push appends a row.
func (v *vectorSlab) push(vec []float32, norm float64, slot int32) {
	if len(v.slots)%slabChunkRows == 0 {
		v.chunks = append(v.chunks, nil)
	}
	last := len(v.chunks) - 1
	c := v.chunks[last]
	if len(c)+len(vec) > cap(c) {
		// Grow by doubling up to a whole chunk, and allocate every chunk
		// after the first whole: no chunk ends up larger than it needs.
		full := slabChunkRows * v.dims
		n := min(max(2*cap(c), len(c)+len(vec)), full)
		if last > 0 {
			n = full
		}
		grown := make([]float32, len(c), n)
		copy(grown, c)
		c = grown
	}
	v.chunks[last] = append(c, vec...)
	v.norms = append(v.norms, norm)
	v.inv = append(v.inv, 1/norm)
	v.slots = append(v.slots, slot)
}

// pop removes the last row.
func (v *vectorSlab) pop() {
	n := len(v.slots) - 1
	last := len(v.chunks) - 1
	v.chunks[last] = v.chunks[last][:len(v.chunks[last])-v.dims]
	if len(v.chunks[last]) == 0 {
		v.chunks[last] = nil
		v.chunks = v.chunks[:last]
	}
	v.norms = v.norms[:n]
	v.inv = v.inv[:n]
	v.slots = v.slots[:n]
}

// indexState is where an indexed entry sits in its scope's index, and the
// content hash it was indexed with: while the record still has it, its
// text yields the terms it was indexed with (see unindex). The key needs
// no copy: a record's key never changes while it is indexed (only an
// erase replaces it, by its tombstone digest, after taking the record out
// of the index).
type indexState struct {
	slot     int32
	windowed bool
	hash     string
	// rows lists the entry's rows in the slabs, one per profile.
	rows []vecRow
}

// postingList is the ascending slots of one term, each stored as its gap
// from the one before (the first from -1) in unsigned varint form (read
// with nextSlot).
type postingList struct {
	data []byte
	last int32
}

func (p *postingList) add(slot int32) {
	if len(p.data) == 0 {
		p.last = -1
	}
	p.data = binary.AppendUvarint(p.data, uint64(slot-p.last))
	p.last = slot
}

// vecRow is one of an indexed entry's rows: its profile's slab (with the
// vector's dimension) and the row in it.
type vecRow struct {
	profile string
	dims    int32
	row     int32
}

// slab names the row's slab.
func (r vecRow) slab() vecKey { return vecKey{r.profile, int(r.dims)} }

func newScopeIndex() *scopeIndex {
	return &scopeIndex{
		termIDs: make(map[string]int32),
		keys:    newKeySlots(0),
		vectors: make(map[vecKey]*vectorSlab),
	}
}

// sync brings e's place in the index in line with its record: indexed while
// active, re-indexed when its content changed. The caller holds s.mu for
// writing.
func (s *Store) sync(e *entry) {
	defer s.trackPending(e)
	want := e.rec.Status == memorykit.StatusActive
	if e.ix != nil && (!want || e.ix.hash != e.rec.ContentHash) {
		s.unindex(e)
	}
	if want && e.ix == nil {
		s.index(e)
	}
}

// syncVector brings e's row for profile in line with its stored embedding.
// The caller holds s.mu for writing.
func (s *Store) syncVector(e *entry, profile string) {
	defer s.trackPendingProfile(e, profile)
	if e.ix == nil {
		return
	}
	x := s.indexes[e.rec.Scope]
	if emb := e.embeddings.get(profile); emb != nil && emb.vector == nil {
		// The embedding's vector is in its slab row already.
		return
	}
	for i, r := range e.ix.rows {
		if r.profile == profile {
			// The row held the vector this profile had before; whatever
			// replaced or deleted it no longer needs it.
			e.ix.rows = append(e.ix.rows[:i], e.ix.rows[i+1:]...)
			x.removeRow(r.slab(), int(r.row))
			break
		}
	}
	x.addRow(e, profile)
}

func (s *Store) index(e *entry) {
	x := s.indexes[e.rec.Scope]
	if x == nil {
		x = newScopeIndex()
		s.indexes[e.rec.Scope] = x
	}
	slot := int32(len(x.docs))
	x.docs = append(x.docs, e)
	for _, t := range storekit.IndexTerms(e.rec.Key, e.rec.Content) {
		id := x.intern(t)
		x.postings[id].add(slot)
		x.df[id]++
	}
	e.ix = &indexState{slot: slot, hash: e.rec.ContentHash, windowed: !e.rec.EffectiveUntil.IsZero()}
	x.keys.add(e.rec.Key, slot)
	x.active++
	if e.ix.windowed {
		x.windowed++
	}
	if e.rec.EffectiveFrom.After(x.maxFrom) {
		x.maxFrom = e.rec.EffectiveFrom
	}
	for i := range e.embeddings {
		x.addRow(e, e.embeddings[i].profile)
	}
}

// intern returns term's id, giving it one if it has none.
func (x *scopeIndex) intern(term string) int32 {
	if id, ok := x.termIDs[term]; ok {
		return id
	}
	var id int32
	if n := len(x.free); n > 0 {
		id = x.free[n-1]
		x.free = x.free[:n-1]
	} else {
		id = int32(len(x.postings))
		x.postings = append(x.postings, postingList{})
		x.df = append(x.df, 0)
	}
	x.termIDs[term] = id
	return id
}

func (s *Store) unindex(e *entry) {
	x := s.indexes[e.rec.Scope]
	x.docs[e.ix.slot] = nil
	x.holes++
	if e.ix.hash == e.rec.ContentHash {
		for _, t := range storekit.IndexTerms(e.rec.Key, e.rec.Content) {
			x.dropTerm(t)
		}
	} else {
		// The record's text changed while it was indexed (every writer
		// unindexes first, so this is a safety net): its old terms are
		// unknown, so they are counted again from the other records.
		x.recountTerms()
	}
	// The key's slots are exactly its live records (activeEntry looks the
	// active record up there), so the slot leaves its list now.
	x.keys.remove(e.rec.Key, e.ix.slot)
	x.active--
	if e.ix.windowed {
		x.windowed--
	}
	for _, r := range e.ix.rows {
		// The record keeps its embedding while out of the index (it may
		// become current again); the vector moves back into it.
		if emb := e.embeddings.get(r.profile); emb != nil && emb.vector == nil {
			emb.vector = cloneVector(x.vectors[r.slab()].row(int(r.row)))
		}
		x.removeRow(r.slab(), int(r.row))
	}
	e.ix = nil
	if x.active == 0 {
		delete(s.indexes, e.rec.Scope)
		return
	}
	if x.holes > 64 && x.holes > len(x.docs)/2 {
		x.compact()
	}
}

// dropTerm counts one live record less holding term, and forgets the term
// when none is left.
func (x *scopeIndex) dropTerm(term string) {
	id := x.termIDs[term]
	if x.df[id]--; x.df[id] == 0 {
		delete(x.termIDs, term)
		x.postings[id] = postingList{}
		x.free = append(x.free, id)
	}
}

// recountTerms rebuilds the terms, posting lists and document frequencies
// from the text of the live records.
func (x *scopeIndex) recountTerms() {
	x.termIDs = make(map[string]int32, len(x.termIDs))
	x.postings, x.df, x.free = nil, nil, nil
	for slot, e := range x.docs {
		if e == nil {
			continue
		}
		for _, t := range storekit.IndexTerms(e.rec.Key, e.rec.Content) {
			id := x.intern(t)
			x.postings[id].add(int32(slot))
			x.df[id]++
		}
	}
}

// compact renumbers the live slots without holes.
func (x *scopeIndex) compact() {
	old := x.docs
	x.docs = make([]*entry, 0, x.active)
	x.holes = 0
	x.keys = newKeySlots(x.active)
	for _, e := range old {
		if e == nil {
			continue
		}
		slot := int32(len(x.docs))
		x.docs = append(x.docs, e)
		e.ix.slot = slot
		x.keys.add(e.rec.Key, slot)
	}
	x.recountTerms()
	for _, v := range x.vectors {
		for row, slot := range v.slots {
			v.slots[row] = old[slot].ix.slot
		}
	}
}

// addRow moves e's current embedding of profile, if any, into its slab.
func (x *scopeIndex) addRow(e *entry, profile string) {
	emb := e.embeddings.get(profile)
	if emb == nil || emb.hash != e.rec.ContentHash || emb.vector == nil {
		return
	}
	n := storekit.VectorNorm(emb.vector)
	if n == 0 {
		return
	}
	k := vecKey{profile, len(emb.vector)}
	v := x.vectors[k]
	if v == nil {
		v = &vectorSlab{dims: k.dims}
		x.vectors[k] = v
	}
	row := len(v.slots)
	v.push(emb.vector, n, e.ix.slot)
	emb.vector = nil
	e.ix.rows = append(e.ix.rows, vecRow{profile: profile, dims: int32(k.dims), row: int32(row)})
}

// removeRow deletes a row by moving the slab's last row into its place.
func (x *scopeIndex) removeRow(k vecKey, row int) {
	v := x.vectors[k]
	last := len(v.slots) - 1
	if row != last {
		copy(v.row(row), v.row(last))
		v.norms[row] = v.norms[last]
		v.inv[row] = v.inv[last]
		v.slots[row] = v.slots[last]
		moved := x.docs[v.slots[row]].ix
		for i := range moved.rows {
			if r := &moved.rows[i]; r.slab() == k {
				r.row = int32(row)
			}
		}
	}
	v.pop()
	if last == 0 {
		delete(x.vectors, k)
	}
}

// vectorOf returns emb's vector, a record's embedding: its own copy while
// the record is out of the index, else its slab row (not a copy). The
// caller holds s.mu.
func (s *Store) vectorOf(e *entry, emb *embedding) []float32 {
	if emb.vector != nil || e.ix == nil {
		return emb.vector
	}
	for _, r := range e.ix.rows {
		if r.profile == emb.profile {
			return s.indexes[e.rec.Scope].vectors[r.slab()].row(int(r.row))
		}
	}
	return nil
}

// dormant reports, when any exists, which indexed records are outside
// their effective window at now (active but not recallable). It returns
// nil when every indexed record is recallable. The caller holds s.mu.
func (x *scopeIndex) dormant(now time.Time) map[int32]bool {
	if x.windowed == 0 && !now.Before(x.maxFrom) {
		return nil
	}
	var out map[int32]bool
	for slot, e := range x.docs {
		if e != nil && !e.rec.EffectiveAt(now) {
			if out == nil {
				out = make(map[int32]bool)
			}
			out[int32(slot)] = true
		}
	}
	return out
}
