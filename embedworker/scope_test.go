package embedworker_test

import (
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
)

// TestRunUntilEmptyInScope: a worker with Config.Scope rebuilds only that
// Scope's records and stops when they are embedded, while another Scope's
// records stay pending; both stores.
func TestRunUntilEmptyInScope(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		e.createN(12)
		other := testkit.Scope(t, "tenant-a", "project-2")
		if _, err := e.store.Create(e.Ctx, memorykit.NewRecord{Scope: other, Kind: memorykit.KindFact, Key: "elsewhere",
			Content: "another project's record", Status: memorykit.StatusActive, Actor: author}); err != nil {
			t.Fatal(err)
		}
		cfg := e.config("embed-scoped", newEmbedder(e.Clock))
		cfg.Scope = &e.Scope
		p, err := e.worker(cfg).RunUntilEmpty(e.Ctx, embedworker.RebuildOptions{MaxIdleRounds: 3})
		if err != nil || p.Stored != 12 || p.Pending != 0 {
			t.Fatalf("scoped rebuild = %+v, %v; want 12 stored, none pending", p, err)
		}
		c := e.store.(storekit.ScopedPendingCounter)
		if n, err := c.PendingEmbeddingsIn(e.Ctx, other, embedder.LocalProfile); err != nil || n != 1 {
			t.Fatalf("other Scope pending = %d, %v; want 1 (untouched)", n, err)
		}
		bad := memorykit.Scope{TenantID: "tenant-a"}
		cfg.Scope = &bad
		if _, err := embedworker.New(cfg); err == nil {
			t.Fatal("an invalid Scope was accepted")
		}
	})
}
