package memorykit

import (
	"sort"
	"time"
)

// Channel names a recall channel.
type Channel string

const (
	// ChannelExact matches record keys.
	ChannelExact Channel = "exact"
	// ChannelFullText matches search terms.
	ChannelFullText Channel = "full_text"
	// ChannelVector ranks by cosine similarity of embeddings.
	ChannelVector Channel = "vector"
)

// Ranking is one channel's result, best first.
type Ranking struct {
	Channel Channel
	Weight  float64
	IDs     []string
}

// Fused is one record after Reciprocal Rank Fusion.
type Fused struct {
	ID    string
	Score float64
	// Ranks holds the 1-based rank in each channel that returned the record.
	Ranks map[Channel]int
}

// FuseRRF combines rankings with weighted Reciprocal Rank Fusion: a record's
// score is the sum over channels of weight / (k + rank). Results are ordered
// by score, then by ID. It is FuseRRFAt without effective times; recall uses
// FuseRRFAt.
func FuseRRF(k int, rankings ...Ranking) []Fused {
	return FuseRRFAt(k, nil, rankings...)
}

// FuseRRFAt is FuseRRF with recall's tie order: records with equal scores
// come newer effective_from first (effectiveFrom gives a record's; nil, or a
// zero time, counts as the oldest), then by smaller record ID. Every store
// breaks its own channel ties by recency and then ID as well, so two
// identical runs over the same data return the same records in the same
// order.
func FuseRRFAt(k int, effectiveFrom func(id string) time.Time, rankings ...Ranking) []Fused {
	byID := make(map[string]*Fused)
	var order []string
	for _, r := range rankings {
		seen := make(map[string]bool, len(r.IDs))
		for i, id := range r.IDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			f, ok := byID[id]
			if !ok {
				f = &Fused{ID: id, Ranks: make(map[Channel]int)}
				byID[id] = f
				order = append(order, id)
			}
			rank := i + 1
			f.Ranks[r.Channel] = rank
			f.Score += r.Weight / float64(k+rank)
		}
	}
	out := make([]Fused, 0, len(order))
	from := make(map[string]time.Time, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
		if effectiveFrom != nil {
			from[id] = effectiveFrom(id)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if fa, fb := from[a.ID], from[b.ID]; !fa.Equal(fb) {
			return fa.After(fb)
		}
		return a.ID < b.ID
	})
	return out
}
