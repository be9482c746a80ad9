package embedworker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/memorystore"
)

// acceptAll stands in for the Host's content policy.
type acceptAll struct{}

func (acceptAll) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

// ExampleWorker_RunUntilEmpty is an operator rebuild: drop a profile's
// embeddings, then embed until nothing is pending, printing progress.
func ExampleWorker_RunUntilEmpty() {
	ctx := context.Background()
	clk := clock.New()
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), acceptAll{})
	if err != nil {
		panic(err)
	}
	tombstones, terr := memorykit.NewTombstoneKeyer([]byte("example tombstone secret: load yours from a secret store"))
	if terr != nil {
		panic(terr)
	}
	store, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: tombstones})
	if err != nil {
		panic(err)
	}
	scope, _ := memorykit.ProjectScope("acme", "billing")
	for i := 0; i < 25; i++ {
		_, err := store.Create(ctx, memorykit.NewRecord{
			Scope: scope, Kind: memorykit.KindFact, Key: fmt.Sprintf("invoice rule %d", i),
			Content: fmt.Sprintf("Invoices of type %d are due in %d days.", i, 10+i), Status: memorykit.StatusActive,
			Actor: memorykit.Actor{Kind: memorykit.ActorOperator, ID: "ops"},
		})
		if err != nil {
			panic(err)
		}
	}

	w, err := embedworker.New(embedworker.Config{
		Store: store, Embedder: embedder.NewLocal(), Clock: clk, Logger: zap.NewNop(), Events: memorykit.DiscardEvents{},
		WorkerID: "rebuild-cli", LeaseTTL: 5 * time.Minute, BatchSize: 10, PollInterval: time.Second,
		EmbedDeadline: time.Minute, HandBackTimeout: 5 * time.Second,
		Retry:        memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
		StoreBackoff: memorykit.Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second, Multiplier: 2},
	})
	if err != nil {
		panic(err)
	}
	if _, err := store.DeleteAllEmbeddings(ctx, w.Profile()); err != nil {
		panic(err)
	}
	p, err := w.RunUntilEmpty(ctx, embedworker.RebuildOptions{
		MaxIdleRounds: 3,
		OnProgress: func(p embedworker.Progress) {
			fmt.Printf("round %d: %d stored, %d were pending\n", p.Rounds, p.Stored, p.Pending)
		},
	})
	if err != nil {
		fmt.Println("rebuild stopped:", err)
	}
	fmt.Println("pending:", p.Pending)

	// Output:
	// round 1: 10 stored, 25 were pending
	// round 2: 20 stored, 15 were pending
	// round 3: 25 stored, 5 were pending
	// pending: 0
}
