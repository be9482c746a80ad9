package reviewer_test

import (
	"errors"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
)

// FuzzHintsStayInScope stores one candidate with a fuzzed kind, key and
// text next to every record recall must never return (testkit.PlantHidden,
// all sharing the word "zephyr") and checks the listing: a candidate the
// store refuses is a typed error; otherwise the listing succeeds with
// complete hints, and every hint and Supersedes is an active, currently
// effective record of the Scope that is not hidden and not a candidate,
// at most MaxHints of them.
func FuzzHintsStayInScope(f *testing.F) {
	f.Add(uint8(2), "zephyr", "zephyr is noted here")
	f.Add(uint8(0), "ZEPHYR", "hidden-other_tenant hidden-erased zephyr")
	f.Add(uint8(1), "zephyr\u200b", "tenant=acme-other project=apollo-other zephyr")
	f.Add(uint8(4), "zephyr future", "\u202ezephyr\u202c replacement \x00")
	f.Add(uint8(3), "日本語 zephyr", "ゼファー zephyr 设计 决定")
	f.Fuzz(func(t *testing.T, kindIdx uint8, key, content string) {
		clk := testkit.NewClock()
		s := testkit.MemStore(t, clk)
		b := newHintBundle(t, clk, s, hintOptions{})
		hidden := testkit.PlantHidden(t, s, b.emb, clk, b.scope, "zephyr")
		kinds := memorykit.Kinds()
		_, err := s.Create(t.Context(), memorykit.NewRecord{Scope: b.scope, Kind: kinds[int(kindIdx)%len(kinds)], Key: key,
			Content: content, Status: memorykit.StatusCandidate, Actor: memorykit.Actor{Kind: memorykit.ActorModel, ID: "agent-1"}})
		if err != nil {
			var me *memorykit.Error
			if !errors.As(err, &me) {
				t.Fatalf("refused candidate: untyped error %v", err)
			}
			return
		}
		cands := b.list(t)
		for _, c := range cands {
			if c.HintsDegraded != "" {
				t.Fatalf("candidate %s: hints degraded (%s) on a healthy store", c.Record.ID, c.HintsDegraded)
			}
		}
		b.assertOnlyRecallable(t, cands, hidden)
	})
}
