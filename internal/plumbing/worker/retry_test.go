package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/worker"
	"github.com/goagents/memorykit/supervisor"
)

// TestStoreRetryStopsBeforeExpiry: a recoverable failure is retried after
// Backoff.Delay(n) until the next wait would reach the lease's expiry; the
// last error comes back and every retry is logged with the caller's fields
// first.
func TestStoreRetryStopsBeforeExpiry(t *testing.T) {
	clk := clock.NewMock()
	core, logs := observer.New(zapcore.WarnLevel)
	waits := make(chan supervisor.Wait, 1)
	r := worker.StoreRetry{
		Clock: clk, Backoff: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
		OnWait: func(w supervisor.Wait) { waits <- w }, Logger: zap.New(core),
	}
	down := memorykit.Recoverable(errors.New("db down"))
	calls := 0
	done := make(chan error, 1)
	go func() {
		done <- r.Do(context.Background(), clk.Now().Add(2500*time.Millisecond), func(context.Context) error {
			calls++
			return down
		}, zap.String("job_id", "j1"))
	}()
	// Try 1 fails and waits 1s (ends at 1s, before 2.5s); try 2 fails and
	// would wait 2s (ending at 3s, past the expiry), so Do gives up.
	if w := <-waits; w != (supervisor.Wait{Reason: supervisor.WaitStoreRetry, Delay: time.Second}) {
		t.Fatalf("wait %+v", w)
	}
	clk.Add(time.Second)
	if err := <-done; !errors.Is(err, down) {
		t.Fatalf("Do = %v, want the store error", err)
	}
	if calls != 2 {
		t.Fatalf("%d calls, want 2", calls)
	}
	entries := logs.All()
	if len(entries) != 1 || len(entries[0].Context) == 0 || entries[0].Context[0].Key != "job_id" {
		t.Fatalf("logs %+v, want one retry entry led by job_id", entries)
	}
}

// TestStoreRetryReturnsFinalErrorsAtOnce: success and non-recoverable
// errors end Do without a wait.
func TestStoreRetryReturnsFinalErrorsAtOnce(t *testing.T) {
	r := worker.StoreRetry{
		Clock: clock.NewMock(), Backoff: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
		OnWait: func(w supervisor.Wait) { t.Errorf("unexpected wait %+v", w) }, Logger: zap.NewNop(),
	}
	expiry := time.Now().Add(time.Hour)
	fatal := errors.New("bad input")
	for _, want := range []error{nil, fatal} {
		calls := 0
		err := r.Do(context.Background(), expiry, func(context.Context) error { calls++; return want })
		if !errors.Is(err, want) || calls != 1 {
			t.Fatalf("Do = %v after %d calls, want %v after 1", err, calls, want)
		}
	}
}
