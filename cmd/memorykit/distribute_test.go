package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/pgstore"
)

// TestCLIDistributeWithoutCitus: on plain PostgreSQL, migrate
// --distribute migrates, then fails with the next step and distributes
// nothing.
func TestCLIDistributeWithoutCitus(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	bin := buildCLI(t)
	r := runCLI(t, bin, "migrate", "--distribute", "--dsn", dsn, "--schema", schema).want(t, 1, "migrate --distribute without Citus")
	if !strings.Contains(r.stderr, "no citus extension") || !strings.Contains(r.stderr, "citus_add_node") {
		t.Errorf("stderr %q does not name the next step", r.stderr)
	}
	if want := fmt.Sprintf("schema %s: migrated, version %d\n", schema, pgstore.SchemaVersion); r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	runCLI(t, bin, "migrate", "--distribute", "--sqlite", t.TempDir()+"/x.db").want(t, 2, "--distribute with --sqlite")
}

// TestCLIDistributeTwiceOnCitus: on a Citus coordinator (scripts/citus-test-env.sh),
// migrate --distribute distributes the schema and a second run changes
// nothing.
func TestCLIDistributeTwiceOnCitus(t *testing.T) {
	dsn := os.Getenv("MEMORYKIT_CITUS_TEST_DSN")
	if dsn == "" {
		if pgtest.Required() {
			t.Fatal("MEMORYKIT_REQUIRE_POSTGRES=1 but MEMORYKIT_CITUS_TEST_DSN is not set")
		}
		t.Skip("MEMORYKIT_CITUS_TEST_DSN is not set")
	}
	schema := pgtest.Schema(t, dsn)
	bin := buildCLI(t)
	want := fmt.Sprintf("schema %s: migrated, version %d\nschema %s: distributed by tenant_id\n", schema, pgstore.SchemaVersion, schema)
	shards := func() (n int) {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_dist_shard s
			JOIN pg_class c ON c.oid = s.logicalrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1`, schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := 0
	for i := range 2 {
		r := runCLI(t, bin, "migrate", "--distribute", "--dsn", dsn, "--schema", schema).want(t, 0, "migrate --distribute")
		if r.stdout != want {
			t.Errorf("run %d: stdout %q, want %q", i, r.stdout, want)
		}
		n := shards()
		if i == 0 {
			if n == 0 {
				t.Fatal("no shards after --distribute")
			}
			first = n
		} else if n != first {
			t.Errorf("second --distribute: %d shards, first made %d", n, first)
		}
	}
}
