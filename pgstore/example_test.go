package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/pgstore"
)

// noSecrets is a Host's content policy; a real one would detect secrets
// and personal data.
type noSecrets struct{}

func (noSecrets) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if len(c.Content) > 0 && c.Content[0] == '!' {
		return errors.New("looks like a secret")
	}
	return nil
}

// Open a Store that owns its pool, write one memory and close it again.
func ExampleOpen() {
	ctx := context.Background()
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), noSecrets{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tombstones, err := memorykit.NewTombstoneKeyer([]byte("example tombstone secret: load yours from a secret store"))
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := pgstore.Open(ctx, os.Getenv("MEMORYKIT_POSTGRES_TEST_DSN"), pgstore.Config{
		Clock: clock.New(), // the Host's clock; tests pass clock.NewMock()
		Guard: guard,
		// The secret keys the digests erased records keep of their keys;
		// load it from the Host's secret store.
		Tombstones: tombstones,
	})
	if err != nil {
		// e.g. reason pgvector_unavailable, or a recoverable ErrUnavailable.
		fmt.Println(err)
		return
	}
	// Stop every worker using the store before closing it.
	defer store.Close()

	scope, _ := memorykit.ProjectScope("acme", "checkout-service")
	rec, err := store.Create(ctx, memorykit.NewRecord{
		Scope: scope, Kind: memorykit.KindFact, Key: "deploy region",
		Content: "The API runs in eu-west-1.", Status: memorykit.StatusActive,
		Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "u-42"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Status, rec.Version)
}
