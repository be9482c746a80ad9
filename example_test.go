package memorykit_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
)

// rejectEmpty is a Host content policy: here it only refuses whitespace.
type rejectEmpty struct{}

func (rejectEmpty) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if c.Action == memorykit.ActionCreate && len(c.Content) == 0 {
		return errors.New("empty")
	}
	return nil
}

// Example opens the in-memory store, writes one active record and recalls
// it through the exact and full-text channels.
func Example() {
	ctx := context.Background()
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), rejectEmpty{})
	if err != nil {
		panic(err)
	}
	tombstones, terr := memorykit.NewTombstoneKeyer([]byte("example tombstone secret: load yours from a secret store"))
	if terr != nil {
		panic(terr)
	}
	store, err := memorystore.New(memorystore.Config{Clock: clock.New(), Guard: guard, Tombstones: tombstones})
	if err != nil {
		panic(err)
	}
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	rec, err := store.Create(ctx, memorykit.NewRecord{
		Scope: scope, Kind: memorykit.KindFact, Key: "Deploy Region",
		Content: "The API runs in eu-west-1.", Status: memorykit.StatusActive,
		Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.Key, rec.Status, rec.Version)

	query := "which region does the API run in?"
	res, err := store.Recall(ctx, storekit.RecallQuery{
		Scope:      scope,
		ExactKeys:  storekit.ExactKeys(query, 16),
		Terms:      storekit.SearchTerms(query, 16),
		ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5,
	})
	if err != nil {
		panic(err)
	}
	for _, hit := range res.FullText {
		fmt.Printf("full-text rank %d: %s (%v terms)\n", hit.Rank, res.Records[hit.ID].Content, hit.Score)
	}
	// Output:
	// deploy region active 1
	// full-text rank 1: The API runs in eu-west-1. (2 terms)
}
