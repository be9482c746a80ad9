package pgstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestPostgresDeadlineStormKeepsConnections sends many recalls whose
// deadline passes while their statement waits on the server. Each one
// must come back as the caller's deadline (a recoverable context_done),
// and the pool must cancel the statements on the server instead of
// closing the connections: the pool opens at most a couple of new
// sessions for the whole storm.
func TestPostgresDeadlineStormKeepsConnections(t *testing.T) {
	const conns = 4
	schema := uniqueSchema(t)
	clk := newClock()
	s, err := Open(context.Background(), testDSN(t), Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema, MaxConns: conns})
	if err != nil {
		unusable(t, "open pgstore", err)
	}
	defer s.Close()
	scope, err := memorykit.ProjectScope("tenant-a", "project-1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "deploy region",
		Content: "the api runs in eu-west-1", Status: memorykit.StatusActive, Actor: author, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	query := storekit.RecallQuery{Scope: scope, Terms: []string{"region"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5}

	// Open every connection of the pool before counting.
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.pool.Exec(ctx, "SELECT pg_sleep(0.05)"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	before := s.PoolStats().NewConns

	// Make every recall statement wait on the server: an exclusive lock
	// on the records table (the SQL path) and on the Scope versions (the
	// recall cache, which the Create above warmed), held until the storm
	// is over.
	s.cache.settle()
	admin := adminConn(t)
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+quoteIdent(schema)+".records, "+quoteIdent(schema)+".scope_versions IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}

	const clients, rounds = conns, 8
	var (
		mu        sync.Mutex
		bad       []error
		cancelled int
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
				_, err := s.Recall(rctx, query)
				// A slow statement of the test's own, cancelled the same way.
				sctx, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
				_, serr := s.pool.Exec(sctx, "SELECT pg_sleep(5)")
				cancel()
				cancel2()
				mu.Lock()
				if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, memorykit.ErrUnavailable) ||
					memorykit.ReasonCode(err) != "context_done" {
					bad = append(bad, err)
				}
				if serr == nil {
					bad = append(bad, errors.New("pg_sleep finished inside its deadline"))
				}
				cancelled++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, err := range bad {
		t.Errorf("storm recall: want the caller's deadline, got %v", err)
	}

	// The store still answers, on the connections it kept.
	res, err := s.Recall(ctx, query)
	if err != nil || len(res.FullText) == 0 {
		t.Fatalf("recall after the storm: %+v %v", res, err)
	}
	opened := s.PoolStats().NewConns - before
	t.Logf("%d cancelled statements, %d new connections", 2*cancelled, opened)
	if opened > 2 {
		t.Fatalf("the deadline storm opened %d new PostgreSQL sessions (want at most 2)", opened)
	}
}

func TestPoolSizeConfig(t *testing.T) {
	base := DefaultMaxConns(0)
	if base < minDefaultConns {
		t.Fatalf("default pool %d below the floor", base)
	}
	if got := DefaultMaxConns(3); got != base+3 {
		t.Fatalf("workers add a connection each: %d, want %d", got, base+3)
	}
	if got := (Config{Workers: 2}).poolSize(); got != base+2 {
		t.Fatalf("default size %d", got)
	}
	if got := (Config{MaxConns: 7, Workers: 2}).poolSize(); got != 7 {
		t.Fatalf("explicit size %d", got)
	}
	clk := newClock()
	g := testGuard(t)
	for _, c := range []struct {
		cfg    Config
		reason string
	}{
		{Config{MaxConns: maxConnsLimit + 1}, "max_conns"},
		{Config{Workers: -1}, "workers"},
		{Config{Workers: maxConnsLimit + 1}, "workers"},
		{Config{CancelGrace: -time.Second}, "cancel_grace"},
		{Config{LockTimeout: -time.Second}, "lock_timeout"},
		{Config{LockTimeout: time.Microsecond}, "lock_timeout"},
		{Config{LockTimeout: MaxSessionTimeout + time.Millisecond}, "lock_timeout"},
		{Config{IdleInTransactionTimeout: -time.Second}, "idle_in_transaction_timeout"},
		{Config{IdleInTransactionTimeout: 999 * time.Microsecond}, "idle_in_transaction_timeout"},
		{Config{IdleInTransactionTimeout: MaxSessionTimeout + time.Millisecond}, "idle_in_transaction_timeout"},
	} {
		c.cfg.Clock, c.cfg.Guard, c.cfg.Tombstones = clk, g, testTombstones(t)
		_, err := Open(context.Background(), "postgres://unused", c.cfg)
		if me := wantKind(t, err, memorykit.ErrInvalidConfig); me.Field != c.reason {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}
