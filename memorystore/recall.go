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
	idf := make([]float64, len(uniq))
	for i, t := range uniq {
		df := 0
		for _, e := range pool {
			if _, ok := e.terms[t]; ok {
				df++
			}
		}
		idf[i] = memorykit.IDF(len(pool), df)
	}
	var cands []memorykit.FullTextCandidate
	for _, e := range pool {
		matched, weight := 0, 0.0
		for i, t := range uniq {
			if _, ok := e.terms[t]; ok {
				matched++
				weight += idf[i]
			}
		}
		if matched > 0 {
			cands = append(cands, memorykit.FullTextCandidate{
				ID: e.rec.ID, Matched: matched, Weight: memorykit.RoundWeight(weight), UpdatedAt: e.rec.UpdatedAt,
			})
		}
	}
	k, b := memorykit.FullTextRule(cands, limit)
	return textHits(k), textHits(b)
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
		emb := s.embeddings[embKey{recordID: e.rec.ID, profile: profile}]
		if emb == nil || emb.hash != e.rec.ContentHash || len(emb.vector) != len(query) {
			continue
		}
		en := norm(emb.vector)
		if en == 0 {
			continue
		}
		dot := 0.0
		for i := range query {
			dot += float64(query[i]) * float64(emb.vector[i])
		}
		hits = append(hits, memorykit.Hit{ID: e.rec.ID, Score: dot / (qn * en)})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
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
