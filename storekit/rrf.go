package storekit

import (
	"sort"
	"time"

	"github.com/goagents/memorykit"
)

// Ranking is one channel's result, best first.
type Ranking struct {
	Channel memorykit.Channel
	Weight  float64
	IDs     []string
}

// Fused is one record after Reciprocal Rank Fusion.
type Fused struct {
	ID    string
	Score float64
	// Ranks holds the 1-based rank in each channel that returned the record.
	Ranks map[memorykit.Channel]int
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
	// First give every distinct ID its place in the result: the order in
	// which the rankings first name it, which the stable sort below keeps
	// for records that tie on everything.
	total := 0
	for _, r := range rankings {
		total += len(r.IDs)
	}
	pos := make(map[string]int, total)
	for _, r := range rankings {
		for _, id := range r.IDs {
			if _, ok := pos[id]; !ok {
				pos[id] = len(pos)
			}
		}
	}
	out := make([]Fused, len(pos))
	// last[p] is one more than the index of the ranking that last ranked
	// out[p]: a record a ranking names twice counts at its first rank only.
	last := make([]int, len(pos))
	for ri, r := range rankings {
		for i, id := range r.IDs {
			p := pos[id]
			if last[p] == ri+1 {
				continue
			}
			last[p] = ri + 1
			f := &out[p]
			if f.Ranks == nil {
				f.ID, f.Ranks = id, make(map[memorykit.Channel]int)
			}
			rank := i + 1
			f.Ranks[r.Channel] = rank
			f.Score += r.Weight / float64(k+rank)
		}
	}
	o := fusedOrder{out: out}
	if effectiveFrom != nil {
		o.from = make([]time.Time, len(out))
		for i := range out {
			o.from[i] = effectiveFrom(out[i].ID)
		}
	}
	sort.Stable(&o)
	return out
}

// fusedOrder sorts fused records by score, then newer effective time, then
// ID; from, when set, holds each record's effective time and moves with it.
type fusedOrder struct {
	out  []Fused
	from []time.Time
}

func (o *fusedOrder) Len() int { return len(o.out) }

func (o *fusedOrder) Less(i, j int) bool {
	a, b := &o.out[i], &o.out[j]
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if o.from != nil {
		if fa, fb := o.from[i], o.from[j]; !fa.Equal(fb) {
			return fa.After(fb)
		}
	}
	return a.ID < b.ID
}

func (o *fusedOrder) Swap(i, j int) {
	o.out[i], o.out[j] = o.out[j], o.out[i]
	if o.from != nil {
		o.from[i], o.from[j] = o.from[j], o.from[i]
	}
}
