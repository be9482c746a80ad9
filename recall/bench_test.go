package recall_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testkit"
	"github.com/goagents/memorykit/recall"
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
			eng, err := recall.New(recall.Config{
				Store: store, Embedder: emb, Authorizer: az, Policy: testkit.Policy(),
				Clock: clk, Events: memorykit.DiscardEvents{}, Logger: zap.NewNop(),
			})
			if err != nil {
				b.Fatal(err)
			}
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
