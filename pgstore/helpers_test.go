package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testDSN returns the test database's DSN under pgtest's skip/fail rule:
// the Citus coordinator's for the tests named TestCitus... (citus_test.go),
// which run PostgreSQL tests again on a distributed schema.
func testDSN(t testing.TB) string {
	t.Helper()
	if strings.HasPrefix(t.Name(), "TestCitus") {
		return citusDSN(t)
	}
	return pgtest.DSN(t)
}

// unusable fails or skips when the database or pgvector cannot be used.
func unusable(t testing.TB, what string, err error) {
	t.Helper()
	pgtest.Unusable(t, what, err)
}

// uniqueSchema returns a fresh schema name and drops the schema when the
// test ends.
func uniqueSchema(t testing.TB) string {
	t.Helper()
	return pgtest.Schema(t, testDSN(t))
}

// adminConn opens a plain connection to the test database, closed when the
// test ends.
func adminConn(t testing.TB) *pgx.Conn {
	t.Helper()
	return pgtest.Connect(t, testDSN(t))
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

func testTombstones(t testing.TB) *memorykit.TombstoneKeyer {
	t.Helper()
	k, err := memorykit.NewTombstoneKeyer([]byte(storetest.TestTombstoneSecret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testGuard(t testing.TB) *memorykit.WriteGuard {
	t.Helper()
	g, err := memorykit.NewWriteGuard(storetest.Limits(), acceptAll{})
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
	s, err := Open(context.Background(), testDSN(t), Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema, MaxConns: 8})
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
