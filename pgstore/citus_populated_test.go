package pgstore

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/storekit"
)

// TestCitusDistributePopulated: Distribute on a schema that already holds
// records, vectors, revisions and queue rows of several tenants moves them
// to the shards: the Store's Dump, recall and the embedding queue read the
// same afterwards, and a second Distribute changes nothing.
func TestCitusDistributePopulated(t *testing.T) {
	dsn := testDSN(t)
	schema := uniqueSchema(t)
	keepLocal.Store(schema, true)
	clk := newClock()
	s := openStore(t, schema, clk)
	if s.distributed {
		t.Fatal("schema distributed before Distribute")
	}
	ctx := t.Context()
	var scopes []memorykit.Scope
	for i := range 6 {
		sc, err := memorykit.ProjectScope(fmt.Sprintf("tenant-%d", i), "p")
		if err != nil {
			t.Fatal(err)
		}
		scopes = append(scopes, sc)
		var items []storekit.BatchItem
		for j := range 4 {
			vec := make([]float32, 8)
			vec[j] = 1
			it := storekit.BatchItem{Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: fmt.Sprintf("key %d", j),
				Content: fmt.Sprintf("release train %d leaves on friday", j), Status: memorykit.StatusActive, Actor: author, Reason: "test"}}
			if j%2 == 0 {
				it.Embedding = &storekit.BatchEmbedding{Profile: embedder.LocalProfile, Vector: vec}
			}
			items = append(items, it)
		}
		if _, err := s.CreateBatch(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	// Register the profile: the records without a vector are queued.
	if _, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: embedder.LocalProfile, WorkerID: "w", TTL: 60e9, Max: 1}); err != nil {
		t.Fatal(err)
	}
	query := func(st *Store, sc memorykit.Scope) string {
		vec := make([]float32, 8)
		vec[2] = 1
		res, err := st.Recall(ctx, storekit.RecallQuery{Scope: sc, Terms: []string{"release", "friday"}, Vector: vec,
			Profile: embedder.LocalProfile, ExactLimit: 3, FullTextLimit: 10, VectorLimit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v %+v %+v", res.Exact, res.FullText, res.Vector)
	}
	before, err := s.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recalls := make([]string, len(scopes))
	for i, sc := range scopes {
		recalls[i] = query(s, sc)
	}
	pending, err := s.PendingEmbeddings(ctx, embedder.LocalProfile)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	shards := func() (n int) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_dist_shard s
			JOIN pg_class c ON c.oid = s.logicalrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1`, schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := Distribute(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	n := shards()
	if n == 0 {
		t.Fatal("no shards after Distribute")
	}
	if err := Distribute(ctx, pool, schema); err != nil {
		t.Fatalf("second Distribute: %v", err)
	}
	if m := shards(); m != n {
		t.Fatalf("second Distribute: %d shards, first made %d", m, n)
	}

	d := openStore(t, schema, clk)
	if !d.distributed {
		t.Fatal("reopened Store does not see the distributed schema")
	}
	after, err := d.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("Dump changed by Distribute:\nbefore %s\nafter  %s", before, after)
	}
	for i, sc := range scopes {
		if got := query(d, sc); got != recalls[i] {
			t.Fatalf("recall of %s changed:\nbefore %s\nafter  %s", sc.TenantID, recalls[i], got)
		}
	}
	if p, err := d.PendingEmbeddings(ctx, embedder.LocalProfile); err != nil || p != pending {
		t.Fatalf("PendingEmbeddings after Distribute = %d, %v; want %d", p, err, pending)
	}
}
