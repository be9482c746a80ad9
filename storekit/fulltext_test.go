package storekit_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/goagents/memorykit/storekit"
)

func TestFullTextRule(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	cands := []storekit.FullTextCandidate{
		{ID: "a", Matched: 2, Weight: 1.5, UpdatedAt: t0},
		{ID: "b", Matched: 4, Weight: 3, UpdatedAt: t0},
		{ID: "c", Matched: 3, Weight: 2, UpdatedAt: t0},
		{ID: "d", Matched: 3, Weight: 2.5, UpdatedAt: t0},
		{ID: "e", Matched: 3, Weight: 2.5, UpdatedAt: t0.Add(time.Second)},
		{ID: "f", Matched: 1, Weight: 9, UpdatedAt: t0},
	}
	kept, below := storekit.FullTextRule(cands, 10)
	ids := func(cs []storekit.FullTextCandidate) (out []string) {
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	// best = 4: keep matched*2 > 4, i.e. matched >= 3.
	if got, want := ids(kept), []string{"b", "e", "d", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("kept = %v, want %v", got, want)
	}
	if got, want := ids(below), []string{"a", "f"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("below = %v, want %v", got, want)
	}
	kept, below = storekit.FullTextRule(cands, 2)
	if len(kept) != 2 || len(below) != 2 {
		t.Fatalf("limit not applied: %d kept, %d below", len(kept), len(below))
	}
	if k, b := storekit.FullTextRule(nil, 5); k != nil || b != nil {
		t.Fatal("empty input must give empty output")
	}
	if storekit.IDF(10, 1) <= storekit.IDF(10, 10) {
		t.Fatal("a rare term must weigh more than a common one")
	}
	if storekit.RoundWeight(1.23456749) != 1.234567 || storekit.RoundWeight(2.0000005) != 2.000001 {
		t.Fatal("RoundWeight must round half away from zero at 6 decimals")
	}
}
