package storekit

import (
	"math"
	"sort"
	"time"
)

// FullTextCandidate is a record that shares at least one term
// (SearchTerms against IndexTerms) with a query.
type FullTextCandidate struct {
	ID string
	// Matched is how many distinct query terms the record contains.
	Matched int
	// Weight is the sum of IDF over the matched terms, rounded with
	// RoundWeight. It breaks ties between equal Matched counts, so rare
	// terms ("caroline") outrank common ones ("the").
	Weight    float64
	UpdatedAt time.Time
}

// IDF is the inverse document frequency weight of a term that df of the n
// recallable records in a scope contain: ln(1 + n/df).
func IDF(n, df int) float64 {
	if df <= 0 || n <= 0 {
		return 0
	}
	return math.Log(1 + float64(n)/float64(df))
}

// RoundWeight rounds a full-text weight to 6 decimals, so the two stores,
// which sum in different orders, compare equal weights as equal.
func RoundWeight(w float64) float64 { return math.Round(w*1e6) / 1e6 }

// FullTextRule is the specification's full-text rule, shared by every store:
// a record matches if it shares any term; only records matching more than
// half as many terms as the best match are kept; results rank by matched
// terms, then by Weight, then by UpdatedAt (newest first), then by ID.
//
// It sorts cands in place and returns at most limit kept candidates and at
// most limit candidates dropped for being below the threshold.
func FullTextRule(cands []FullTextCandidate, limit int) (kept, below []FullTextCandidate) {
	SortFullText(cands)
	if len(cands) == 0 || limit <= 0 {
		return nil, nil
	}
	best := cands[0].Matched
	// Each list is allocated once, at its first candidate, for as many as
	// it can hold.
	size := min(limit, len(cands))
	for _, c := range cands {
		if c.Matched <= 0 {
			continue
		}
		if 2*c.Matched > best {
			if kept == nil {
				kept = make([]FullTextCandidate, 0, size)
			}
			if len(kept) < limit {
				kept = append(kept, c)
			}
		} else if len(below) < limit {
			if below == nil {
				below = make([]FullTextCandidate, 0, size)
			}
			below = append(below, c)
		}
	}
	return kept, below
}

// SortFullText orders candidates the way FullTextRule ranks them
// (FullTextBefore).
func SortFullText(cands []FullTextCandidate) {
	sort.SliceStable(cands, func(i, j int) bool { return FullTextBefore(cands[i], cands[j]) })
}

// FullTextBefore reports whether a ranks before b: more matched terms, then
// more weight, then newer, then the smaller ID. It is a strict total order
// on distinct IDs, for stores that keep a bounded heap instead of sorting.
func FullTextBefore(a, b FullTextCandidate) bool {
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

// FullTextHits is how a store reports the candidates FullTextRule kept (or
// dropped): ranked from 1 in order, Score the number of matched terms and
// Weight their summed IDF; nil when there are none.
func FullTextHits(cands []FullTextCandidate) []Hit {
	if len(cands) == 0 {
		return nil
	}
	hits := make([]Hit, len(cands))
	for i, c := range cands {
		hits[i] = Hit{ID: c.ID, Rank: i + 1, Score: float64(c.Matched), Weight: c.Weight}
	}
	return hits
}

// VectorNorm is the Euclidean norm of v, summed in float64 in order: the
// stores compute cosine similarity with it, so their scores agree to the
// bit.
func VectorNorm(v []float32) float64 {
	sum := 0.0
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	return math.Sqrt(sum)
}
