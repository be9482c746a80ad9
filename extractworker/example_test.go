package extractworker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

// allowProject grants every permission on one project; a real Host asks
// its own authorization service.
type allowProject struct{ scope memorykit.Scope }

func (a allowProject) Authorize(_ context.Context, _ memorykit.Principal, _ memorykit.Permission, s memorykit.Scope) error {
	if s != a.scope {
		return fmt.Errorf("not this project")
	}
	return nil
}

// acceptAll stands in for the Host's content policy.
type acceptAll struct{}

func (acceptAll) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

// oneFact stands in for a model-backed Extractor.
type oneFact struct{}

func (oneFact) Extract(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	return []memorykit.Proposal{{Kind: memorykit.KindDecision, Key: "deploy strategy", Content: "Blue-green deploys."}}, nil
}

// completions signals each completed job.
type completions chan memorykit.Event

func (c completions) Emit(e memorykit.Event) {
	if e.Kind == memorykit.EventJobCompleted {
		c <- e
	}
}

// Example wires the extraction pipeline: the Enqueuer hands a finished turn
// to a durable job, a supervised Worker turns it into a candidate, the
// Reaper watches for expired leases, and Drain then Stop shut down
// gracefully.
func Example() {
	ctx := context.Background()
	clk := clock.New()
	log := zap.NewNop()
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
	events := make(completions, 1)

	enqueuer, err := extractworker.NewEnqueuer(extractworker.EnqueuerConfig{
		Store: store, Authorizer: allowProject{scope}, Clock: clk, Logger: log, Events: events, MaxAttempts: 3, MaxReaps: 5,
	})
	if err != nil {
		panic(err)
	}
	worker, err := extractworker.New(extractworker.Config{
		Store: store, Extractor: oneFact{}, Guard: guard, Clock: clk, Logger: log, Events: events,
		WorkerID: "host-1", LeaseTTL: 2 * time.Minute, BatchSize: 8, PollInterval: time.Second,
		JobDeadline: 30 * time.Second, HandBackTimeout: 5 * time.Second,
		Retry:        memorykit.Backoff{Initial: 10 * time.Second, Max: 10 * time.Minute, Multiplier: 3},
		StoreBackoff: memorykit.Backoff{Initial: 100 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2},
	})
	if err != nil {
		panic(err)
	}
	reaper, err := extractworker.NewReaper(extractworker.ReaperConfig{
		Store: store, Clock: clk, Logger: log, Events: events, Interval: 30 * time.Second,
		StoreBackoff: memorykit.Backoff{Initial: 100 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2},
	})
	if err != nil {
		panic(err)
	}
	sup, err := supervisor.New(supervisor.Config{
		Clock: clk, Logger: log, Events: memorykit.DiscardEvents{},
		Backoff: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}, MaxRestarts: 10,
	}, worker, reaper)
	if err != nil {
		panic(err)
	}
	if err := sup.Start(ctx); err != nil {
		panic(err)
	}

	// After a successful turn: hand it to extraction. A failure here is
	// reported, never fatal to the turn.
	principal := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "dana"}}
	res := enqueuer.Enqueue(ctx, extractworker.Turn{
		Principal: principal, Scope: scope, RunRef: "run-7/turn-2", Payload: "We will ship with blue-green deploys.",
	})
	fmt.Println("enqueue:", res.Status)

	done := <-events
	fmt.Println("job completed with", done.Count, "candidate")

	drainCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := sup.Drain(drainCtx); err != nil {
		fmt.Println("drain:", err)
	}
	if err := sup.Stop(ctx); err != nil {
		fmt.Println("stop:", err)
	}
	cands, _ := store.List(ctx, storekit.ListFilter{Scope: scope, Statuses: []memorykit.Status{memorykit.StatusCandidate}, Limit: 10})
	fmt.Println("candidates waiting for review:", len(cands))

	// Output:
	// enqueue: queued
	// job completed with 1 candidate
	// candidates waiting for review: 1
}
