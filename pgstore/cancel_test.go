package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// lateCancel runs a statement on a one-connection Store whose context
// ends while the statement waits on a lock, and has send deliver the
// cancel request in place of the driver, after the statement's work is
// done: send first lets the statement take the lock and finish (it
// waits until the statement's transaction has ended), so the request
// can only find the server process idle, or running whatever statement
// comes next. It returns the Store, the process the statement ran on and
// the statement's error.
func lateCancel(t *testing.T, send func(ctx context.Context, pc *pgconn.PgConn) error) (*Store, uint32, error) {
	t.Helper()
	s, err := Open(context.Background(), testDSN(t), Config{Clock: newClock(), Guard: testGuard(t), Tombstones: testTombstones(t),
		Schema: uniqueSchema(t), MaxConns: 1})
	if err != nil {
		unusable(t, "open pgstore", err)
	}
	t.Cleanup(s.Close)
	bg := context.Background()
	holder, watcher := adminConn(t), adminConn(t)
	const key = 7301
	if _, err := holder.Exec(bg, "SELECT pg_advisory_lock($1)", key); err != nil {
		t.Fatal(err)
	}
	var pid uint32
	if err := s.pool.QueryRow(bg, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	prev := sendCancel
	t.Cleanup(func() { sendCancel = prev })
	sendCancel = func(ctx context.Context, pc *pgconn.PgConn) error {
		if _, err := holder.Exec(bg, "SELECT pg_advisory_unlock($1)", key); err != nil {
			return err
		}
		// Returns once the statement's transaction, which held the
		// lock, has ended.
		if _, err := holder.Exec(bg, "SELECT pg_advisory_lock($1)", key); err != nil {
			return err
		}
		return send(ctx, pc)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.pool.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", key)
		errc <- err
	}()
	// End the context once the statement waits on the lock.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		if err := watcher.QueryRow(bg, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		// Each check is a round trip to the server, which paces the
		// loop; nothing here waits on a timer.
		if time.Now().After(deadline) {
			t.Fatal("the statement never waited on the lock")
		}
	}
	cancel()
	return s, pid, <-errc
}

// TestPostgresLateCancelSparesTheNextStatement: a statement that ends by
// itself while its cancel request is still on the way returns only once
// the server has taken the request, so the request cannot cancel the
// next statement on the connection, which the pool keeps.
func TestPostgresLateCancelSparesTheNextStatement(t *testing.T) {
	next := make(chan struct{})
	taken := make(chan struct{})
	s, pid, err := lateCancel(t, func(ctx context.Context, pc *pgconn.PgConn) error {
		if ctx.Err() != nil {
			// The driver gave the request up (ctx ends only past the
			// grace otherwise): deliver it as the server would, late,
			// while the next statement runs.
			<-next
		}
		defer close(taken)
		return pc.CancelRequest(context.Background())
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("statement: %v", err)
	}
	select {
	case <-taken:
	default:
		close(next)
		t.Fatal("the statement returned before the server took its cancel request")
	}
	var again uint32
	if err := s.pool.QueryRow(context.Background(), "SELECT pg_backend_pid() FROM pg_sleep(0.05)").Scan(&again); err != nil {
		t.Fatalf("next statement: %v", err)
	}
	if again != pid {
		t.Fatalf("the next statement ran on process %d, not on the kept connection's %d", again, pid)
	}
}

// TestPostgresUnconfirmedCancelClosesTheConnection: when the server does
// not confirm a cancel request, the connection is not reused (the request
// may still arrive); the next statement runs on a new one.
func TestPostgresUnconfirmedCancelClosesTheConnection(t *testing.T) {
	s, pid, err := lateCancel(t, func(context.Context, *pgconn.PgConn) error {
		return errors.New("no answer to the cancel request")
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("statement: %v", err)
	}
	before := s.PoolStats().NewConns
	var again uint32
	if err := s.pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&again); err != nil {
		t.Fatalf("next statement: %v", err)
	}
	if again == pid {
		t.Fatalf("the connection of an unconfirmed cancel request (process %d) was reused", pid)
	}
	if n := s.PoolStats().NewConns - before; n != 1 {
		t.Fatalf("%d new connections, want 1", n)
	}
}

// The same on the Citus head node.
func TestCitusLateCancelSparesTheNextStatement(t *testing.T) {
	TestPostgresLateCancelSparesTheNextStatement(t)
}
func TestCitusUnconfirmedCancelClosesTheConnection(t *testing.T) {
	TestPostgresUnconfirmedCancelClosesTheConnection(t)
}
