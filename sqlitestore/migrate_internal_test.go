package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestMigratesAVersion1File: a file written by the first schema (every
// revision as JSON, no status columns, no record count) opens at the
// current version with the same state, its record count and status
// columns filled in, and its records found by the Scopes they are in.
func TestMigratesAVersion1File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	clk := storetest.NewClock()
	cfg := memorystore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)}
	mem, err := memorystore.NewJournaled(cfg, memorystore.Image{})
	if err != nil {
		t.Fatal(err)
	}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u1"}
	a, b := storetest.Scope(t, "tenant-m", "a"), storetest.Scope(t, "tenant-m", "b")
	for i, sc := range []memorykit.Scope{a, a, b} {
		st := memorykit.StatusActive
		if i == 1 {
			st = memorykit.StatusCandidate
		}
		it := storekit.BatchItem{Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: "k" + string(rune('0'+i)), Content: "the sky is teal",
			Status: st, Actor: actor}}
		if i == 2 {
			it.Embedding = &storekit.BatchEmbedding{Profile: "p/v", Vector: []float32{1, 0.5}}
		}
		rs, err := mem.CreateBatch(ctx, []storekit.BatchItem{it})
		if err != nil {
			t.Fatal(err)
		}
		r := rs[0]
		if i == 0 {
			if _, err := mem.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: sc, ID: r.ID, Actor: actor}, Content: "the sky is cyan"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migs[0].Up, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`,
		`INSERT INTO schema_migrations VALUES (1, 'init', 'x')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	img := mem.Image()
	for _, ri := range img.Records {
		body, _ := json.Marshal(ri.Record)
		sc := ri.Record.Scope
		if _, err := db.Exec(`INSERT INTO records VALUES (?, ?, ?, ?, ?)`, ri.Record.ID, sc.TenantID, string(sc.SubjectType), sc.SubjectID, string(body)); err != nil {
			t.Fatal(err)
		}
		for _, m := range ri.Embeddings {
			if _, err := db.Exec(`INSERT INTO embeddings VALUES (?, ?, ?, ?, ?)`, ri.Record.ID, m.Profile, m.ContentHash, encodeVector(m.Vector), formatTime(m.At)); err != nil {
				t.Fatal(err)
			}
		}
		for i, v := range ri.Revisions {
			body, _ := json.Marshal(v)
			if _, err := db.Exec(`INSERT INTO revisions VALUES (?, ?, ?)`, ri.Record.ID, i, string(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path, Config{Clock: clk, Guard: cfg.Guard, Tombstones: cfg.Tombstones, Sync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	// A Scope written before the recall index existed is loaded by its
	// first recall, which adds it to the index.
	s.noBackgroundLoad = true
	if res, err := s.Recall(ctx, storekit.RecallQuery{Scope: b, Terms: []string{"teal"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5}); err != nil || len(res.FullText) != 1 {
		t.Fatalf("first recall in the migrated file = %+v, %v", res, err)
	}
	if s.mirror.Len() != 1 || !s.indexed[b] {
		t.Fatalf("after the first recall %d Scopes are loaded (indexed: %v); want b, indexed", s.mirror.Len(), s.indexed[b])
	}
	if s.Records() != 3 {
		t.Fatalf("Records() = %d; want 3", s.Records())
	}
	var active, candidates, hashed int
	if err := s.conn.QueryRowContext(ctx, `SELECT sum(status = 'active'), sum(status = 'candidate'), sum(content_hash LIKE 'sha256:%') FROM records`).Scan(&active, &candidates, &hashed); err != nil {
		t.Fatal(err)
	}
	if active != 2 || candidates != 1 || hashed != 3 {
		t.Fatalf("status columns: %d active, %d candidate, %d hashed; want 2, 1, 3", active, candidates, hashed)
	}
	d, err := s.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, m, _ := strings.Cut(d, "\nmirror\n"); m != mem.Dump() {
		t.Fatalf("the migrated file loads to another state:\n%s\n---\n%s", m, mem.Dump())
	}
	res, err := s.Recall(ctx, storekit.RecallQuery{Scope: b, Terms: []string{"teal"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if err != nil || len(res.FullText) != 1 {
		t.Fatalf("recall in the migrated file = %+v, %v", res, err)
	}
	// Once loaded, both Scopes are in the index: after a reopen their
	// recalls are answered from the file.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path, Config{Clock: clk, Guard: cfg.Guard, Tombstones: cfg.Tombstones, Sync: SyncNormal}); err != nil {
		t.Fatal(err)
	}
	s.noBackgroundLoad = true
	for sc, term := range map[memorykit.Scope]string{a: "cyan", b: "teal"} {
		res, err := s.Recall(ctx, storekit.RecallQuery{Scope: sc, Terms: []string{term}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
		if err != nil || len(res.FullText) != 1 {
			t.Fatalf("recall of %q after reopening = %+v, %v", term, res, err)
		}
	}
	// The vector written before the migration is found through its
	// record's row number, which the migration filled in.
	res, err = s.Recall(ctx, storekit.RecallQuery{Scope: b, Profile: "p/v", Vector: []float32{1, 0.4}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if err != nil || len(res.Vector) != 1 {
		t.Fatalf("vector recall after reopening = %+v, %v", res, err)
	}
	if s.mirror.Len() != 0 {
		t.Fatalf("%d Scopes loaded by recalls the index answers; want none", s.mirror.Len())
	}
}
