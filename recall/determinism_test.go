package recall_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
)

// TestRecallOrderIsRepeatable ingests the same batch into two fresh stores
// (fresh random record IDs each time) and asks the same questions: both
// runs must return the same records, by batch position, in the same order.
// The batch repeats a few contents many times, so full-text ties on matched
// terms and weight are everywhere; they must be broken by the items' order
// in the batch (newer first), not by the random IDs.
func TestRecallOrderIsRepeatable(t *testing.T) {
	t.Parallel()
	contents := []string{
		"the deploy went fine today",
		"we talked about the weather again",
		"lunch was noodles, the deploy can wait",
		"rain all week, the weather app was wrong",
	}
	queries := []string{"deploy", "weather deploy", "what about the weather", "noodles rain"}
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		run := func() [][]int {
			b := setup(t, be, withPolicy(func(p *memorykit.RecallPolicy) { p.MaxItems, p.MaxTokens = 12, 4000 }))
			var its []storekit.BatchItem
			for i := range 48 {
				its = append(its, storekit.BatchItem{Record: memorykit.NewRecord{
					Scope: b.scope, Kind: memorykit.KindNote, Key: fmt.Sprintf("turn %03d", i),
					Content: contents[i%len(contents)], Status: memorykit.StatusActive, Actor: testkit.Author,
				}})
			}
			recs, err := b.store.(storekit.BatchCreator).CreateBatch(b.ctx, its)
			if err != nil {
				t.Fatalf("CreateBatch: %v", err)
			}
			testkit.EmbedAll(t, b.store, b.emb, recs...)
			pos := make(map[string]int, len(recs))
			for i, r := range recs {
				pos[r.ID] = i
			}
			var out [][]int
			for _, q := range queries {
				var order []int
				for _, id := range entryIDs(b.recall(t, b.req(q))) {
					order = append(order, pos[id])
				}
				if len(order) < 8 {
					t.Fatalf("query %q: only %d entries", q, len(order))
				}
				out = append(out, order)
			}
			return out
		}
		first, second := run(), run()
		for i := range queries {
			if !slices.Equal(first[i], second[i]) {
				t.Fatalf("query %d: runs differ:\n%v\n%v", i, first[i], second[i])
			}
		}
	})
}
