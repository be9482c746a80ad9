package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestPostgresMigratesVersion1Forward builds a history on a current store,
// copies its rows into a schema that only has migration 1 applied (the
// version 1 layout), opens that schema, and requires the migrated recall
// layout and every recall to equal the store that was current all along.
func TestPostgresMigratesVersion1Forward(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	cur := openStore(t, uniqueSchema(t), clk)
	sc1, _ := memorykit.ProjectScope("tenant-m", "p1")
	sc2, _ := memorykit.ProjectScope("tenant-m", "p2")
	mk := func(sc memorykit.Scope, key, content string, st memorykit.Status) memorykit.Record {
		r, err := cur.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: key, Content: content, Status: st, Actor: author})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	put := func(r memorykit.Record, v []float32) {
		if err := cur.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: r.Scope, RecordID: r.ID, Profile: "p", ContentHash: r.ContentHash, Vector: v, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	a := mk(sc1, "deploy", "the api runs in eu-west-1 and the db in 東京", memorykit.StatusActive)
	put(a, []float32{1, 0, 0})
	b := mk(sc1, "backup", "the backup runs nightly", memorykit.StatusActive)
	put(b, []float32{0, 1, 0})
	mk(sc1, "deploy", "the api runs in us-east-2", memorykit.StatusActive) // supersedes a
	c := mk(sc1, "pager", "the pager rotates weekly", memorykit.StatusCandidate)
	d := mk(sc2, "db", "the ledger lives in postgres", memorykit.StatusActive)
	put(d, []float32{1, 1, 0})
	e := mk(sc2, "old", "an old note about the ledger", memorykit.StatusActive)
	put(e, []float32{0, 0, 1})
	clk.Add(time.Second)
	if _, err := cur.Forget(ctx, storekit.Transition{Scope: sc2, ID: e.ID, Actor: author}); err != nil {
		t.Fatal(err)
	}
	if _, err := cur.Erase(ctx, storekit.Transition{Scope: sc2, ID: e.ID, Actor: author}); err != nil {
		t.Fatal(err)
	}
	if _, err := cur.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: sc1, ID: b.ID, Actor: author}, Content: "the backup runs hourly"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cur.Activate(ctx, storekit.Transition{Scope: sc1, ID: c.ID, Actor: author}); err != nil {
		t.Fatal(err)
	}
	if _, err := cur.Create(ctx, memorykit.NewRecord{Scope: sc2, Kind: memorykit.KindFact, Key: "later", Content: "the ledger moves later",
		Status: memorykit.StatusActive, Actor: author, EffectiveFrom: clk.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	// A schema at version 1, holding the same rows.
	old := uniqueSchema(t)
	conn := adminConn(t)
	var ext string
	if err := conn.QueryRow(ctx, `SELECT n.nspname FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace
		WHERE x.extname = 'vector'`).Scan(&ext); err != nil {
		t.Fatal(err)
	}
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, renderSQL(`CREATE SCHEMA {schema}; CREATE TABLE {schema}.schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`, old, ext)); err != nil {
		t.Fatal(err)
	}
	if err := applyMigration(ctx, conn, old, ext, migs[0], epoch); err != nil {
		t.Fatal(err)
	}
	copyCols := map[string]string{
		"records":          recordCols + ", search_tsv",
		"revisions":        "record_id, version, action, actor_kind, actor_id, reason, status, content_hash, content, metadata, sources, at",
		"embeddings":       "record_id, profile, tenant_id, subject_type, subject_id, content_hash, dims, embedding, created_at",
		"embedding_leases": "record_id, profile, content_hash, worker_id, lease_expires_at, attempts, retry_at, parked, reason, updated_at",
	}
	// Version 1 stored the terms without the scope tag (12 hex digits and
	// a dot) that version 2 puts before each.
	untagged := map[string]string{"records": recordCols + `, CASE WHEN search_tsv = ''::tsvector THEN search_tsv
		ELSE array_to_tsvector(ARRAY(SELECT substr(l, 14) FROM unnest(tsvector_to_array(search_tsv)) AS l)) END`}
	for _, table := range []string{"records", "revisions", "embeddings", "embedding_leases"} {
		cols, sel := copyCols[table], copyCols[table]
		if u, ok := untagged[table]; ok {
			sel = u
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s.%s (%s) SELECT %s FROM %s.%s",
			quoteIdent(old), table, cols, sel, quoteIdent(cur.Schema()), table)); err != nil {
			t.Fatalf("copy %s: %v", table, err)
		}
	}

	migrated := openStore(t, old, clk)
	versions := migrationRows(t, conn, old)
	if len(versions) != SchemaVersion {
		t.Fatalf("schema_migrations after Open: %v", versions)
	}
	for _, q := range []string{
		`SELECT id, search_tsv::text FROM {s}.records ORDER BY 1`,
		`SELECT tenant_id, subject_id, term, df FROM {s}.term_df ORDER BY 1, 2, 3`,
		`SELECT record_id, tenant_id, subject_id, effective_from, effective_until, updated_at, terms::text FROM {s}.recall_text ORDER BY 1`,
		`SELECT record_id, profile, live, half::text FROM {s}.embeddings ORDER BY 1, 2`,
	} {
		got, want := tableText(t, conn, q, old), tableText(t, conn, q, cur.Schema())
		if strings.Count(want, "\n") < 3 {
			t.Fatalf("%s: the current store has almost nothing to compare:\n%s", q, want)
		}
		if got != want {
			t.Fatalf("%s differs after migration:\nmigrated:\n%s\ncurrent:\n%s", q, got, want)
		}
	}
	for _, sc := range []memorykit.Scope{sc1, sc2} {
		for _, text := range []string{"the api", "ledger postgres", "backup hourly", "東京", "pager the"} {
			q := storekit.RecallQuery{Scope: sc, ExactKeys: storekit.ExactKeys(text, 4), Terms: storekit.SearchTerms(text, 8),
				Vector: []float32{1, 0.5, 0.1}, Profile: "p", ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5}
			want, err := cur.Recall(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := migrated.Recall(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("recall %q in %s differs (-current +migrated):\n%s", text, sc, d)
			}
		}
	}

	// Version 4 registers the profiles in use and queues their pending
	// records; leasing gives what the current store gives.
	mb := &bundle{s: migrated, ctx: ctx}
	if got, want := mb.queueRows(t, "p"), mb.pendingRecords(t, "p"); len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("queue after migration %v, pending records %v", got, want)
	}
	lease := storekit.EmbeddingLease{Profile: "p", WorkerID: "w", TTL: time.Minute, Max: 10}
	want, err := cur.LeaseEmbeddings(ctx, lease)
	if err != nil {
		t.Fatal(err)
	}
	got, err := migrated.LeaseEmbeddings(ctx, lease)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" || len(want) == 0 {
		t.Fatalf("leases differ (-current +migrated):\n%s", d)
	}
}

// tableText renders a query's rows as text; {s} stands for the schema.
func tableText(t *testing.T, conn *pgx.Conn, q, schema string) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), strings.ReplaceAll(q, "{s}", quoteIdent(schema)))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vals...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
