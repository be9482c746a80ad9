package memorykit

import "sort"

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
// by score, then by best single rank, then by ID, so the order is fully
// deterministic.
func FuseRRF(k int, rankings ...Ranking) []Fused {
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
	for _, id := range order {
		out = append(out, *byID[id])
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if ba, bb := bestRank(a), bestRank(b); ba != bb {
			return ba < bb
		}
		return a.ID < b.ID
	})
	return out
}

func bestRank(f Fused) int {
	best := int(^uint(0) >> 1)
	for _, r := range f.Ranks {
		if r < best {
			best = r
		}
	}
	return best
}
