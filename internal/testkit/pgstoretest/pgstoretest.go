// Package pgstoretest opens pgstore Stores for memorykit's own tests, each
// test on a fresh schema of the database MEMORYKIT_POSTGRES_TEST_DSN names,
// under the skip/fail rule of internal/pgtest. It is apart from testkit so
// that testkit does not depend on pgstore.
package pgstoretest

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"

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
		pgstore.Config{Clock: clk, Guard: testkit.NewGuard(t), Schema: db.Schema, MaxConns: 4})
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
