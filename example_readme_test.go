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

// rememberAndRecall is the host guide's first program: the smallest Host
// that writes one memory and recalls it. docs/host-guide.md shows its body
// verbatim (TestDocCodeBlocksAreRunExamples checks that).
func rememberAndRecall(ctx context.Context, hostContentPolicy memorykit.ContentValidator, hostTombstoneSecret []byte) error {
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), hostContentPolicy) // no defaults: both required
	if err != nil {
		return err
	}
	tombstones, err := memorykit.NewTombstoneKeyer(hostTombstoneSecret) // 32 bytes or more, from your secret store
	if err != nil {
		return err
	}
	store, err := memorystore.New(memorystore.Config{Clock: clock.New(), Guard: guard, Tombstones: tombstones})
	if err != nil {
		return err // a missing part is an error here, never a store that fails later
	}
	scope, err := memorykit.ProjectScope("acme", "apollo")
	if err != nil {
		return err
	}
	_, err = store.Create(ctx, memorykit.NewRecord{
		Scope: scope, Kind: memorykit.KindFact, Key: "Deploy Region",
		Content: "The API runs in eu-west-1.", Status: memorykit.StatusActive,
		Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"},
	})
	if err != nil {
		return err
	}
	q := "which region does the API run in?"
	res, err := store.Recall(ctx, storekit.RecallQuery{
		Scope: scope, ExactKeys: storekit.ExactKeys(q, 16), Terms: storekit.SearchTerms(q, 16),
		ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5,
	})
	if err != nil {
		return err
	}
	fmt.Println(res.Records[res.FullText[0].ID].Content) // The API runs in eu-west-1.
	return nil
}

// Example_readme runs the host guide's first program, and shows that a store
// built without a part (here the tombstone keyer) is refused at once.
func Example_readme() {
	ctx := context.Background()
	if err := rememberAndRecall(ctx, rejectEmpty{}, []byte("example tombstone secret: load yours from a secret store")); err != nil {
		panic(err)
	}
	guard, _ := memorykit.NewWriteGuard(memorykit.LimitsV1(), rejectEmpty{})
	store, err := memorystore.New(memorystore.Config{Clock: clock.New(), Guard: guard})
	fmt.Println(store == nil, errors.Is(err, memorykit.ErrInvalidConfig))
	// Output:
	// The API runs in eu-west-1.
	// true true
}
