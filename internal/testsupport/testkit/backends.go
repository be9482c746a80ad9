package testkit

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/storekit"
)

// The backend matrix: every test that must hold on each Store
// implementation runs through Each, as one subtest per implementation,
// named after its package.
const (
	// Memorystore names the memorystore backend and its subtest.
	Memorystore = "memorystore"
	// Pgstore names the pgstore backend and its subtest. Its stores live
	// on the database MEMORYKIT_POSTGRES_TEST_DSN names, under the
	// skip/fail rule of package pgtest.
	Pgstore = "pgstore"
)

// DB is one test's pgstore schema. Every Store opened on it tags its
// connections with App, so Terminate ends exactly those.
type DB struct {
	DSN, Schema, App string
}

// NewDB returns a fresh schema for t (dropped when t ends), or skips t
// without a database (failing it when MEMORYKIT_REQUIRE_POSTGRES=1).
func NewDB(t testing.TB) *DB {
	t.Helper()
	dsn := pgtest.DSN(t)
	return &DB{DSN: dsn, Schema: pgtest.Schema(t, dsn), App: pgtest.Name("mk_test_app_")}
}

// Open opens a Store with a pool of its own on db's schema, on clk and
// with NewGuard, closed when t ends. A database or pgvector that cannot be
// used skips t, or fails it when required.
func (db *DB) Open(t testing.TB, clk clock.Clock) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgtest.WithAppName(t, db.DSN, db.App),
		pgstore.Config{Clock: clk, Guard: NewGuard(t), Tombstones: NewTombstones(t), Schema: db.Schema, MaxConns: 4})
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
	// Name is Memorystore or Pgstore.
	Name string
	// DB is the pgstore schema Open uses. Each sets it for pgstore; it is
	// nil for memorystore and in the Backends list.
	DB *DB
}

// Backends returns the memorystore and pgstore backends, without a
// schema: for benchmarks and tests that build stores with New.
func Backends() []Backend {
	return []Backend{{Name: Memorystore}, {Name: Pgstore}}
}

// Postgres returns the pgstore Backend on a fresh schema (see NewDB).
func Postgres(t testing.TB) Backend {
	t.Helper()
	return Backend{Name: Pgstore, DB: NewDB(t)}
}

// Open returns a store of b's implementation on clk, closed when t ends.
// On pgstore every call opens another Store (with its own pool) on the
// same schema, b.DB (a fresh one when b.DB is nil); on memorystore every
// call returns a new, empty store.
func (b Backend) Open(t testing.TB, clk clock.Clock) storekit.Store {
	t.Helper()
	switch {
	case b.DB != nil:
		return b.DB.Open(t, clk)
	case b.Name == Pgstore:
		return NewDB(t).Open(t, clk)
	}
	return MemStore(t, clk)
}

// New returns a fresh, empty store of b's implementation on clk, closed
// when t ends: on pgstore a Store on a schema of its own.
func (b Backend) New(t testing.TB, clk clock.Clock) storekit.Store {
	t.Helper()
	if b.Name == Pgstore {
		return NewDB(t).Open(t, clk)
	}
	return MemStore(t, clk)
}

// Each runs fn as two parallel subtests, "memorystore" and "pgstore"; fn
// must not call t.Parallel itself. The pgstore subtest is skipped without
// a database (failed when MEMORYKIT_REQUIRE_POSTGRES=1).
func Each(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	t.Run(Memorystore, func(t *testing.T) {
		t.Parallel()
		fn(t, Backend{Name: Memorystore})
	})
	t.Run(Pgstore, func(t *testing.T) {
		t.Parallel()
		fn(t, Postgres(t))
	})
}
