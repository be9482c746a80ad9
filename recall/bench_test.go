package recall_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// BenchmarkRecall measures one full recall (authorize, embed, three
// channels, fusion, budgets) over 500 embedded records in one project.
func BenchmarkRecall(b *testing.B) {
	for _, be := range testkit.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			clk := testkit.NewClock()
			store := be.New(b, clk)
			emb := embedder.NewLocal()
			scope := testkit.Scope(b, "tenant-a", "project-1")
			az := testkit.NewAuthorizer().Grant("model-1", scope, memorykit.PermRead)
			topics := []string{"deploy", "billing", "oncall", "release", "database", "frontend", "security", "budget"}
			for i := 0; i < 500; i++ {
				t := topics[i%len(topics)]
				r := testkit.Create(b, store, scope, memorykit.KindNote, fmt.Sprintf("%s note %d", t, i),
					fmt.Sprintf("The %s team decided item %d: keep the %s runbook current and review it weekly.", t, i, t))
				testkit.EmbedAll(b, store, emb, r)
			}
			eng := benchEngine(b, store, emb, az, testkit.Policy(), clk)
			req := recall.Request{Principal: testkit.Principal("tenant-a", memorykit.ActorModel, "model-1"), Scope: scope,
				Query: "how do we review the release runbook weekly?"}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := eng.Recall(ctx, req)
				if err != nil || len(res.Entries) == 0 {
					b.Fatalf("recall: %v, %d entries", err, len(res.Entries))
				}
				if ch, _ := res.Trace.Channel(memorykit.ChannelVector); ch.Degraded || ch.Hits == 0 {
					b.Fatalf("vector channel %+v", ch)
				}
			}
		})
	}
}

// BenchmarkRecallHeavy measures one recall over 3,000 records in one
// project on memorystore, with the preset policy and a two-word query that
// nearly every record matches, so every channel comes back at its limit
// (exact keys, full-text kept and below the threshold, vector). It is the
// example Host's load case; run it with -benchmem or read allocs/op.
func BenchmarkRecallHeavy(b *testing.B) {
	clk := testkit.NewClock()
	store := testkit.MemStore(b, clk)
	emb := embedder.NewLocal()
	scope := testkit.Scope(b, "tenant-a", "project-1")
	az := testkit.NewAuthorizer().Grant("model-1", scope, memorykit.PermRead)
	topics := []string{"deploy", "billing", "oncall", "release", "database", "frontend", "security", "budget"}
	kinds := []memorykit.Kind{memorykit.KindFact, memorykit.KindPreference, memorykit.KindDecision, memorykit.KindProcedure, memorykit.KindNote}
	keys := []string{"deploy runbook", "deploy", "runbook"}
	for i := 0; i < 3000; i++ {
		t := topics[i%len(topics)]
		kind, key := memorykit.KindNote, fmt.Sprintf("%s note %d", t, i)
		if i < len(kinds)*len(keys) {
			// A key is unique per Scope and kind: spread the keys the
			// query derives over the kinds so the exact channel fills up.
			kind, key = kinds[i%len(kinds)], keys[i/len(kinds)]
		}
		r := testkit.Create(b, store, scope, kind, key,
			fmt.Sprintf("The %s team decided item %d: keep the runbook current and review it weekly.", t, i))
		testkit.EmbedAll(b, store, emb, r)
	}
	policy := memorykit.RecallPolicyV1(emb.Profile(), emb.Dimension())
	eng := benchEngine(b, store, emb, az, policy, clk)
	req := recall.Request{Principal: testkit.Principal("tenant-a", memorykit.ActorModel, "model-1"), Scope: scope,
		Query: "deploy runbook"}
	ctx := context.Background()
	check := func(res recall.Result) {
		full := map[memorykit.Channel]int{
			memorykit.ChannelExact: policy.ExactLimit, memorykit.ChannelFullText: policy.FullTextLimit, memorykit.ChannelVector: policy.VectorLimit,
		}
		for c, limit := range full {
			if ch, _ := res.Trace.Channel(c); ch.Degraded || ch.Hits != limit {
				b.Fatalf("channel %s: %+v, want %d hits", c, ch, limit)
			}
		}
		if res.Trace.BelowThreshold != policy.FullTextLimit || len(res.Entries) == 0 {
			b.Fatalf("below threshold %d, %d entries", res.Trace.BelowThreshold, len(res.Entries))
		}
	}
	res, err := eng.Recall(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	check(res)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := eng.Recall(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// benchEngine is a recall engine on store that discards events and logs.
func benchEngine(b *testing.B, store storekit.RecallStore, emb memorykit.Embedder, az memorykit.Authorizer, policy memorykit.RecallPolicy, clk clock.Clock) *recall.Engine {
	b.Helper()
	eng, err := recall.New(recall.Config{
		Store: store, Embedder: emb, Authorizer: az, Policy: policy,
		Clock: clk, Events: memorykit.DiscardEvents{}, Logger: zap.NewNop(),
	})
	if err != nil {
		b.Fatal(err)
	}
	return eng
}
