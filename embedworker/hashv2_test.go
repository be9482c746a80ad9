package embedworker_test

import (
	"testing"

	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/storekit"
)

// TestRebuildMovesToHashV2: records embedded under hash-v1 are pending for
// hash-v2 (a new profile name), recall on hash-v2 never uses their hash-v1
// vectors, and the rebuild path (RunUntilEmpty with a hash-v2 worker)
// embeds every one of them anew while the hash-v1 vectors stay apart.
func TestRebuildMovesToHashV2(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const n = 20
		e.createN(n)
		v1 := e.worker(e.config("embed-v1", embedder.NewLocal()))
		if _, err := v1.RunUntilEmpty(e.Ctx, embedworker.RebuildOptions{MaxIdleRounds: 3}); err != nil {
			t.Fatalf("hash-v1 build: %v", err)
		}
		pendingV2 := func() int {
			t.Helper()
			p, err := e.store.PendingEmbeddings(e.Ctx, embedder.LocalV2Profile)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		v2Hits := func(text string) []storekit.Hit {
			t.Helper()
			v, err := embedder.NewLocalV2().Embed(e.Ctx, []string{text})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.store.Recall(e.Ctx, storekit.RecallQuery{
				Scope: e.Scope, Vector: v[0], Profile: embedder.LocalV2Profile, ExactLimit: 1, FullTextLimit: 1, VectorLimit: 50,
			})
			if err != nil {
				t.Fatal(err)
			}
			return res.Vector
		}
		if e.pending() != 0 || pendingV2() != n {
			t.Fatalf("pending hash-v1 %d, hash-v2 %d", e.pending(), pendingV2())
		}
		if hits := v2Hits("service 007 region"); len(hits) != 0 {
			t.Fatalf("hash-v2 recall used %d hash-v1 vectors", len(hits))
		}
		v2 := e.worker(e.config("embed-v2", embedder.NewLocalV2()))
		p, err := v2.RunUntilEmpty(e.Ctx, embedworker.RebuildOptions{MaxIdleRounds: 3})
		if err != nil || p.Stored != n || pendingV2() != 0 {
			t.Fatalf("hash-v2 rebuild: %+v, %v, pending %d", p, err, pendingV2())
		}
		if hits := v2Hits("service 007 region"); len(hits) != n {
			t.Fatalf("hash-v2 recall after rebuild: %d hits", len(hits))
		}
		if hits := e.vectorHits("service 007 region"); len(hits) != n || e.pending() != 0 {
			t.Fatalf("hash-v1 vectors after the hash-v2 rebuild: %d hits, %d pending", len(hits), e.pending())
		}
	})
}
