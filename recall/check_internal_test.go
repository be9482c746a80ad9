package recall

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestCheckResultMatchesReference runs checkResult and a plain
// map-per-question version of the same contract on random store results,
// most of them broken in some way, and wants the same verdict (the same
// reason code) from both; for the results that pass, the hit index must
// hold every record's rank in each channel and its first below-threshold
// rank, as rankIndex and belowRank give them.
func TestCheckResultMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scope := memorykit.Scope{TenantID: "t1", SubjectType: memorykit.SubjectProject, SubjectID: "p1"}
	other := memorykit.Scope{TenantID: "t1", SubjectType: memorykit.SubjectProject, SubjectID: "p2"}
	ids := []string{"mem_a", "mem_b", "mem_c", "mem_d", "mem_e", "bad id"}
	passed := 0
	for n := 0; n < 20000; n++ {
		q := storekit.RecallQuery{Scope: scope, ExactLimit: 1 + rng.IntN(3), FullTextLimit: 1 + rng.IntN(3), VectorLimit: 1 + rng.IntN(3)}
		if rng.IntN(4) > 0 {
			q.Vector = []float32{1}
		}
		pick := func() string {
			if rng.IntN(30) == 0 {
				return ids[len(ids)-1]
			}
			return ids[rng.IntN(len(ids)-1)]
		}
		hits := func(limit int) []storekit.Hit {
			var hs []storekit.Hit
			for i := rng.IntN(limit + 2); i > 0; i-- {
				rank := len(hs) + 1
				if rng.IntN(25) == 0 {
					rank++
				}
				hs = append(hs, storekit.Hit{ID: pick(), Rank: rank})
			}
			return hs
		}
		res := storekit.RecallResult{Records: make(map[string]memorykit.Record)}
		res.Exact, res.FullText, res.FullTextBelow = hits(q.ExactLimit), hits(q.FullTextLimit), hits(q.FullTextLimit)
		if q.Vector != nil || rng.IntN(10) == 0 {
			res.Vector = hits(q.VectorLimit)
		}
		for _, hs := range [][]storekit.Hit{res.Exact, res.FullText, res.Vector} {
			for _, h := range hs {
				if rng.IntN(40) > 0 {
					res.Records[h.ID] = memorykit.Record{ID: h.ID, Scope: scope, Kind: memorykit.KindNote, Status: memorykit.StatusActive, EffectiveFrom: now}
				}
			}
		}
		for id, r := range res.Records {
			switch rng.IntN(60) {
			case 0:
				r.Scope = other
			case 1:
				r.Status = memorykit.StatusCandidate
			case 2:
				r.EffectiveFrom = now.Add(time.Hour)
			case 3:
				r.EffectiveUntil = now
			case 4:
				r.Kind = "rumour"
			case 5:
				r.ID = "mem_z"
			}
			res.Records[id] = r
		}
		if rng.IntN(40) == 0 {
			res.Records["mem_z"] = memorykit.Record{ID: "mem_z", Scope: scope, Kind: memorykit.KindNote, Status: memorykit.StatusActive}
		}
		index, err := checkResult("recall", q, res, now, now)
		want := referenceCheck("recall", q, res, now, now)
		// Go's map order picks which bad record is met first; compare
		// verdicts only where one reason is possible.
		if memorykit.ReasonCode(err) != memorykit.ReasonCode(want) && !bothRecordErrors(err, want) {
			t.Fatalf("case %d: checkResult = %v, reference = %v\n%+v", n, err, want, res)
		}
		if err != nil {
			if index != nil {
				t.Fatalf("case %d: an index with error %v", n, err)
			}
			continue
		}
		passed++
		ranks := rankIndex(res)
		for id, h := range index {
			got := h.channelRanks(nil)
			if !reflect.DeepEqual(got, ranks[id]) || int(h.below) != belowRank(res, id) || h.traced {
				t.Fatalf("case %d: %s indexed as %+v, want ranks %v below %d", n, id, h, ranks[id], belowRank(res, id))
			}
		}
		for id := range ranks {
			if _, ok := index[id]; !ok {
				t.Fatalf("case %d: %s missing from the index", n, id)
			}
		}
	}
	if passed < 1000 {
		t.Fatalf("only %d of the random results were valid", passed)
	}
}

// bothRecordErrors reports whether a and b both fault a record (the last
// loop of checkResult), where map order picks which record is met first.
func bothRecordErrors(a, b error) bool {
	record := map[string]bool{
		"unnamed_record": true, "record_id_mismatch": true, "bad_id": true, "record_out_of_scope": true,
		"record_not_active": true, "record_not_yet_effective": true, "record_expired": true, "record_kind_unknown": true,
	}
	return record[memorykit.ReasonCode(a)] && record[memorykit.ReasonCode(b)]
}

// referenceCheck is checkResult's contract written with one map per
// question.
func referenceCheck(op string, q storekit.RecallQuery, res storekit.RecallResult, before, after time.Time) error {
	bad := func(reason string) error { return memorykit.NewError(op, memorykit.ErrIntegrity, reason) }
	named := make(map[string]bool)
	lists := []struct {
		hits  []storekit.Hit
		limit int
	}{{res.Exact, q.ExactLimit}, {res.FullText, q.FullTextLimit}, {res.Vector, q.VectorLimit}}
	for i, l := range lists {
		if len(l.hits) > l.limit {
			return bad("channel_over_limit")
		}
		if i == 2 && q.Vector == nil && len(l.hits) > 0 {
			return bad("unasked_vector_hits")
		}
		seen := make(map[string]bool)
		for j, h := range l.hits {
			if h.Rank != j+1 {
				return bad("bad_rank")
			}
			if seen[h.ID] {
				return bad("duplicate_hit")
			}
			seen[h.ID] = true
			if _, ok := res.Records[h.ID]; !ok {
				return bad("hit_without_record")
			}
			named[h.ID] = true
		}
	}
	if len(res.FullTextBelow) > q.FullTextLimit {
		return bad("channel_over_limit")
	}
	kept := make(map[string]bool)
	for _, h := range res.FullText {
		kept[h.ID] = true
	}
	for j, h := range res.FullTextBelow {
		if h.Rank != j+1 {
			return bad("bad_rank")
		}
		if kept[h.ID] {
			return bad("below_threshold_also_kept")
		}
		if storekit.ValidateID(op, "id", h.ID) != nil {
			return bad("bad_id")
		}
	}
	for id, rec := range res.Records {
		switch {
		case !named[id]:
			return bad("unnamed_record")
		case rec.ID != id:
			return bad("record_id_mismatch")
		case storekit.ValidateID(op, "id", id) != nil:
			return bad("bad_id")
		case rec.Scope != q.Scope:
			return bad("record_out_of_scope")
		case rec.Status != memorykit.StatusActive:
			return bad("record_not_active")
		case rec.EffectiveFrom.After(after):
			return bad("record_not_yet_effective")
		case !rec.EffectiveUntil.IsZero() && !rec.EffectiveUntil.After(before):
			return bad("record_expired")
		case !rec.Kind.Valid():
			return bad("record_kind_unknown")
		}
	}
	return nil
}

// rankIndex, the reference for checkResult's index, maps each record ID to its rank in every channel that returned
// it (the below-threshold list excluded).
func rankIndex(res storekit.RecallResult) map[string]map[memorykit.Channel]int {
	out := make(map[string]map[memorykit.Channel]int)
	add := func(c memorykit.Channel, hits []storekit.Hit) {
		for _, h := range hits {
			m := out[h.ID]
			if m == nil {
				m = make(map[memorykit.Channel]int)
				out[h.ID] = m
			}
			m[c] = h.Rank
		}
	}
	add(memorykit.ChannelExact, res.Exact)
	add(memorykit.ChannelFullText, res.FullText)
	add(memorykit.ChannelVector, res.Vector)
	return out
}

// belowRank is a record's first place among the matches below the
// full-text threshold, 0 if it is not there.
func belowRank(res storekit.RecallResult, id string) int {
	for _, h := range res.FullTextBelow {
		if h.ID == id {
			return h.Rank
		}
	}
	return 0
}
