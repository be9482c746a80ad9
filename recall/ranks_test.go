package recall_test

import (
	"reflect"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// TestRecallTraceRanksAreTheStoreRanks checks every trace record's Ranks
// and BelowThresholdRank against the store's own result: the rank of each
// hit in each channel, vector hits below the similarity floor and those of
// a degraded vector channel included. Entries carry fusion's ranks
// instead: a vector rank counts only the hits at or above the floor, and
// none when the channel degraded. The store's second vector hit is pushed
// below the floor, so the hits after it rank one higher in fusion than in
// the store.
func TestRecallTraceRanksAreTheStoreRanks(t *testing.T) {
	const floor = 0.2
	for _, degraded := range []bool{false, true} {
		name := "vector_used"
		if degraded {
			name = "vector_degraded"
		}
		t.Run(name, func(t *testing.T) {
			var got storekit.RecallResult
			fs := &testkit.FaultStore{Edit: func(res *storekit.RecallResult) {
				for i := range res.Vector {
					res.Vector[i].Score = 0.9 - 0.01*float64(i)
				}
				if len(res.Vector) > 1 {
					res.Vector[1].Score = floor / 2
				}
				got = *res
			}}
			if degraded {
				fs.VectorErr = recoverable("vector_timeout")
			}
			b := setup(t, memoryBackend(),
				withStore(func(s storekit.RecallStore) storekit.RecallStore { fs.Inner = s; return fs }),
				withPolicy(func(p *memorykit.RecallPolicy) { p.MinVectorSimilarity = floor }))
			b.add(t, memorykit.KindFact, "deploy region", "eu-west-1 is the deploy region, see the runbook")
			b.add(t, memorykit.KindNote, "runbook", "the runbook covers every region")
			b.add(t, memorykit.KindNote, "deploy", "deploy checklist")
			b.add(t, memorykit.KindNote, "billing", "billing runbook notes")
			b.add(t, memorykit.KindNote, "oncall rota", "oncall rota for the region team")
			b.add(t, memorykit.KindNote, "security", "security review of each region deploy")
			b.add(t, memorykit.KindNote, "frontend", "frontend style guide")
			b.add(t, memorykit.KindNote, "budget", "quarterly budget review")
			res := b.recall(t, b.req("deploy region runbook"))

			store := func(hits []storekit.Hit, id string) int {
				for _, h := range hits {
					if h.ID == id {
						return h.Rank
					}
				}
				return 0
			}
			channels := []struct {
				c    memorykit.Channel
				hits []storekit.Hit
			}{
				{memorykit.ChannelExact, got.Exact}, {memorykit.ChannelFullText, got.FullText}, {memorykit.ChannelVector, got.Vector},
			}
			storeRanks := func(id string) map[memorykit.Channel]int {
				var m map[memorykit.Channel]int
				for _, ch := range channels {
					if r := store(ch.hits, id); r != 0 {
						if m == nil {
							m = make(map[memorykit.Channel]int)
						}
						m[ch.c] = r
					}
				}
				return m
			}
			// fusedVector is the rank among the vector hits at or above
			// the floor.
			fusedVector := func(id string) int {
				n := 0
				for _, h := range got.Vector {
					if h.Score >= floor {
						n++
						if h.ID == id {
							return n
						}
					}
				}
				return 0
			}

			listed := make(map[string]bool)
			for _, hits := range [][]storekit.Hit{got.Exact, got.FullText, got.Vector, got.FullTextBelow} {
				for _, h := range hits {
					listed[h.ID] = true
				}
			}
			if len(got.Exact) == 0 || len(got.FullText) == 0 || len(got.FullTextBelow) == 0 || len(got.Vector) < 4 {
				t.Fatalf("fixture too small: %d exact, %d full text, %d below, %d vector",
					len(got.Exact), len(got.FullText), len(got.FullTextBelow), len(got.Vector))
			}
			if len(res.Trace.Records) != len(listed) {
				t.Fatalf("%d trace records for %d listed records", len(res.Trace.Records), len(listed))
			}
			shifted := 0
			for _, tr := range res.Trace.Records {
				if !listed[tr.ID] {
					t.Fatalf("trace record %s the store did not list", tr.ID)
				}
				if want := storeRanks(tr.ID); !reflect.DeepEqual(tr.Ranks, want) {
					t.Errorf("%s (%s): trace ranks %v, want the store's %v", tr.ID, tr.Outcome, tr.Ranks, want)
				}
				wantBelow := store(got.FullTextBelow, tr.ID)
				if tr.Outcome == recall.DroppedChannelDegraded || tr.Outcome == recall.DroppedBelowVectorFloor {
					wantBelow = 0
				}
				if tr.BelowThresholdRank != wantBelow {
					t.Errorf("%s (%s): below-threshold rank %d, want %d", tr.ID, tr.Outcome, tr.BelowThresholdRank, wantBelow)
				}
				if v := tr.Ranks[memorykit.ChannelVector]; v != 0 && v != fusedVector(tr.ID) && tr.Score != 0 {
					shifted++
				}
			}
			for _, en := range res.Entries {
				want := storeRanks(en.ID)
				delete(want, memorykit.ChannelVector)
				if v := fusedVector(en.ID); v != 0 && !degraded {
					want[memorykit.ChannelVector] = v
				}
				if !reflect.DeepEqual(en.Ranks, want) {
					t.Errorf("entry %s: ranks %v, want fusion's %v", en.ID, en.Ranks, want)
				}
				// The caller owns an entry's ranks: changing them leaves
				// the trace alone.
				en.Ranks[memorykit.ChannelExact] = 99
				if tr, _ := res.Trace.Record(en.ID); tr.Ranks[memorykit.ChannelExact] == 99 {
					t.Errorf("entry %s shares its ranks with the trace", en.ID)
				}
			}
			if shifted == 0 {
				t.Fatalf("no fused record's trace vector rank differs from fusion's; the fixture misses the case")
			}
			if len(res.Entries) == 0 {
				t.Fatal("no entries")
			}
		})
	}
}
