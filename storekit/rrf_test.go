package storekit_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestFuseRRFAtPinned pins FuseRRFAt's whole output on an input with every
// awkward case at once: a record ranked twice by one ranking (its first
// rank counts), two rankings of one channel, records in several channels,
// an empty ranking, and a group of equal scores ordered by newer effective
// time, then ID, with a record of no effective time counted as the oldest.
func TestFuseRRFAtPinned(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	from := map[string]time.Time{"x": base, "y": base.Add(time.Microsecond), "z": base}
	exact, full, vec := memorykit.ChannelExact, memorykit.ChannelFullText, memorykit.ChannelVector
	fused := storekit.FuseRRFAt(60, func(id string) time.Time { return from[id] },
		storekit.Ranking{Channel: exact, Weight: 1, IDs: []string{"k", "a"}},
		storekit.Ranking{Channel: full, Weight: 1, IDs: []string{"a", "b", "a", "c", "k"}},
		storekit.Ranking{Channel: vec, Weight: 5, IDs: nil},
		storekit.Ranking{Channel: vec, Weight: 0.5, IDs: []string{"c", "b", "d"}},
		storekit.Ranking{Channel: exact, Weight: 1, IDs: []string{"y"}},
		storekit.Ranking{Channel: full, Weight: 1, IDs: []string{"w"}},
		storekit.Ranking{Channel: vec, Weight: 1, IDs: []string{"z", "z"}},
		storekit.Ranking{Channel: full, Weight: 1, IDs: []string{"x"}},
	)
	type ranks = map[memorykit.Channel]int
	want := []storekit.Fused{
		{ID: "a", Score: 1.0/62 + 1.0/61, Ranks: ranks{exact: 2, full: 1}},
		{ID: "k", Score: 1.0/61 + 1.0/65, Ranks: ranks{exact: 1, full: 5}},
		{ID: "b", Score: 1.0/62 + 0.5/62, Ranks: ranks{full: 2, vec: 2}},
		{ID: "c", Score: 1.0/64 + 0.5/61, Ranks: ranks{full: 4, vec: 1}},
		// y is the newest, x and z are equally old (ID decides), w has no
		// effective time.
		{ID: "y", Score: 1.0 / 61, Ranks: ranks{exact: 1}},
		{ID: "x", Score: 1.0 / 61, Ranks: ranks{full: 1}},
		{ID: "z", Score: 1.0 / 61, Ranks: ranks{vec: 1}},
		{ID: "w", Score: 1.0 / 61, Ranks: ranks{full: 1}},
		{ID: "d", Score: 0.5 / 63, Ranks: ranks{vec: 3}},
	}
	if len(fused) != len(want) {
		t.Fatalf("fused %d records, want %d: %+v", len(fused), len(want), fused)
	}
	for i, w := range want {
		f := fused[i]
		if f.ID != w.ID || math.Abs(f.Score-w.Score) > 1e-15 || !reflect.DeepEqual(f.Ranks, w.Ranks) {
			t.Errorf("fused[%d] = %+v, want %+v", i, f, w)
		}
	}
	// A later ranking of the same channel overwrites the rank and adds to
	// the score; nothing ranked gives an empty, non-nil result.
	fused = storekit.FuseRRF(10,
		storekit.Ranking{Channel: vec, Weight: 1, IDs: []string{"p", "q"}},
		storekit.Ranking{Channel: vec, Weight: 1, IDs: []string{"q"}},
	)
	if len(fused) != 2 || fused[0].ID != "q" || fused[0].Ranks[vec] != 1 || fused[0].Score != 1.0/12+1.0/11 {
		t.Fatalf("same-channel rankings: %+v", fused)
	}
	if got := storekit.FuseRRF(60, storekit.Ranking{Channel: exact, Weight: 1}); got == nil || len(got) != 0 {
		t.Fatalf("empty fusion = %#v, want an empty slice", got)
	}
}

// TestFuseRRFAtMatchesReference compares FuseRRFAt with a plain
// map-per-record version of the same definition on random rankings full of
// duplicates, shared records, repeated channels and score ties.
func TestFuseRRFAtMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	channels := []memorykit.Channel{memorykit.ChannelExact, memorykit.ChannelFullText, memorykit.ChannelVector}
	for n := 0; n < 2000; n++ {
		from := make(map[string]time.Time)
		for _, id := range ids {
			if rng.IntN(4) > 0 {
				from[id] = base.Add(time.Duration(rng.IntN(3)) * time.Second)
			}
		}
		effective := func(id string) time.Time { return from[id] }
		if rng.IntN(5) == 0 {
			effective = nil
		}
		rankings := make([]storekit.Ranking, rng.IntN(5))
		for i := range rankings {
			r := storekit.Ranking{Channel: channels[rng.IntN(len(channels))], Weight: float64(1 + rng.IntN(2))}
			for j := rng.IntN(7); j > 0; j-- {
				r.IDs = append(r.IDs, ids[rng.IntN(len(ids))])
			}
			rankings[i] = r
		}
		k := 1 + rng.IntN(3)
		got := storekit.FuseRRFAt(k, effective, rankings...)
		if want := referenceFuse(k, effective, rankings...); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: rankings %+v\ngot  %+v\nwant %+v", n, rankings, got, want)
		}
	}
}

// referenceFuse is FuseRRFAt's definition written the simplest way.
func referenceFuse(k int, effectiveFrom func(id string) time.Time, rankings ...storekit.Ranking) []storekit.Fused {
	byID := make(map[string]*storekit.Fused)
	var order []string
	for _, r := range rankings {
		seen := make(map[string]bool)
		for i, id := range r.IDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			f := byID[id]
			if f == nil {
				f = &storekit.Fused{ID: id, Ranks: make(map[memorykit.Channel]int)}
				byID[id] = f
				order = append(order, id)
			}
			f.Ranks[r.Channel] = i + 1
			f.Score += r.Weight / float64(k+i+1)
		}
	}
	out := make([]storekit.Fused, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	at := func(id string) time.Time {
		if effectiveFrom == nil {
			return time.Time{}
		}
		return effectiveFrom(id)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if fa, fb := at(a.ID), at(b.ID); !fa.Equal(fb) {
			return fa.After(fb)
		}
		return a.ID < b.ID
	})
	return out
}
