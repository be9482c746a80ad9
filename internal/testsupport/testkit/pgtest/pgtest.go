// Package pgtest is PostgreSQL support for memorykit's own tests: where the
// test database is, what to do when it is missing, a fresh schema per test,
// connections tagged with an application_name, and a way to end exactly a
// test's own backends (a stand-in for a database restart).
//
// One rule governs every helper: the test database is named by
// MEMORYKIT_POSTGRES_TEST_DSN. When it is missing or cannot be used, the
// test is skipped with a message saying so, unless
// MEMORYKIT_REQUIRE_POSTGRES=1, in which case the test fails.
//
// The package deliberately does not import pgstore, so that pgstore's own
// in-package tests can use it too. It is internal: nothing here ships to
// Hosts.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
)

// Environment variables the helpers read.
const (
	// EnvDSN names the test database.
	EnvDSN = "MEMORYKIT_POSTGRES_TEST_DSN"
	// EnvRequire, set to "1", turns every skip for a missing or unusable
	// database into a failure.
	EnvRequire = "MEMORYKIT_REQUIRE_POSTGRES"
)

// timeout bounds each administrative statement, so a hung database fails
// a test instead of hanging it.
const timeout = 30 * time.Second

// Required reports whether a missing or unusable database must fail tests
// (MEMORYKIT_REQUIRE_POSTGRES=1) rather than skip them.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// DSN returns the test database's DSN. Without one it skips the test, or
// fails it when Required.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if Required() {
			t.Fatalf("%s=1 but %s is not set", EnvRequire, EnvDSN)
		}
		t.Skipf("%s is not set: skipping the PostgreSQL test (set it, and %s=1 to make a missing database fail)", EnvDSN, EnvRequire)
	}
	return dsn
}

// Unusable ends the test because what failed with err. An error of kind
// memorykit.ErrUnavailable (no database, no pgvector) skips the test unless
// Required; any other error, or any error when Required, fails it. It
// never returns.
func Unusable(t testing.TB, what string, err error) {
	t.Helper()
	if Required() || !errors.Is(err, memorykit.ErrUnavailable) {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s: %v (set %s=1 to fail instead)", what, err, EnvRequire)
}

// Name returns prefix followed by twelve random lower-case hex digits: a
// name no other test picks, usable unquoted as a PostgreSQL identifier or
// application_name when prefix is.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return prefix + hex.EncodeToString(b[:])
}

// SchemaPrefix starts every name Schema returns, so a schema a crashed
// test left behind is easy to recognise.
const SchemaPrefix = "mk_test_"

// Schema returns a fresh schema name and registers a cleanup that drops
// the schema (if anything created it) with everything in it when the test
// ends. It does not create the schema: the store under test does.
func Schema(t testing.TB, dsn string) string {
	t.Helper()
	name := Name(SchemaPrefix)
	t.Cleanup(func() { dropSchema(t, dsn, name) })
	return name
}

func dropSchema(t testing.TB, dsn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		// A test that skipped because the database is down ends up here
		// too; only a required database makes this a failure.
		report(t, "drop schema %s: connect: %v", name, err)
		return
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("drop schema %s: %v", name, err)
	}
}

// report is Errorf when the database is Required and Logf otherwise.
func report(t testing.TB, format string, args ...any) {
	if Required() {
		t.Errorf(format, args...)
		return
	}
	t.Logf(format, args...)
}

// WithAppName returns dsn with its application_name set to app, so that
// every connection opened with it can be found (and ended by Terminate).
// It accepts both URL and keyword/value DSNs. A URL that does not parse
// fails the test without echoing the DSN, which may hold a password.
func WithAppName(t testing.TB, dsn, app string) string {
	t.Helper()
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("the test DSN does not parse as a URL")
		}
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		return u.String()
	}
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(app)
	return strings.TrimSpace(dsn + " application_name='" + quoted + "'")
}

// Connect opens a plain administrative connection to dsn, closed when the
// test ends. A connection failure goes through Unusable: it skips the
// test, or fails it when Required.
func Connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		Unusable(t, "connect to the test database",
			memorykit.WrapError("pgtest.connect", memorykit.ErrUnavailable, "connect_failed", err))
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Terminate ends every backend of the test database whose application_name
// is app, except its own, the way a database restart or failover would,
// and returns how many it ended. It reports problems with t.Errorf (never
// Fatal or Skip), so it may be called from any goroutine, including from
// inside code under test.
func Terminate(t testing.TB, dsn, app string) int {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("terminate backends: connect: %v", err)
		return 0
	}
	defer func() { _ = conn.Close(ctx) }()
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1`, app).Scan(&n)
	if err != nil {
		t.Errorf("terminate backends: %v", err)
	}
	return n
}
