package memorystore

import (
	"reflect"
	"testing"

	"github.com/goagents/memorykit/storekit"
)

// TestTextHitPairKeepsListsApart checks that the kept and below-threshold
// hits, which share one array, are those textHits gives each list, that an
// empty list is nil, and that appending to the kept hits leaves the
// below-threshold ones alone.
func TestTextHitPairKeepsListsApart(t *testing.T) {
	kept := []storekit.FullTextCandidate{{ID: "mem_a", Matched: 3, Weight: 1.5}, {ID: "mem_b", Matched: 2, Weight: 1}}
	below := []storekit.FullTextCandidate{{ID: "mem_c", Matched: 1, Weight: 0.5}}
	k, b := textHitPair(kept, below)
	if !reflect.DeepEqual(k, storekit.FullTextHits(kept)) || !reflect.DeepEqual(b, storekit.FullTextHits(below)) {
		t.Fatalf("textHitPair = %+v, %+v", k, b)
	}
	k = append(k, storekit.Hit{ID: "mem_x", Rank: 3})
	if b[0].ID != "mem_c" || len(k) != 3 {
		t.Fatalf("appending to kept hits changed the below-threshold ones: %+v", b)
	}
	if k, b := textHitPair(nil, below); k != nil || len(b) != 1 {
		t.Fatalf("no kept: %#v, %+v", k, b)
	}
	if k, b := textHitPair(kept, nil); b != nil || len(k) != 2 {
		t.Fatalf("no below: %+v, %#v", k, b)
	}
	if k, b := textHitPair(nil, nil); k != nil || b != nil {
		t.Fatalf("none: %#v, %#v", k, b)
	}
}
