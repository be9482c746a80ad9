package pgstore

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/clockctx"
)

// connectBackoff sets Open's waits between attempts to connect while the
// server cannot take connections yet.
var connectBackoff = memorykit.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2}

// onConnectRetry, when set by a test, is called once each retry wait is
// armed on the clock.
var onConnectRetry func(attempt int, d time.Duration)

// connectRetry opens one connection, trying again with backoff on clk
// after each recoverable failure (connection refused or reset, SQLSTATE
// 57P03 cannot_connect_now while the server starts or restarts, too many
// connections) until ctx ends. A failure retrying cannot fix (bad
// credentials, unknown database) is returned at once; when ctx ends, the
// last failure is returned.
func connectRetry(ctx context.Context, op string, clk clock.Clock, cc *pgx.ConnConfig) (*pgx.Conn, error) {
	for attempt := 1; ; attempt++ {
		conn, err := pgx.ConnectConfig(ctx, cc.Copy())
		if err == nil {
			return conn, nil
		}
		me := connectErr(op, err)
		if !memorykit.IsRecoverable(me) || ctx.Err() != nil {
			return nil, me
		}
		d := connectBackoff.Delay(attempt)
		var armed func()
		if hook := onConnectRetry; hook != nil {
			armed = func() { hook(attempt, d) }
		}
		if !clockctx.Sleep(ctx, clk, d, armed) {
			return nil, me
		}
	}
}
