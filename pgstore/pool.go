package pgstore

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/goagents/memorykit"
)

// Pool sizing and cancellation.
//
// A pool that is too small queues every request behind a few connections,
// and a statement whose context ends must not cost a connection: by
// default pgx closes the socket of a query whose context is done, so a
// storm of recalls that miss their deadline turns into a storm of new
// PostgreSQL sessions (each one a forked backend and an authentication).
// Open therefore sizes the pool from the Host's concurrency and installs a
// context watcher that asks the server to cancel the running statement
// (a CancelRequest on a side channel) and keeps the connection, which is
// returned to the pool once the server has taken the cancellation
// (cancelHandler).

const (
	// minDefaultConns is the floor of DefaultMaxConns' request share.
	minDefaultConns = 4
	// maxConnsLimit bounds MaxConns and Workers: a larger pool is a
	// configuration mistake, not a sizing choice.
	maxConnsLimit = 10000
	// DefaultCancelGrace is how long a statement whose context ended may
	// keep running after the cancel request is sent, before the driver
	// gives up on the server's answer and closes the connection.
	DefaultCancelGrace = 2 * time.Second
)

// Session timeouts. Open's pool sets both on every connection it opens
// (as startup parameters, so they hold before the first statement runs).
const (
	// DefaultLockTimeout is the lock_timeout Config.LockTimeout zero
	// stands for: long enough for any of pgstore's own transactions to
	// finish under load, short enough that a frozen one fails the
	// statements queued behind it in seconds rather than never.
	DefaultLockTimeout = 10 * time.Second
	// DefaultIdleInTransactionTimeout is the
	// idle_in_transaction_session_timeout Config.IdleInTransactionTimeout
	// zero stands for. pgstore never leaves a transaction idle on
	// purpose, so a session idle this long inside one is stuck (a paused
	// or partitioned process) and its locks are better released.
	DefaultIdleInTransactionTimeout = time.Minute
	// MaxSessionTimeout bounds both timeouts: PostgreSQL keeps them as
	// 32-bit milliseconds.
	MaxSessionTimeout = (1<<31 - 1) * time.Millisecond
)

// checkSessionTimeout checks one of the session timeouts of Config.
func checkSessionTimeout(op, field string, d time.Duration) error {
	switch {
	case d < 0:
		return memorykit.ConfigError(op, field, "negative")
	case d > 0 && d < time.Millisecond:
		// PostgreSQL would round it to zero: no timeout at all.
		return memorykit.ConfigError(op, field, "below_millisecond")
	case d > MaxSessionTimeout:
		return memorykit.ConfigError(op, field, "too_large")
	}
	return nil
}

// lockTimeout is the effective Config.LockTimeout.
func (c Config) lockTimeout() time.Duration {
	if c.LockTimeout > 0 {
		return c.LockTimeout
	}
	return DefaultLockTimeout
}

// idleInTransactionTimeout is the effective Config.IdleInTransactionTimeout.
func (c Config) idleInTransactionTimeout() time.Duration {
	if c.IdleInTransactionTimeout > 0 {
		return c.IdleInTransactionTimeout
	}
	return DefaultIdleInTransactionTimeout
}

// setSessionTimeouts makes every connection opened with cc start with the
// given lock_timeout and idle_in_transaction_session_timeout.
func setSessionTimeouts(cc *pgx.ConnConfig, lock, idle time.Duration) {
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["lock_timeout"] = strconv.FormatInt(lock.Milliseconds(), 10) + "ms"
	cc.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(idle.Milliseconds(), 10) + "ms"
}

// DefaultMaxConns is the pool size Open uses when Config.MaxConns is zero:
// max(4, 2×GOMAXPROCS) connections for request handlers (recall, reads,
// writes) plus one for each of the workers that share the store (embedding
// and extraction workers each hold at most one connection at a time).
func DefaultMaxConns(workers int) int32 {
	n := max(minDefaultConns, 2*runtime.GOMAXPROCS(0)) + max(workers, 0)
	return int32(min(n, maxConnsLimit))
}

// poolSize is the size Open gives its pool.
func (c Config) poolSize() int32 {
	if c.MaxConns > 0 {
		return c.MaxConns
	}
	return DefaultMaxConns(c.Workers)
}

// cancelGrace is the effective Config.CancelGrace.
func (c Config) cancelGrace() time.Duration {
	if c.CancelGrace > 0 {
		return c.CancelGrace
	}
	return DefaultCancelGrace
}

// keepOnCancel makes every connection of pcfg answer a done context with a
// server-side cancel request instead of closing the socket (cancelHandler).
// grace bounds how long the driver waits for the server after that; past
// it the connection is closed as before. A connection whose cancel
// request the server did not confirm is closed when the pool would hand
// it out next, instead of being reused.
func keepOnCancel(pcfg *pgxpool.Config, grace time.Duration) {
	pcfg.ConnConfig.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &cancelHandler{conn: pc, grace: grace}
	}
	prev := pcfg.PrepareConn
	pcfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		if _, stray := c.PgConn().CustomData()[strayCancelKey]; stray {
			return false, nil
		}
		if prev != nil {
			return prev(ctx, c)
		}
		return true, nil
	}
}

// strayCancelKey marks, in a connection's CustomData, a cancel request
// that may still reach the server (see cancelHandler).
const strayCancelKey = "pgstore.stray_cancel"

// sendCancel sends pc's cancel request and returns once the server has
// taken it (closed the request's connection). Tests replace it to hold a
// request back, as a loaded server does.
var sendCancel = func(ctx context.Context, pc *pgconn.PgConn) error { return pc.CancelRequest(ctx) }

// cancelHandler is the context watcher of keepOnCancel's connections.
// When a statement's context ends it sends the server a cancel request
// and gives the statement grace to end before the socket's deadline
// closes the connection.
//
// A cancel request names a server process, not a statement: the server
// takes it on a connection of its own and then signals the process, which
// cancels whatever statement it is running at that moment. When the
// statement ends by itself while the request is on its way (its work was
// done just as the context ended), a request the driver abandoned could
// still reach the process once the connection is back in the pool and
// cancel the next caller's statement with a query_canceled error that has
// nothing to do with that caller. So the handler does not abandon the
// request: the statement's return waits until the server has taken it
// (by then the process has been signalled, and a signal that finds it
// idle is ignored), within the grace; a request the server did not
// confirm in time marks the connection, which keepOnCancel's pool then
// closes instead of reusing.
type cancelHandler struct {
	conn  *pgconn.PgConn
	grace time.Duration
	// done is closed once the cancel request was taken or given up;
	// taken reports which.
	done  chan struct{}
	taken bool
}

// HandleCancel sends the cancel request on a goroutine and arms the
// socket's deadline.
func (h *cancelHandler) HandleCancel(context.Context) {
	// A socket deadline is wall-clock time by nature: it bounds a wait
	// on the network, not a lease or a retry.
	deadline := time.Now().Add(h.grace)
	_ = h.conn.Conn().SetDeadline(deadline)
	done := make(chan struct{})
	h.done, h.taken = done, false
	go func() {
		defer close(done)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		h.taken = sendCancel(ctx, h.conn) == nil
	}()
}

// HandleUnwatchAfterCancel waits for the cancel request, clears the
// deadline, and marks the connection when the request was not taken.
func (h *cancelHandler) HandleUnwatchAfterCancel() {
	<-h.done
	_ = h.conn.Conn().SetDeadline(time.Time{})
	if !h.taken {
		h.conn.CustomData()[strayCancelKey] = true
	}
}

// ctxDone is a driver error that happened because the caller's context
// ended (typically the server's query_canceled answer to the cancel
// request). It unwraps to both, so errors.Is finds the context error and
// mapErr classifies it as context_done.
type ctxDone struct{ ctx, cause error }

func (e ctxDone) Error() string   { return "statement cancelled: " + e.ctx.Error() }
func (e ctxDone) Unwrap() []error { return []error{e.ctx, e.cause} }

// withCtx attributes err to ctx when ctx has ended, so a cancelled
// statement reads as the deadline it is and not as a server failure.
func withCtx(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	cerr := ctx.Err()
	if cerr == nil || errors.Is(err, cerr) {
		return err
	}
	return ctxDone{ctx: cerr, cause: err}
}

// PoolStats is a snapshot of the Store's connection pool, for metrics and
// load tests.
type PoolStats struct {
	// MaxConns is the pool's size.
	MaxConns int32
	// TotalConns is the number of open connections.
	TotalConns int32
	// AcquiredConns is the number of connections in use.
	AcquiredConns int32
	// NewConns counts the connections the pool has opened since it was
	// created: a count that keeps growing under steady load means
	// connections are being thrown away.
	NewConns int64
	// EmptyAcquires counts the acquires that had to wait for a
	// connection.
	EmptyAcquires int64
}

// PoolStats reports the pool's current state.
func (s *Store) PoolStats() PoolStats {
	if s.conns == nil {
		return PoolStats{}
	}
	st := s.conns.Stat()
	return PoolStats{
		MaxConns: st.MaxConns(), TotalConns: st.TotalConns(), AcquiredConns: st.AcquiredConns(),
		NewConns: st.NewConnsCount(), EmptyAcquires: st.EmptyAcquireCount(),
	}
}
