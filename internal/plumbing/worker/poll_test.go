package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/worker"
	"github.com/goagents/memorykit/supervisor"
)

func TestPollWaitsByOutcome(t *testing.T) {
	clk := clock.NewMock()
	waits := make(chan supervisor.Wait, 1)
	recoverable := memorykit.Recoverable(errors.New("db down"))
	// The rounds' outcomes, in order; the loop ends on the fatal error.
	script := []struct {
		busy bool
		err  error
	}{
		{busy: true}, {}, {err: recoverable}, {err: recoverable}, {busy: true}, {}, {err: errors.New("fatal")},
	}
	p := worker.Poll{
		Clock: clk, Interval: 5 * time.Second,
		Backoff: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 3},
		OnWait:  func(w supervisor.Wait) { waits <- w }, Logger: zap.NewNop(), What: "lease",
	}
	ctx := context.Background()
	done := make(chan error, 1)
	rounds := 0
	go func() {
		done <- p.Run(ctx, ctx, func() (bool, error) {
			s := script[rounds]
			rounds++
			return s.busy, s.err
		})
	}()
	// Busy rounds do not wait; idle waits Interval; the n-th consecutive
	// recoverable failure waits Backoff.Delay(n).
	want := []supervisor.Wait{
		{Reason: supervisor.WaitIdle, Delay: 5 * time.Second},
		{Reason: supervisor.WaitStoreBackoff, Delay: time.Second},
		{Reason: supervisor.WaitStoreBackoff, Delay: 3 * time.Second},
		{Reason: supervisor.WaitIdle, Delay: 5 * time.Second},
	}
	for i, w := range want {
		got := <-waits
		if got != w {
			t.Fatalf("wait %d = %+v, want %+v", i, got, w)
		}
		clk.Add(got.Delay)
	}
	if err := <-done; err == nil || err.Error() != "fatal" {
		t.Fatalf("Run = %v, want the non-recoverable error", err)
	}
	if rounds != len(script) {
		t.Fatalf("%d rounds, want %d", rounds, len(script))
	}
}

func TestPollStopsWhenFetchEnds(t *testing.T) {
	clk := clock.NewMock()
	armed := make(chan supervisor.Wait, 1)
	fetch, cancel := context.WithCancel(context.Background())
	p := worker.Poll{Clock: clk, Interval: time.Hour, Backoff: memorykit.Backoff{Initial: time.Second, Max: time.Second, Multiplier: 1},
		OnWait: func(w supervisor.Wait) { armed <- w }, Logger: zap.NewNop(), What: "reap"}
	done := make(chan error, 1)
	go func() { done <- p.Run(fetch, context.Background(), func() (bool, error) { return false, nil }) }()
	<-armed
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after fetch ended = %v, want nil", err)
	}
}
