package memorystore

import (
	"context"
	"encoding/binary"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Recall implements storekit.RecallStore. All three channels read one
// consistent snapshot of the Scope, and only records that are
// Recallable(q.Scope, now) take part in any of them. They read the scope's
// index (see scopeIndex): exact keys and full-text terms are looked up, not
// scanned for, and the vector channel scans only the scope's current
// vectors of the profile.
func (s *Store) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	const op = "memorystore.recall"
	if err := live(ctx, op); err != nil {
		return storekit.RecallResult{}, err
	}
	if err := storekit.CheckRecallQuery(op, q); err != nil {
		return storekit.RecallResult{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	var res storekit.RecallResult
	x := s.indexes[q.Scope]
	if x == nil {
		res.Records = make(map[string]memorykit.Record)
		return res, nil
	}
	dorm := x.dormant(now)
	// A large vector scan runs on another goroutine while this one does
	// the lookups; both only read the index. The deferred Wait runs before
	// the deferred RUnlock, so the scan never outlives the read lock.
	//
	// Every scan checks ctx every scanChunk records and gives up once it
	// has ended, so a recall past its deadline stops working and reports
	// the recoverable context_done instead of a result nobody waits for.
	var (
		scan    sync.WaitGroup
		scanned bool
		vecStop = newScanGuard(ctx)
	)
	defer scan.Wait()
	if q.Vector != nil {
		if v := x.vectors[vecKey{q.Profile, len(q.Vector)}]; v != nil && len(v.slots) >= parallelScanRows {
			scanned = true
			scan.Go(func() { res.Vector = x.vectorHits(vecStop, dorm, q.Vector, q.Profile, q.VectorLimit) })
		}
	}
	res.Exact = x.exactHits(dorm, q.ExactKeys, q.ExactLimit)
	ftStop := newScanGuard(ctx)
	res.FullText, res.FullTextBelow = x.fullTextHits(ftStop, dorm, q.Terms, q.FullTextLimit)
	switch {
	case scanned:
		scan.Wait()
	case q.Vector != nil && !ftStop.stopped:
		res.Vector = x.vectorHits(vecStop, dorm, q.Vector, q.Profile, q.VectorLimit)
	}
	if ftStop.stopped || vecStop.stopped {
		return storekit.RecallResult{}, interrupted(op, ctx)
	}
	res.Records = make(map[string]memorykit.Record, len(res.Exact)+len(res.FullText)+len(res.Vector))
	for _, hits := range [][]storekit.Hit{res.Exact, res.FullText, res.Vector} {
		for _, h := range hits {
			res.Records[h.ID] = s.records[h.ID].rec.Clone()
		}
	}
	return res, nil
}

// parallelScanRows is the number of vectors from which Recall scans them
// on a goroutine of their own, beside the exact and full-text lookups: at
// 384 dimensions that scan takes about 0.15 ms per thousand rows here, well
// above the cost of starting a goroutine.
var parallelScanRows = 2048

// recallable reports whether the record in slot may be recalled: it is
// live and not dormant.
func (x *scopeIndex) recallable(dorm map[int32]bool, slot int32) bool {
	return x.docs[slot] != nil && !dorm[slot]
}

// exactHits matches canonical keys byte for byte, newest first.
func (x *scopeIndex) exactHits(dorm map[int32]bool, keys []string, limit int) []storekit.Hit {
	if len(keys) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(keys))
	var found []*memorykit.Record
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		for slot := range x.keys.slots(k) {
			if x.recallable(dorm, slot) {
				found = append(found, &x.docs[slot].rec)
			}
		}
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.ID < b.ID
	})
	if len(found) > limit {
		found = found[:limit]
	}
	hits := make([]storekit.Hit, len(found))
	for i, r := range found {
		hits[i] = storekit.Hit{ID: r.ID, Rank: i + 1, Score: 1}
	}
	return hits
}

// fullTextHits scores every recallable record sharing a term with the
// query: the number of distinct matched terms and their summed IDF (in
// query-term order), then applies storekit.FullTextRule. It walks the
// posting lists of the query terms only.
func (x *scopeIndex) fullTextHits(g *scanGuard, dorm map[int32]bool, terms []string, limit int) (kept, below []storekit.Hit) {
	seen := make(map[string]bool, len(terms))
	var uniq []string
	for _, t := range terms {
		if t != "" && !seen[t] {
			seen[t] = true
			uniq = append(uniq, t)
		}
	}
	n := x.active - len(dorm)
	if len(uniq) == 0 || n <= 0 {
		return nil, nil
	}
	idf := make([]float64, len(uniq))
	lists := make([][]byte, len(uniq))
	for i, t := range uniq {
		df := 0
		if id, ok := x.termIDs[t]; ok {
			lists[i] = x.postings[id].data
			df = int(x.df[id])
		}
		if df > 0 && dorm != nil {
			for j, slot := 0, int32(-1); j < len(lists[i]); {
				slot, j = nextSlot(lists[i], j, slot)
				if x.docs[slot] != nil && dorm[slot] {
					df--
				}
			}
		}
		idf[i] = storekit.IDF(n, df)
	}
	// Walking the posting lists in query-term order, cnt[slot] counts a
	// record's matched terms and sum[slot] adds up their IDFs in that same
	// order, as memorystore always summed them.
	sc := getScratch()
	defer putScratch(sc)
	cnt, sum := sc.counters(len(x.docs))
	touched := sc.slots[:0]
	for i := range uniq {
		for j, slot := 0, int32(-1); j < len(lists[i]); {
			slot, j = nextSlot(lists[i], j, slot)
			if g.stop() {
				return nil, nil
			}
			if !x.recallable(dorm, slot) {
				continue
			}
			if cnt[slot] == 0 {
				touched = append(touched, slot)
			}
			cnt[slot]++
			sum[slot] += idf[i]
		}
	}
	sc.slots = touched
	if len(touched) == 0 {
		return nil, nil
	}
	best := 0
	for _, slot := range touched {
		best = max(best, int(cnt[slot]))
	}
	// FullTextRule only ever returns the first limit candidates above and
	// below the threshold, so keep just those (bounded heaps): the result
	// is the same and a large Scope is never fully sorted. The two heaps
	// share one array, above in its first half and under in its second,
	// so joining them below moves under's items down in place.
	c := min(limit, len(touched))
	buf := make([]storekit.FullTextCandidate, 0, 2*c)
	above, under := &boundedFT{limit: limit, items: buf}, &boundedFT{limit: limit, items: buf[c:c]}
	for _, slot := range touched {
		if g.stop() {
			return nil, nil
		}
		m, w := int(cnt[slot]), storekit.RoundWeight(sum[slot])
		h := under
		if 2*m > best {
			h = above
		}
		if h.beats(m, w) {
			rec := &x.docs[slot].rec
			h.push(storekit.FullTextCandidate{ID: rec.ID, Matched: m, Weight: w, UpdatedAt: rec.UpdatedAt})
		}
	}
	k, b := storekit.FullTextRule(append(above.items, under.items...), limit)
	return textHitPair(k, b)
}

// nextSlot decodes the posting list entry at data[j] (see postingList),
// the gap from slot, and returns the slot it names and where the next
// entry starts.
func nextSlot(data []byte, j int, slot int32) (int32, int) {
	if b := data[j]; b < 0x80 {
		return slot + int32(b), j + 1
	}
	d, n := binary.Uvarint(data[j:])
	return slot + int32(d), j + n
}

// boundedFT keeps the limit best candidates pushed so far (storekit.FullTextBefore order)
// in a max-heap whose root is the worst of them.
type boundedFT struct {
	limit int
	items []storekit.FullTextCandidate
}

// beats reports whether a candidate with m matched terms and weight w could
// enter the heap, judging by those two alone (ties on both may still lose
// on recency or ID; push decides those).
func (h *boundedFT) beats(m int, w float64) bool {
	if len(h.items) < h.limit {
		return h.limit > 0
	}
	worst := h.items[0]
	return m > worst.Matched || m == worst.Matched && w >= worst.Weight
}

func (h *boundedFT) push(c storekit.FullTextCandidate) {
	if len(h.items) < h.limit {
		h.items = append(h.items, c)
		for i := len(h.items) - 1; i > 0; {
			p := (i - 1) / 2
			if !storekit.FullTextBefore(h.items[p], h.items[i]) {
				break
			}
			h.items[p], h.items[i] = h.items[i], h.items[p]
			i = p
		}
		return
	}
	if h.limit == 0 || !storekit.FullTextBefore(c, h.items[0]) {
		return
	}
	h.items[0] = c
	for i := 0; ; {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(h.items) && storekit.FullTextBefore(h.items[w], h.items[l]) {
			w = l
		}
		if r < len(h.items) && storekit.FullTextBefore(h.items[w], h.items[r]) {
			w = r
		}
		if w == i {
			return
		}
		h.items[i], h.items[w] = h.items[w], h.items[i]
		i = w
	}
}

// scratch holds per-recall buffers, reused through a sync.Pool so a large
// scope does not allocate (and the collector does not scan) them anew for
// every recall.
type scratch struct {
	cnt   []int32
	sum   []float64
	slots []int32
	near  []rowEstimate
}

// rowEstimate is a slab row and its estimated similarity.
type rowEstimate struct {
	row int
	a   float64
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) { scratchPool.Put(s) }

// counters returns zeroed per-slot counters for n slots.
func (s *scratch) counters(n int) ([]int32, []float64) {
	if cap(s.cnt) < n {
		s.cnt, s.sum = make([]int32, n), make([]float64, n)
	} else {
		s.cnt, s.sum = s.cnt[:n], s.sum[:n]
		clear(s.cnt)
		clear(s.sum)
	}
	return s.cnt, s.sum
}

// textHitPair is textHits of kept and of below, the two in one array.
func textHitPair(kept, below []storekit.FullTextCandidate) (k, b []storekit.Hit) {
	all := make([]storekit.Hit, len(kept)+len(below))
	k, b = all[:len(kept):len(kept)], all[len(kept):]
	fillTextHits(k, kept)
	fillTextHits(b, below)
	if len(k) == 0 {
		k = nil
	}
	if len(b) == 0 {
		b = nil
	}
	return k, b
}

// fillTextHits sets hits[i] to the hit of cands[i], ranked i+1.
func fillTextHits(hits []storekit.Hit, cands []storekit.FullTextCandidate) {
	for i, c := range cands {
		hits[i] = storekit.Hit{ID: c.ID, Rank: i + 1, Score: float64(c.Matched), Weight: c.Weight}
	}
}

// vectorHits ranks records by cosine similarity between the query and
// their current embedding for profile (embeddings of an older content hash
// or another dimension are not in the slab). Similarities are first
// estimated in float32 over the slab; every record that could be among the
// best limit given float32 rounding (see f32Bound) is then scored exactly
// in float64, so the result is that of an exact float64 scan.
func (x *scopeIndex) vectorHits(g *scanGuard, dorm map[int32]bool, query []float32, profile string, limit int) []storekit.Hit {
	qn := storekit.VectorNorm(query)
	v := x.vectors[vecKey{profile, len(query)}]
	if qn == 0 || v == nil || limit <= 0 {
		return nil
	}
	dims := v.dims
	bound := 2 * f32Bound(dims)
	invQ := 1 / qn
	sc := getScratch()
	defer putScratch(sc)
	// One pass: h is a min-heap of the limit largest estimates; near
	// collects every row whose estimate came within bound of h's minimum
	// when it was seen. The minimum only grows, so a row left out then
	// can never come within bound of the final one.
	h := make([]float64, 0, limit)
	near := sc.near[:0]
	query = query[:dims]
	row := 0
	for _, chunk := range v.chunks {
		for off := 0; off < len(chunk); off, row = off+dims, row+1 {
			if g.stop() {
				return nil
			}
			if dorm != nil && dorm[v.slots[row]] {
				continue
			}
			a := float64(dot32(query, chunk[off:off+dims])) * v.inv[row] * invQ
			switch {
			case len(h) < limit:
				h = append(h, a)
				heapUp(h, len(h)-1)
			case a > h[0]:
				h[0] = a
				heapDown(h, 0)
			case a < h[0]-bound:
				continue
			}
			near = append(near, rowEstimate{row: row, a: a})
		}
	}
	sc.near = near
	if len(h) == 0 {
		return nil
	}
	floor := math.Inf(-1)
	if len(h) == limit {
		floor = h[0] - bound
	}
	type scored struct {
		hit     storekit.Hit
		updated time.Time
	}
	n := 0
	for _, e := range near {
		if e.a >= floor {
			n++
		}
	}
	cands := make([]scored, 0, n)
	for _, n := range near {
		if n.a < floor {
			continue
		}
		row := n.row
		vec := v.row(row)
		d := 0.0
		for i := range query {
			d += float64(query[i]) * float64(vec[i])
		}
		rec := &x.docs[v.slots[row]].rec
		cands = append(cands, scored{storekit.Hit{ID: rec.ID, Score: d / (qn * v.norms[row])}, rec.UpdatedAt})
	}
	// Equal similarities (one text under keys the embedder does not tell
	// apart) go newer first, then by ID, as in pgstore.
	cands = topK(cands, limit, func(a, b scored) bool {
		if a.hit.Score != b.hit.Score {
			return a.hit.Score > b.hit.Score
		}
		if !a.updated.Equal(b.updated) {
			return a.updated.After(b.updated)
		}
		return a.hit.ID < b.hit.ID
	})
	if len(cands) == 0 {
		return nil
	}
	hits := make([]storekit.Hit, len(cands))
	for i, c := range cands {
		hits[i] = c.hit
		hits[i].Rank = i + 1
	}
	return hits
}

// f32Bound bounds how far a cosine similarity estimated with dot32 can be
// from the float64 one for n-dimensional vectors: a float32 dot product of
// n terms is within (n+2)u/(1-(n+2)u) * sum|q_i v_i| of the exact one (u =
// 2^-24), and sum|q_i v_i| <= |q| |v|, so after dividing by the norms the
// error is at most that factor; the float64 side (including multiplying by
// the inverse norms instead of dividing) adds far less than the 1e-12
// margin.
func f32Bound(n int) float64 {
	g := float64(n+2) * 0x1p-24
	return g/(1-g) + 1e-12
}

// dot32 is the float32 dot product of equally long vectors, with four
// running sums.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func heapUp(h []float64, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func heapDown(h []float64, i int) {
	for {
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l] < h[m] {
			m = l
		}
		if r < len(h) && h[r] < h[m] {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// topK returns the k first items of xs in the total order before, sorted.
// It keeps a bounded heap, so it costs O(n log k) rather than a full sort.
// xs is reordered.
func topK[T any](xs []T, k int, before func(a, b T) bool) []T {
	if k <= 0 {
		return nil
	}
	if len(xs) <= k {
		sort.SliceStable(xs, func(i, j int) bool { return before(xs[i], xs[j]) })
		return xs
	}
	// h[0] is the worst of the k best seen so far (a max-heap in before).
	h := append([]T(nil), xs[:k]...)
	down := func(i int) {
		for {
			worst, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && before(h[worst], h[l]) {
				worst = l
			}
			if r < len(h) && before(h[worst], h[r]) {
				worst = r
			}
			if worst == i {
				return
			}
			h[i], h[worst] = h[worst], h[i]
			i = worst
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, x := range xs[k:] {
		if before(x, h[0]) {
			h[0] = x
			down(0)
		}
	}
	sort.Slice(h, func(i, j int) bool { return before(h[i], h[j]) })
	return h
}
