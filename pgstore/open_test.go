package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/goagents/memorykit"
)

type migrationRow struct {
	version int
	applied time.Time
}

func migrationRows(t *testing.T, conn *pgx.Conn, schema string) []migrationRow {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT version, applied_at FROM "+quoteIdent(schema)+".schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (migrationRow, error) {
		var m migrationRow
		err := r.Scan(&m.version, &m.applied)
		return m, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPostgresOpenConcurrentMigratesOnce(t *testing.T) {
	schema := uniqueSchema(t)
	dsn := testDSN(t)
	clk := newClock()
	const n = 8
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = Open(context.Background(), dsn, Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema, MaxConns: 2})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			unusable(t, fmt.Sprintf("concurrent open %d", i), err)
		}
		t.Cleanup(stores[i].Close)
	}
	rows := migrationRows(t, adminConn(t), schema)
	if len(rows) != SchemaVersion {
		t.Fatalf("schema_migrations has %d rows, want %d", len(rows), SchemaVersion)
	}
	for i, r := range rows {
		if r.version != i+1 {
			t.Fatalf("migration row %d has version %d", i, r.version)
		}
		if !r.applied.Equal(epoch.Truncate(time.Microsecond)) {
			t.Fatalf("applied_at %v is not the injected clock's time %v", r.applied, epoch)
		}
	}
	// Every store works on the one schema.
	scope, _ := memorykit.ProjectScope("tenant-a", "project-1")
	for i, s := range stores {
		if _, err := s.Create(context.Background(), memorykit.NewRecord{
			Scope: scope, Kind: memorykit.KindNote, Key: fmt.Sprintf("k%d", i), Content: "c",
			Status: memorykit.StatusActive, Actor: author,
		}); err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
}

func TestPostgresReopenIsNoOp(t *testing.T) {
	b := setup(t)
	rec := b.create(t, memorykit.KindFact, "region", "eu-west-1", memorykit.StatusActive)
	conn := adminConn(t)
	before := migrationRows(t, conn, b.schema)
	b.s.Close()

	b.clk.Add(time.Hour)
	s2 := openStore(t, b.schema, b.clk)
	after := migrationRows(t, conn, b.schema)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("reopen changed schema_migrations: %v -> %v", before, after)
	}
	got, err := s2.Get(context.Background(), b.scope, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != rec.Content || got.Version != 1 {
		t.Fatalf("record after reopen: %+v", got)
	}
}

func TestPostgresOpenRefusesUnsupportedSchemaVersion(t *testing.T) {
	cases := []struct {
		name   string
		mutate string
		reason string
	}{
		{"newer", fmt.Sprintf("INSERT INTO %%s.schema_migrations VALUES (%d, 'from_the_future', now())", SchemaVersion+1), ReasonSchemaVersionNewer},
		{"unknown", "UPDATE %s.schema_migrations SET version = 0 WHERE version = 1", ReasonSchemaVersionUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := setup(t)
			b.s.Close()
			conn := adminConn(t)
			if _, err := conn.Exec(context.Background(), fmt.Sprintf(c.mutate, quoteIdent(b.schema))); err != nil {
				t.Fatal(err)
			}
			before := migrationRows(t, conn, b.schema)
			s, err := Open(context.Background(), testDSN(t), Config{Clock: b.clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: b.schema})
			if err == nil {
				s.Close()
				t.Fatal("Open accepted an unsupported schema version")
			}
			me := wantKind(t, err, memorykit.ErrIntegrity)
			if me.Reason != c.reason {
				t.Fatalf("reason %q, want %q", me.Reason, c.reason)
			}
			if after := migrationRows(t, conn, b.schema); fmt.Sprint(before) != fmt.Sprint(after) {
				t.Fatalf("a refused Open changed schema_migrations: %v -> %v", before, after)
			}
		})
	}
}

func TestPostgresOpenConfigErrors(t *testing.T) {
	dsn := testDSN(t)
	clk := newClock()
	g := testGuard(t)
	k := testTombstones(t)
	ctx := context.Background()
	for name, cfg := range map[string]Config{
		"no clock":      {Guard: g, Tombstones: k},
		"no guard":      {Clock: clk, Tombstones: k},
		"no tombstones": {Clock: clk, Guard: g},
		"bad schema":    {Clock: clk, Guard: g, Tombstones: k, Schema: "Robert'); DROP"},
		"pg_ schema":    {Clock: clk, Guard: g, Tombstones: k, Schema: "pg_catalog"},
		"neg maxconn":   {Clock: clk, Guard: g, Tombstones: k, MaxConns: -1},
	} {
		if s, err := Open(ctx, dsn, cfg); err == nil {
			s.Close()
			t.Fatalf("%s: Open succeeded", name)
		} else {
			wantKind(t, err, memorykit.ErrInvalidConfig)
		}
	}
	_, err := Open(ctx, "postgres://user:hunter2@[::1", Config{Clock: clk, Guard: g, Tombstones: k})
	wantKind(t, err, memorykit.ErrInvalidConfig)
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("DSN password leaked into the error: %v", err)
	}
	if _, err := New(ctx, nil, Config{Clock: clk, Guard: g, Tombstones: k}); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Fatalf("New with a nil pool: %v", err)
	}
}

func TestPostgresOpenUnreachableIsRecoverable(t *testing.T) {
	testDSN(t)
	// Port 1 on localhost refuses connections. Open retries until the
	// context ends, which here is at the first retry wait.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	onConnectRetry = func(int, time.Duration) { cancel() }
	t.Cleanup(func() { onConnectRetry = nil })
	_, err := Open(ctx, "postgres://nobody:secret-pw@127.0.0.1:1/none?sslmode=disable&connect_timeout=2",
		Config{Clock: newClock(), Guard: testGuard(t), Tombstones: testTombstones(t)})
	me := wantKind(t, err, memorykit.ErrUnavailable)
	if !me.Retry || !memorykit.IsRecoverable(err) {
		t.Fatalf("connection failure is not recoverable: %v", err)
	}
	if strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("password leaked: %v", err)
	}
}

// TestPostgresOpenWithoutPgvector opens a database where the role may not
// install the extension: a fresh database and a role that is not a
// superuser, which is what a server without pgvector privileges looks like.
func TestPostgresOpenWithoutPgvector(t *testing.T) {
	dsn := testDSN(t)
	conn := adminConn(t)
	ctx := context.Background()
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
		t.Fatal(err)
	}
	if !super {
		t.Skip("the test role cannot create databases and roles; the mapping is covered by TestExtensionErrorMapping")
	}
	suffix := strings.TrimPrefix(uniqueSchema(t), "mk_test_")
	db, role := "mk_novec_"+suffix, "mk_novec_"+suffix
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+quoteIdent(db)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+quoteIdent(db)+" WITH (FORCE)")
		_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+quoteIdent(role))
	})
	if _, err := conn.Exec(ctx, "CREATE ROLE "+quoteIdent(role)+" LOGIN PASSWORD 'novec-pw' NOSUPERUSER"); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "novec-pw")
	u.Path = "/" + db
	_, err = Open(ctx, u.String(), Config{Clock: newClock(), Guard: testGuard(t), Tombstones: testTombstones(t)})
	me := wantKind(t, err, memorykit.ErrUnavailable)
	if me.Reason != ReasonPgvectorUnavailable || me.Retry {
		t.Fatalf("error %v: want reason %s, not recoverable", err, ReasonPgvectorUnavailable)
	}
	// Nothing was created in the refused database.
	var n int
	admin, _ := url.Parse(dsn)
	admin.Path = "/" + db
	c2, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	if err := c2.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'memorykit'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("a refused Open created its schema")
	}
}

func TestPostgresNewLeavesCallerPoolOpen(t *testing.T) {
	schema := uniqueSchema(t)
	ctx := context.Background()
	pcfg, err := pgxpool.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	pcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error { return pgxvec.RegisterTypes(ctx, c) }
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := New(ctx, pool, Config{Clock: newClock(), Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema})
	if err != nil {
		unusable(t, "new pgstore", err)
	}
	scope, _ := memorykit.ProjectScope("t", "p")
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: "k", Content: "c",
		Status: memorykit.StatusActive, Actor: author}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("Close closed the caller's pool: %v", err)
	}
	if pool.Stat().TotalConns() == 0 {
		t.Fatal("pool lost its connections")
	}

	// An owned pool is closed by Close.
	owned := openStore(t, schema, newClock())
	owned.Close()
	if err := owned.conns.Ping(ctx); err == nil {
		t.Fatal("Close left the store's own pool open")
	}
	if _, err := owned.Get(ctx, scope, "x"); !errors.Is(err, memorykit.ErrUnavailable) {
		t.Fatalf("Get on a closed store: %v", err)
	}
}

func TestPostgresNewNeedsRegisteredTypes(t *testing.T) {
	schema := uniqueSchema(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = New(ctx, pool, Config{Clock: newClock(), Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema})
	if errors.Is(err, memorykit.ErrUnavailable) {
		unusable(t, "new pgstore", err)
	}
	me := wantKind(t, err, memorykit.ErrInvalidConfig)
	if me.Reason != "pgvector_types_not_registered" {
		t.Fatalf("reason %q", me.Reason)
	}
}

// TestPostgresOpenFailsClosedOnABadVectorRoundTrip: when the database does
// not hand back the vector Open sent (it fails on the value, cuts it
// short, or changes its values), Open returns a typed ErrIntegrity naming
// which, and no Store. The round-trip statement is replaced by one that
// misbehaves in the real database: a typmod the value does not fit,
// pgvector's subvector, and a pass through half precision.
func TestPostgresOpenFailsClosedOnABadVectorRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name, sql, reason string
	}{
		{"statement_fails", `SELECT $1::{ext}.vector(3)`, "vector_round_trip_failed"},
		{"shorter", `SELECT {ext}.subvector($1::{ext}.vector, 1, 3)`, "vector_round_trip_mismatch"},
		{"other_values", `SELECT $1::{ext}.vector::{ext}.halfvec::{ext}.vector`, "vector_round_trip_mismatch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkVectorSQL = c.sql
			t.Cleanup(func() { checkVectorSQL = "" })
			s, err := Open(context.Background(), testDSN(t), Config{Clock: newClock(), Guard: testGuard(t),
				Tombstones: testTombstones(t), Schema: uniqueSchema(t), MaxConns: 2})
			if s != nil {
				s.Close()
				t.Fatal("Open returned a Store")
			}
			me := wantKind(t, err, memorykit.ErrIntegrity)
			if me.Reason != c.reason || memorykit.IsRecoverable(err) {
				t.Fatalf("Open: %v (reason %q); want %s, not recoverable", err, me.Reason, c.reason)
			}
		})
	}
	// The hook is off again: the same Open succeeds.
	s, err := Open(context.Background(), testDSN(t), Config{Clock: newClock(), Guard: testGuard(t),
		Tombstones: testTombstones(t), Schema: uniqueSchema(t), MaxConns: 2})
	if err != nil {
		t.Fatalf("Open with the real round trip: %v", err)
	}
	s.Close()
}
