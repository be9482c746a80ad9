// Package pgstoretest opens pgstore Stores for memorykit's own tests, each
// test on a fresh schema of the database MEMORYKIT_POSTGRES_TEST_DSN names,
// under the skip/fail rule of internal/pgtest, and runs a test on both
// memorystore and pgstore (Each). It is apart from testkit so that testkit
// does not depend on pgstore.
package pgstoretest

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/pgtest"
	"github.com/goagents/memorykit/internal/testkit"
	"github.com/goagents/memorykit/pgstore"
)

// DB is one test's schema. Every Store opened on it tags its connections
// with App, so Terminate ends exactly those.
type DB struct {
	DSN, Schema, App string
}

// New returns a fresh schema for t (dropped when t ends), or skips t
// without a database (failing it when MEMORYKIT_REQUIRE_POSTGRES=1).
func New(t testing.TB) *DB {
	t.Helper()
	dsn := pgtest.DSN(t)
	return &DB{DSN: dsn, Schema: pgtest.Schema(t, dsn), App: pgtest.Name("mk_test_app_")}
}

// Open opens a Store with a pool of its own on db's schema, on clk and
// with testkit.NewGuard, closed when t ends. A database or pgvector that
// cannot be used skips t, or fails it when required.
func (db *DB) Open(t testing.TB, clk clock.Clock) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgtest.WithAppName(t, db.DSN, db.App),
		pgstore.Config{Clock: clk, Guard: testkit.NewGuard(t), Tombstones: testkit.NewTombstones(t), Schema: db.Schema, MaxConns: 4})
	if err != nil {
		pgtest.Unusable(t, "open pgstore", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Terminate ends every backend of the Stores opened on db, the way a
// database restart would, and returns how many it ended. Like
// pgtest.Terminate it may be called from any goroutine.
func (db *DB) Terminate(t testing.TB) int {
	return pgtest.Terminate(t, db.DSN, db.App)
}

// Backend is one Store implementation a test runs on.
type Backend struct {
	// Name is "memorystore" or "pgstore".
	Name string
	// DB is the pgstore schema; nil for memorystore.
	DB *DB
}

// Postgres returns the pgstore Backend on a fresh schema (see New).
func Postgres(t testing.TB) Backend {
	t.Helper()
	return Backend{Name: "pgstore", DB: New(t)}
}

// Open returns a fresh store of b's implementation on clk, closed when t
// ends. On pgstore every call opens another Store (with its own pool) on
// the same schema.
func (b Backend) Open(t testing.TB, clk clock.Clock) memorykit.Store {
	t.Helper()
	if b.DB == nil {
		return testkit.MemStore(t, clk)
	}
	return b.DB.Open(t, clk)
}

// Each runs fn as two parallel subtests, "memorystore" and "pgstore". The
// pgstore subtest is skipped without a database (failed when
// MEMORYKIT_REQUIRE_POSTGRES=1).
func Each(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	t.Run("memorystore", func(t *testing.T) {
		t.Parallel()
		fn(t, Backend{Name: "memorystore"})
	})
	t.Run("pgstore", func(t *testing.T) {
		t.Parallel()
		fn(t, Postgres(t))
	})
}
