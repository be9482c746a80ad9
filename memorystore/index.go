package memorystore

import (
	"time"

	"github.com/goagents/memorykit"
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
type scopeIndex struct {
	docs  []*entry // by slot; nil marks a hole
	holes int
	// postings lists, per term, the slots of the records holding it in
	// ascending order, holes included; df counts the live ones. A term
	// leaves both maps when its count reaches zero.
	postings map[string][]int32
	df       map[string]int
	keys     map[string][]int32 // canonical key -> slots, holes included
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

// vectorSlab holds the current vectors of one profile and dimension in one
// scope, row after row, with their norms and slots.
type vectorSlab struct {
	dims  int
	data  []float32 // len(slots) * dims
	norms []float64
	inv   []float64 // 1 / norms
	slots []int32
}

// indexState is where an indexed entry sits in its scope's index, and what
// it was indexed with (a correction replaces e.terms before re-indexing).
type indexState struct {
	slot     int32
	hash     string
	terms    map[string]struct{}
	windowed bool
	// rows maps a profile to the entry's row in that profile's slab.
	rows map[string]vecRow
}

type vecRow struct {
	dims int
	row  int
}

func newScopeIndex() *scopeIndex {
	return &scopeIndex{
		postings: make(map[string][]int32),
		df:       make(map[string]int),
		keys:     make(map[string][]int32),
		vectors:  make(map[vecKey]*vectorSlab),
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
	if r, ok := e.ix.rows[profile]; ok {
		x.removeRow(vecKey{profile, r.dims}, r.row)
		delete(e.ix.rows, profile)
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
	e.ix = &indexState{slot: slot, hash: e.rec.ContentHash, terms: e.terms, windowed: !e.rec.EffectiveUntil.IsZero()}
	for t := range e.terms {
		x.postings[t] = append(x.postings[t], slot)
		x.df[t]++
	}
	x.keys[e.rec.Key] = append(x.keys[e.rec.Key], slot)
	x.active++
	if e.ix.windowed {
		x.windowed++
	}
	if e.rec.EffectiveFrom.After(x.maxFrom) {
		x.maxFrom = e.rec.EffectiveFrom
	}
	for profile := range e.embeddings {
		x.addRow(e, profile)
	}
}

func (s *Store) unindex(e *entry) {
	x := s.indexes[e.rec.Scope]
	x.docs[e.ix.slot] = nil
	x.holes++
	for t := range e.indexedTerms() {
		if x.df[t]--; x.df[t] == 0 {
			delete(x.df, t)
			delete(x.postings, t)
		}
	}
	if k := e.rec.Key; len(x.keys[k]) == 1 && x.keys[k][0] == e.ix.slot {
		delete(x.keys, k)
	}
	x.active--
	if e.ix.windowed {
		x.windowed--
	}
	for profile, r := range e.ix.rows {
		x.removeRow(vecKey{profile, r.dims}, r.row)
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

// indexedTerms is the set of terms e was indexed with. A snapshot drops
// the set once indexed; its records never change in place, so their text
// still yields the same terms.
func (e *entry) indexedTerms() map[string]struct{} {
	if e.ix.terms != nil {
		return e.ix.terms
	}
	return termSet(e.rec.Key, e.rec.Content)
}

// compact renumbers the live slots without holes.
func (x *scopeIndex) compact() {
	old := x.docs
	x.docs = make([]*entry, 0, x.active)
	x.holes = 0
	x.postings = make(map[string][]int32, len(x.df))
	x.keys = make(map[string][]int32, len(x.keys))
	for _, e := range old {
		if e == nil {
			continue
		}
		slot := int32(len(x.docs))
		x.docs = append(x.docs, e)
		e.ix.slot = slot
		for t := range e.indexedTerms() {
			x.postings[t] = append(x.postings[t], slot)
		}
		x.keys[e.rec.Key] = append(x.keys[e.rec.Key], slot)
	}
	for _, v := range x.vectors {
		for row, slot := range v.slots {
			v.slots[row] = old[slot].ix.slot
		}
	}
}

// addRow appends e's current embedding of profile, if any, to its slab.
func (x *scopeIndex) addRow(e *entry, profile string) {
	emb := e.embeddings[profile]
	if emb == nil || emb.hash != e.rec.ContentHash || emb.norm == 0 {
		return
	}
	k := vecKey{profile, len(emb.vector)}
	v := x.vectors[k]
	if v == nil {
		v = &vectorSlab{dims: k.dims}
		x.vectors[k] = v
	}
	row := len(v.slots)
	v.data = append(v.data, emb.vector...)
	v.norms = append(v.norms, emb.norm)
	v.inv = append(v.inv, 1/emb.norm)
	v.slots = append(v.slots, e.ix.slot)
	if e.ix.rows == nil {
		e.ix.rows = make(map[string]vecRow)
	}
	e.ix.rows[profile] = vecRow{dims: k.dims, row: row}
}

// removeRow deletes a row by moving the slab's last row into its place.
func (x *scopeIndex) removeRow(k vecKey, row int) {
	v := x.vectors[k]
	last := len(v.slots) - 1
	if row != last {
		copy(v.data[row*v.dims:(row+1)*v.dims], v.data[last*v.dims:])
		v.norms[row] = v.norms[last]
		v.inv[row] = v.inv[last]
		v.slots[row] = v.slots[last]
		x.docs[v.slots[row]].ix.rows[k.profile] = vecRow{dims: k.dims, row: row}
	}
	v.data = v.data[:last*v.dims]
	v.norms = v.norms[:last]
	v.inv = v.inv[:last]
	v.slots = v.slots[:last]
	if last == 0 {
		delete(x.vectors, k)
	}
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
