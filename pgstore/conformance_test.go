package pgstore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestPostgresConformance runs the shared conformance suites on pgstore.
// Most cases run in a transaction on a migrated schema, rolled back when
// the case ends (recall in SQL there: the recall cache needs a pool of its
// own, see newTxStore); the cases that need sessions of their own
// (concurrency, mid-statement cancellation, purge) get a schema and pool
// each. TestPostgresCacheRecallConformance runs the recall suites again
// through the recall cache, the default.
func TestPostgresConformance(t *testing.T) {
	storetest.RunAll(t, pgHarness(t))
}

// TestPostgresCacheRecallConformance runs the suites that recall on
// pgstore through the recall cache (the default), each case on a schema
// and pool of its own: TestPostgresConformance's transactions rank in SQL,
// so both paths meet the same contract.
func TestPostgresCacheRecallConformance(t *testing.T) {
	h := pgHarness(t)
	h.New = pgNew(t, nil)
	h.NewSession = nil
	t.Run("Recall", func(t *testing.T) { storetest.RunRecallConformance(t, h) })
	t.Run("FullText", func(t *testing.T) { storetest.RunFullTextRecallConformance(t, h) })
	t.Run("Erasure", func(t *testing.T) { storetest.RunErasureConformance(t, h) })
}

// TestPostgresReasonsGoThroughContentPolicy: every stored reason passes the
// Host's ContentValidator and Limits.MaxReasonBytes (issue 10, hole 8).
func TestPostgresReasonsGoThroughContentPolicy(t *testing.T) {
	storetest.RunReasonPolicyConformance(t, pgHarness(t))
}

// pgHarness serves New and NewSession from one txSchemas of t.
func pgHarness(t *testing.T) storetest.Harness { return pgHarnessWith(t, false) }

// pgHarnessWith is pgHarness; with populated, every schema holds other
// tenants' rows written before it was distributed (Citus only, see
// populateOthers).
func pgHarnessWith(t *testing.T, populated bool) storetest.Harness {
	dsn := testDSN(t)
	ts := newTxSchemas(t, dsn, populated)
	return storetest.Harness{
		Populated: populated,
		New: func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) storekit.Store {
			return ts.store(t, Config{Clock: clk, Guard: guard, Tombstones: storetest.NewTombstones(t)})
		},
		NewSession: func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) storekit.Store {
			return ts.session(t, Config{Clock: clk, Guard: guard, Tombstones: storetest.NewTombstones(t), MaxConns: 6})
		},
		Dump: func(t *testing.T, s storekit.Store) string {
			t.Helper()
			d, err := s.(*Store).Dump(context.Background())
			if err != nil {
				t.Fatalf("dump: %v", err)
			}
			return d
		},
	}
}

// txSchemas hands out Stores on migrated schemas no other running case
// uses. A schema is migrated once and reused case after case, so a case
// costs a BEGIN and a ROLLBACK instead of a schema, a pool and every
// migration: store runs the case in one transaction, rolled back when the
// case ends. A case that needs sessions of its own (session) gets a Store
// with its own pool on such a schema instead, and the schema is emptied
// (TRUNCATE) before the next case takes it. Each case has a schema to itself (and not just a
// transaction on a shared one) because pgstore serialises writers of one
// Scope and key with advisory locks and per-Scope version rows: parallel
// cases on one schema, all writing the same Scope, would wait on each
// other's uncommitted transactions. Sequences (lease tokens), which a
// rollback does not undo, are reset when a case begins.
type txSchemas struct {
	dsn  string
	pool *pgxpool.Pool
	mu   sync.Mutex
	free []string
	// all are the schemas take created, dropped at the end.
	all []string
	// made counts the schemas created, cases the stores handed out.
	made, cases atomic.Int64
	// populated: every schema holds other tenants' rows (populateOthers),
	// checked when each case ends; a schema a session case used is not
	// handed out again, since emptying it would drop those rows.
	populated bool
}

// newTxSchemas opens the shared pool; t's cleanup closes it and drops
// every schema, after all of t's subtests.
func newTxSchemas(t *testing.T, dsn string, populated bool) *txSchemas {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse the test DSN: %v", err)
	}
	// The first Open below installs the extension the pool's
	// AfterConnect needs.
	first := uniqueSchema(t)
	if populated {
		populateOnMigrate.Store(first, true)
	}
	s, err := Open(context.Background(), dsn, Config{Clock: clock.NewMock(), Guard: testGuard(t), Tombstones: testTombstones(t), Schema: first, MaxConns: 1})
	if err != nil {
		unusable(t, "open pgstore", err)
	}
	s.Close()
	cfg.MaxConns = 16
	keepOnCancel(cfg, DefaultCancelGrace)
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error { return pgxvec.RegisterTypes(ctx, c) }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open the shared pool: %v", err)
	}
	ts := &txSchemas{dsn: dsn, pool: pool, free: []string{first}, populated: populated}
	ts.made.Add(1)
	t.Cleanup(func() {
		for _, name := range ts.all {
			if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+quoteIdent(name)+" CASCADE"); err != nil {
				t.Errorf("drop schema %s: %v", name, err)
			}
		}
		pool.Close()
		t.Logf("%d cases ran in rolled-back transactions on %d schemas", ts.cases.Load(), ts.made.Load())
	})
	return ts
}

// take returns a migrated schema no running case uses, creating one
// when every schema is in use.
func (ts *txSchemas) take(t *testing.T) string {
	t.Helper()
	ts.mu.Lock()
	if n := len(ts.free); n > 0 {
		name := ts.free[n-1]
		ts.free = ts.free[:n-1]
		ts.mu.Unlock()
		return name
	}
	name := pgtest.Name(pgtest.SchemaPrefix)
	ts.all = append(ts.all, name)
	ts.mu.Unlock()
	if ts.populated {
		populateOnMigrate.Store(name, true)
	}
	// Migrate through the shared pool; the schema is dropped when the
	// whole test ends (see newTxSchemas).
	s, err := New(context.Background(), ts.pool, Config{Clock: clock.NewMock(), Guard: testGuard(t), Tombstones: testTombstones(t), Schema: name})
	if err != nil {
		unusable(t, "migrate a schema", err)
	}
	s.Close()
	ts.made.Add(1)
	return name
}

// store returns a Store on one transaction on a schema of its own; the
// transaction is rolled back, and the schema handed to the next case,
// when t ends.
func (ts *txSchemas) store(t *testing.T, cfg Config) *Store {
	t.Helper()
	ctx := context.Background()
	schema := ts.take(t)
	tx, err := ts.pool.Begin(ctx)
	if err != nil {
		unusable(t, "begin the case's transaction", err)
	}
	t.Cleanup(func() {
		if ts.populated {
			if err := checkOthers(ctx, tx, schema); err != nil {
				t.Errorf("after the case: %v", err)
			}
		}
		if err := tx.Rollback(ctx); err != nil {
			// The schema's state is unknown: leave it out of the free
			// list (it is still dropped at the end).
			t.Errorf("roll back the case's transaction: %v", err)
			return
		}
		ts.mu.Lock()
		ts.free = append(ts.free, schema)
		ts.mu.Unlock()
	})
	// Sequences ignore rollbacks: start them again, so the case sees the
	// values a fresh schema would give (a twin store's dump compares
	// equal). The schema is this case's alone until it ends.
	if _, err := tx.Exec(ctx, `SELECT setval(format('%I.%I', schemaname, sequencename), start_value, false)
		FROM pg_sequences WHERE schemaname = $1`, schema); err != nil {
		t.Fatalf("reset the schema's sequences: %v", err)
	}
	cfg.Schema = schema
	s, err := newTxStore(ctx, tx, cfg)
	if err != nil {
		t.Fatalf("store on a transaction: %v", err)
	}
	ts.cases.Add(1)
	return s
}

// session returns a Store with a pool of its own on a schema of its own.
// When t ends the Store is closed, every table but schema_migrations is
// emptied and the sequences start again, and the schema goes to the next
// case.
func (ts *txSchemas) session(t *testing.T, cfg Config) *Store {
	t.Helper()
	ctx := context.Background()
	schema := ts.take(t)
	t.Cleanup(func() {
		// Runs after s.Close (cleanups run last in, first out).
		if ts.populated {
			if err := checkOthers(ctx, ts.pool, schema); err != nil {
				t.Errorf("after the case: %v", err)
			}
			return
		}
		if _, err := ts.pool.Exec(ctx, `DO $$ DECLARE tables text; BEGIN
			SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') INTO tables
			FROM pg_tables WHERE schemaname = '`+schema+`' AND tablename <> 'schema_migrations';
			EXECUTE 'TRUNCATE ' || tables;
			PERFORM setval(format('%I.%I', schemaname, sequencename), start_value, false)
			FROM pg_sequences WHERE schemaname = '`+schema+`';
			END $$`); err != nil {
			t.Errorf("empty schema %s: %v", schema, err)
			return
		}
		ts.mu.Lock()
		ts.free = append(ts.free, schema)
		ts.mu.Unlock()
	})
	cfg.Schema = schema
	s, err := Open(ctx, ts.dsn, cfg)
	if err != nil {
		unusable(t, "open pgstore", err)
	}
	t.Cleanup(s.Close)
	return s
}

// pgNew opens a Store on a schema of its own for every case, with the
// Config changed by edit when it is not nil.
func pgNew(t *testing.T, edit func(*Config)) func(*testing.T, clock.Clock, *memorykit.WriteGuard) storekit.Store {
	dsn := testDSN(t)
	return func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) storekit.Store {
		cfg := Config{Clock: clk, Guard: guard, Tombstones: storetest.NewTombstones(t), Schema: uniqueSchema(t), MaxConns: 6}
		if edit != nil {
			edit(&cfg)
		}
		s, err := Open(context.Background(), dsn, cfg)
		if err != nil {
			unusable(t, "open pgstore", err)
		}
		t.Cleanup(s.Close)
		return s
	}
}
