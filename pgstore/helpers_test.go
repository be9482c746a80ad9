package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	envDSN     = "MEMORYKIT_POSTGRES_TEST_DSN"
	envRequire = "MEMORYKIT_REQUIRE_POSTGRES"
)

// requirePostgres reports whether a missing database must fail the test.
func requirePostgres() bool { return os.Getenv(envRequire) == "1" }

// testDSN returns the test database's DSN. Without one it skips the test,
// or fails it when MEMORYKIT_REQUIRE_POSTGRES=1.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		if requirePostgres() {
			t.Fatalf("%s=1 but %s is not set", envRequire, envDSN)
		}
		t.Skipf("%s is not set: skipping the PostgreSQL test (set it, and %s=1 to make a missing database fail)", envDSN, envRequire)
	}
	return dsn
}

// unusable fails or skips when the database or pgvector cannot be used.
func unusable(t testing.TB, what string, err error) {
	t.Helper()
	if requirePostgres() || !errors.Is(err, memorykit.ErrUnavailable) {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s: %v (set %s=1 to fail instead)", what, err, envRequire)
}

// uniqueSchema returns a fresh schema name and drops the schema when the
// test ends.
func uniqueSchema(t testing.TB) string {
	t.Helper()
	dsn := testDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "mk_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() { dropSchema(t, dsn, name) })
	return name
}

func dropSchema(t testing.TB, dsn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("drop schema %s: connect: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+quoteIdent(name)+" CASCADE"); err != nil {
		t.Errorf("drop schema %s: %v", name, err)
	}
}

// adminConn opens a plain connection to the test database, closed when the
// test ends.
func adminConn(t testing.TB) *pgx.Conn {
	t.Helper()
	dsn := testDSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		unusable(t, "connect to the test database", mapErr("test.connect", err))
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// acceptAll is a ContentValidator that rejects only content containing
// "FORBIDDEN", so tests can provoke a rejection.
type acceptAll struct{}

func (acceptAll) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if strings.Contains(c.Content, "FORBIDDEN") {
		return errors.New("content policy said no")
	}
	return nil
}

func testLimits() memorykit.Limits {
	return memorykit.Limits{
		Version: 1, MaxKeyBytes: 200, MaxContentBytes: 8000, MaxMetadataEntries: 8,
		MaxMetadataBytes: 1024, MaxSources: 8, MaxSourceBytes: 256, MaxListSize: 100,
		MaxJobPayloadBytes: 16000,
	}
}

func testGuard(t testing.TB) *memorykit.WriteGuard {
	t.Helper()
	g, err := memorykit.NewWriteGuard(testLimits(), acceptAll{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// epoch is the mock clocks' starting instant.
var epoch = time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)

func newClock() *clock.Mock {
	c := clock.NewMock()
	c.Set(epoch)
	return c
}

// bundle is one test's store with its clock and schema.
type bundle struct {
	s      *Store
	clk    *clock.Mock
	schema string
	ctx    context.Context
	scope  memorykit.Scope
}

// setup opens a Store (with its own pool) on a fresh schema.
func setup(t *testing.T) *bundle {
	t.Helper()
	schema := uniqueSchema(t)
	clk := newClock()
	s := openStore(t, schema, clk)
	scope, err := memorykit.ProjectScope("tenant-a", "project-1")
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{s: s, clk: clk, schema: schema, ctx: context.Background(), scope: scope}
}

// openStore opens a Store on schema, closed when the test ends.
func openStore(t testing.TB, schema string, clk clock.Clock) *Store {
	t.Helper()
	s, err := Open(context.Background(), testDSN(t), Config{Clock: clk, Guard: testGuard(t), Schema: schema, MaxConns: 8})
	if err != nil {
		unusable(t, "open pgstore", err)
	}
	t.Cleanup(s.Close)
	return s
}

var author = memorykit.Actor{Kind: memorykit.ActorUser, ID: "user-1"}

func (b *bundle) create(t testing.TB, kind memorykit.Kind, key, content string, st memorykit.Status) memorykit.Record {
	t.Helper()
	r, err := b.s.Create(b.ctx, memorykit.NewRecord{
		Scope: b.scope, Kind: kind, Key: key, Content: content, Status: st, Actor: author, Reason: "test",
	})
	if err != nil {
		t.Fatalf("create %q: %v", key, err)
	}
	return r
}

// wantKind fails unless err is a *memorykit.Error of kind.
func wantKind(t testing.TB, err, kind error) *memorykit.Error {
	t.Helper()
	var me *memorykit.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *memorykit.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want kind %v", err, kind)
	}
	return me
}
