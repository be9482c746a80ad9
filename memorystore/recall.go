package memorystore

import (
	"context"
	"math"
	"sort"

	"github.com/goagents/memorykit"
)

// Recall implements memorykit.RecallStore. All three channels read one
// consistent snapshot of the Scope, and only records that are
// Recallable(q.Scope, now) take part in any of them.
func (s *Store) Recall(ctx context.Context, q memorykit.RecallQuery) (memorykit.RecallResult, error) {
	const op = "memorystore.recall"
	if err := live(ctx, op); err != nil {
		return memorykit.RecallResult{}, err
	}
	if err := checkRecallQuery(op, q); err != nil {
		return memorykit.RecallResult{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	var pool []*entry
	for _, e := range s.byScope[q.Scope] {
		if e.rec.Recallable(q.Scope, now) {
			pool = append(pool, e)
		}
	}
	res := memorykit.RecallResult{Records: make(map[string]memorykit.Record)}
	res.Exact = exactHits(pool, q.ExactKeys, q.ExactLimit)
	res.FullText, res.FullTextBelow = fullTextHits(pool, q.Terms, q.FullTextLimit)
	if q.Vector != nil {
		res.Vector = s.vectorHits(pool, q.Vector, q.Profile, q.VectorLimit)
	}
	for _, hits := range [][]memorykit.Hit{res.Exact, res.FullText, res.Vector} {
		for _, h := range hits {
			res.Records[h.ID] = s.records[h.ID].rec.Clone()
		}
	}
	return res, nil
}

func checkRecallQuery(op string, q memorykit.RecallQuery) error {
	if err := q.Scope.Validate(); err != nil {
		return err
	}
	limits := []struct {
		field string
		n     int
	}{
		{"exact_limit", q.ExactLimit},
		{"full_text_limit", q.FullTextLimit},
		{"vector_limit", q.VectorLimit},
	}
	for _, l := range limits {
		if l.n <= 0 {
			return memorykit.FieldError(op, l.field, "must_be_positive")
		}
	}
	if q.Vector == nil {
		return nil
	}
	if err := memorykit.ValidateProfile(op, q.Profile); err != nil {
		return err
	}
	if len(q.Vector) == 0 {
		return memorykit.FieldError(op, "vector", "empty")
	}
	for _, x := range q.Vector {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return memorykit.FieldError(op, "vector", "not_finite")
		}
	}
	return nil
}

// exactHits matches canonical keys byte for byte, newest first.
func exactHits(pool []*entry, keys []string, limit int) []memorykit.Hit {
	if len(keys) == 0 {
		return nil
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	var found []*memorykit.Record
	for _, e := range pool {
		if want[e.rec.Key] {
			found = append(found, &e.rec)
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
	hits := make([]memorykit.Hit, len(found))
	for i, r := range found {
		hits[i] = memorykit.Hit{ID: r.ID, Rank: i + 1, Score: 1}
	}
	return hits
}

// fullTextHits scores every record sharing a term with the query: the
// number of distinct matched terms, and their summed IDF over the pool,
// then applies memorykit.FullTextRule.
func fullTextHits(pool []*entry, terms []string, limit int) (kept, below []memorykit.Hit) {
	seen := make(map[string]bool, len(terms))
	var uniq []string
	for _, t := range terms {
		if t != "" && !seen[t] {
			seen[t] = true
			uniq = append(uniq, t)
		}
	}
	if len(uniq) == 0 || len(pool) == 0 {
		return nil, nil
	}
	// One pass finds which terms each record holds and each term's df.
	// held is one flat buffer of term indices; each match owns a window.
	df := make([]int, len(uniq))
	type match struct {
		e          *entry
		start, end int
	}
	var matches []match
	var held []int
	for _, e := range pool {
		start := len(held)
		for i, t := range uniq {
			if _, ok := e.terms[t]; ok {
				held = append(held, i)
				df[i]++
			}
		}
		if len(held) > start {
			matches = append(matches, match{e: e, start: start, end: len(held)})
		}
	}
	if len(matches) == 0 {
		return nil, nil
	}
	idf := make([]float64, len(uniq))
	for i := range uniq {
		idf[i] = memorykit.IDF(len(pool), df[i])
	}
	cands := make([]memorykit.FullTextCandidate, len(matches))
	best := 0
	for i, m := range matches {
		w := 0.0
		for _, t := range held[m.start:m.end] {
			w += idf[t]
		}
		n := m.end - m.start
		cands[i] = memorykit.FullTextCandidate{
			ID: m.e.rec.ID, Matched: n, Weight: memorykit.RoundWeight(w), UpdatedAt: m.e.rec.UpdatedAt,
		}
		best = max(best, n)
	}
	// FullTextRule only ever returns the first limit candidates above and
	// below the threshold, so hand it just those (the best candidate among
	// them): the result is the same and a large Scope is not fully sorted.
	var above, under []memorykit.FullTextCandidate
	for _, c := range cands {
		if 2*c.Matched > best {
			above = append(above, c)
		} else {
			under = append(under, c)
		}
	}
	reduced := append(topK(above, limit, ftBefore), topK(under, limit, ftBefore)...)
	k, b := memorykit.FullTextRule(reduced, limit)
	return textHits(k), textHits(b)
}

// ftBefore is memorykit.SortFullText's order: more matched terms, then
// more weight, then newer, then smaller ID.
func ftBefore(a, b memorykit.FullTextCandidate) bool {
	if a.Matched != b.Matched {
		return a.Matched > b.Matched
	}
	if a.Weight != b.Weight {
		return a.Weight > b.Weight
	}
	if !a.UpdatedAt.Equal(b.UpdatedAt) {
		return a.UpdatedAt.After(b.UpdatedAt)
	}
	return a.ID < b.ID
}

func textHits(cands []memorykit.FullTextCandidate) []memorykit.Hit {
	if len(cands) == 0 {
		return nil
	}
	hits := make([]memorykit.Hit, len(cands))
	for i, c := range cands {
		hits[i] = memorykit.Hit{ID: c.ID, Rank: i + 1, Score: float64(c.Matched), Weight: c.Weight}
	}
	return hits
}

// vectorHits ranks records by cosine similarity between the query and
// their current embedding for profile. Embeddings of an older content
// hash or another dimension do not take part. The caller holds s.mu.
func (s *Store) vectorHits(pool []*entry, query []float32, profile string, limit int) []memorykit.Hit {
	qn := norm(query)
	if qn == 0 {
		return nil
	}
	var hits []memorykit.Hit
	for _, e := range pool {
		emb := e.embeddings[profile]
		if emb == nil || emb.hash != e.rec.ContentHash || len(emb.vector) != len(query) || emb.norm == 0 {
			continue
		}
		dot := 0.0
		for i := range query {
			dot += float64(query[i]) * float64(emb.vector[i])
		}
		hits = append(hits, memorykit.Hit{ID: e.rec.ID, Score: dot / (qn * emb.norm)})
	}
	hits = topK(hits, limit, func(a, b memorykit.Hit) bool {
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.ID < b.ID
	})
	for i := range hits {
		hits[i].Rank = i + 1
	}
	return hits
}

func norm(v []float32) float64 {
	sum := 0.0
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	return math.Sqrt(sum)
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
