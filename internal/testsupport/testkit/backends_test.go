package testkit_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
)

// TestSharedSchemaAndTerminate: two Stores opened on one DB see the same
// records; Terminate ends that DB's connections and no other's.
func TestSharedSchemaAndTerminate(t *testing.T) {
	ctx := context.Background()
	clk := testkit.NewClock()
	db := testkit.NewDB(t)
	if !strings.HasPrefix(db.Schema, pgtest.SchemaPrefix) || db.App == "" {
		t.Fatalf("db = %+v", db)
	}
	a, b := db.Open(t, clk), db.Open(t, clk)
	scope := testkit.Scope(t, "tenant-a", "project-1")
	r, err := a.Create(ctx, memorykit.NewRecord{
		Scope: scope, Kind: memorykit.KindFact, Key: "k", Content: "shared schema",
		Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}, Reason: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, scope, r.ID); err != nil {
		t.Fatalf("the second store does not see the first one's record: %v", err)
	}

	other := testkit.NewDB(t)
	if other.Schema == db.Schema || other.App == db.App {
		t.Fatal("two DBs share a schema or an application_name")
	}
	o := other.Open(t, clk)
	if _, err := o.Get(ctx, scope, r.ID); err == nil {
		t.Fatal("a store on another schema sees the record")
	}
	if n := db.Terminate(t); n < 2 {
		t.Fatalf("Terminate ended %d backends, want at least one per store", n)
	}
	if n := other.Terminate(t); n < 1 {
		t.Fatalf("the other DB lost its connections to the first Terminate (%d left)", n)
	}
}

// TestEach: Each runs the memorystore and the pgstore subtests, each with
// a store of its own implementation.
func TestEach(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	t.Run("matrix", func(t *testing.T) {
		testkit.Each(t, func(t *testing.T, b testkit.Backend) {
			s := b.Open(t, testkit.NewClock())
			mu.Lock()
			seen[b.Name] = fmt.Sprintf("%T %v", s, b.DB != nil)
			mu.Unlock()
		})
	})
	want := map[string]string{"memorystore": "*memorystore.Store false", "pgstore": "*pgstore.Store true"}
	if os.Getenv(pgtest.EnvDSN) == "" {
		// Without a database the pgstore subtest skipped (Each fails it
		// instead when MEMORYKIT_REQUIRE_POSTGRES=1).
		delete(want, "pgstore")
	}
	if !maps.Equal(seen, want) {
		t.Fatalf("ran %v, want %v", seen, want)
	}
}
