package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestPostgresMigrateUpAndDown: a schema at version 8 holding records is
// taken down one version at a time, and after each step its catalog
// equals that of a fresh schema migrated up to the same version; at 0 it
// holds nothing but schema_migrations; migrating up again gives the
// catalog of version 8 back, and a store on it works.
func TestPostgresMigrateUpAndDown(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	s := openStore(t, schema, clk)
	scope, _ := memorykit.ProjectScope("tenant-d", "p1")
	b := &bundle{s: s, clk: clk, schema: schema, ctx: ctx, scope: scope}
	r := b.create(t, memorykit.KindFact, "deploy", "the api runs in eu-west-1", memorykit.StatusActive)
	if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: r.ID, Profile: "p", ContentHash: r.ContentHash,
		Vector: []float32{1, 0, 0}, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	conn := adminConn(t)
	ext := testVectorSchema(t, conn)
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	top := catalogDump(t, conn, schema)
	if want := catalogDump(t, conn, freshAt(t, conn, ext, migs, SchemaVersion)); top != want {
		t.Fatalf("the store's catalog differs from a fresh schema at version %d:\n%s\nfresh:\n%s", SchemaVersion, top, want)
	}
	for v := SchemaVersion - 1; v >= 0; v-- {
		if err := MigrateDown(ctx, conn, schema, v); err != nil {
			t.Fatalf("down to %d: %v", v, err)
		}
		got, want := catalogDump(t, conn, schema), catalogDump(t, conn, freshAt(t, conn, ext, migs, v))
		if got != want {
			t.Fatalf("down to %d: the catalog differs from a fresh schema at version %d:\n%s\nfresh:\n%s", v, v, got, want)
		}
		if n := len(migrationRows(t, conn, schema)); n != v {
			t.Fatalf("down to %d: %d versions recorded", v, n)
		}
	}
	if tables := tableText(t, conn, `SELECT tablename FROM pg_tables WHERE schemaname = '`+schema+`'`, schema); tables != "schema_migrations\n" {
		t.Fatalf("tables at version 0: %q", tables)
	}
	// Version 2's down strips the scope tags from the search lexemes:
	// shown here on version 2 data taken down to 1.
	tagged := freshAt(t, conn, ext, migs, 2)
	if _, err := conn.Exec(ctx, renderSQL(`INSERT INTO {schema}.records (id, tenant_id, subject_type, subject_id, kind, key,
		content, content_hash, status, version, effective_from, created_by_kind, created_by_id, touched_by_kind, touched_by_id,
		created_at, updated_at, search_tsv) VALUES ('r1', 't', 'project', 'p', 'fact', 'k', 'c', 'h', 'candidate', 1, now(),
		'user', 'u', 'user', 'u', now(), now(), array_to_tsvector('{0123456789ab.api,0123456789ab.runs}'))`, tagged, ext)); err != nil {
		t.Fatal(err)
	}
	if err := MigrateDown(ctx, conn, tagged, 1); err != nil {
		t.Fatal(err)
	}
	if got := tableText(t, conn, `SELECT search_tsv::text FROM {s}.records`, tagged); got != "'api' 'runs'\n" {
		t.Fatalf("search_tsv at version 1: %q", got)
	}

	// Up again.
	s2 := openStore(t, schema, clk)
	if got := catalogDump(t, conn, schema); got != top {
		t.Fatalf("up again: the catalog differs from the first version %d:\n%s\nfirst:\n%s", SchemaVersion, got, top)
	}
	b2 := &bundle{s: s2, clk: clk, schema: schema, ctx: ctx, scope: scope}
	b2.create(t, memorykit.KindFact, "deploy", "the api runs in eu-west-1", memorykit.StatusActive)
}

// TestPostgresMigrateDownRefuses: a schema recording a version this
// package has no migration for, or a target outside 0..current, is
// refused and left as it was.
func TestPostgresMigrateDownRefuses(t *testing.T) {
	ctx := context.Background()
	schema := uniqueSchema(t)
	openStore(t, schema, newClock()).Close()
	conn := adminConn(t)
	before := catalogDump(t, conn, schema)
	for _, v := range []int{-1, SchemaVersion + 1} {
		if err := MigrateDown(ctx, conn, schema, v); !errors.Is(err, memorykit.ErrInvalidInput) {
			t.Fatalf("down to %d: %v, want ErrInvalidInput", v, err)
		}
	}
	if err := MigrateDown(ctx, conn, "pg_catalog", 0); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Fatalf("down of a bad schema name: %v", err)
	}
	if _, err := conn.Exec(ctx, renderSQL(`INSERT INTO {schema}.schema_migrations VALUES ($1, 'from_the_future', now())`, schema, ""), SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	err := MigrateDown(ctx, conn, schema, 0)
	var me *memorykit.Error
	if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrIntegrity) || me.Reason != ReasonSchemaVersionNewer {
		t.Fatalf("down of a schema at an unknown version: %v", err)
	}
	if after := catalogDump(t, conn, schema); after != before {
		t.Fatalf("a refused down changed the catalog:\n%s\nbefore:\n%s", after, before)
	}
}

// testVectorSchema is vectorSchema for a test.
func testVectorSchema(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	ext, err := vectorSchema(context.Background(), "test", conn)
	if err != nil {
		t.Fatal(err)
	}
	return ext
}

// freshAt creates a schema (dropped when t ends) migrated up to version v.
func freshAt(t *testing.T, conn *pgx.Conn, ext string, migs []migration, v int) string {
	t.Helper()
	ctx := context.Background()
	schema := uniqueSchema(t)
	if _, err := conn.Exec(ctx, renderSQL(`CREATE SCHEMA {schema}; CREATE TABLE {schema}.schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`, schema, ext)); err != nil {
		t.Fatal(err)
	}
	for _, m := range migs[:v] {
		if err := applyMigration(ctx, conn, schema, ext, m, epoch); err != nil {
			t.Fatal(err)
		}
	}
	return schema
}

// catalogDump renders what the catalog says of schema (relations and
// their options, columns, indexes, constraints, triggers, functions,
// sequences, comments) with the schema's name replaced by {schema}, so two
// schemas built alike dump alike. Column positions are left out: a column
// dropped and added again sits behind a hole, which nothing reads.
func catalogDump(t *testing.T, conn *pgx.Conn, schema string) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT c.relname, c.relkind, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 ORDER BY 1`,
		`SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attgenerated, a.attstorage,
			coalesce(co.collname, ''), coalesce(pg_get_expr(d.adbin, d.adrelid), ''), coalesce(col_description(c.oid, a.attnum), '')
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0
			LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE n.nspname = $1 AND c.relkind IN ('r', 'S') AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, a.attnum`,
		`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY 1`,
		`SELECT c.relname, k.conname, pg_get_constraintdef(k.oid) FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 ORDER BY 1, 2`,
		`SELECT g.tgname, pg_get_triggerdef(g.oid) FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT g.tgisinternal ORDER BY 1`,
		`SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			WHERE n.nspname = $1 ORDER BY 1`,
		`SELECT sequencename, data_type, start_value, increment_by FROM pg_sequences WHERE schemaname = $1 ORDER BY 1`,
	} {
		rows, err := conn.Query(context.Background(), q, schema)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			v, err := r.Values()
			var line strings.Builder
			for i, x := range v {
				if i > 0 {
					line.WriteString(" | ")
				}
				line.WriteString(strings.TrimSpace(strings.ReplaceAll(fmtAny(x), schema, "{schema}")))
			}
			return line.String(), err
		})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.Join(vals, "\n"))
		b.WriteString("\n--\n")
	}
	return b.String()
}

func fmtAny(x any) string {
	switch v := x.(type) {
	case nil:
		return "NULL"
	case string:
		return v
	default:
		return strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtValue(v), "\n", " "), "\t", " "))
	}
}

func fmtValue(v any) string { return fmt.Sprint(v) }
