package clockctx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit/internal/plumbing/clockctx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWithTimeoutEndsOnTheInjectedClock(t *testing.T) {
	clk := clock.NewMock()
	ctx, cancel := clockctx.WithTimeout(context.Background(), clk, time.Second)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("a clock timeout must not surface as a context deadline")
	}
	clk.Add(999 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatal("ended early")
	}
	clk.Add(time.Millisecond)
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !clockctx.Expired(ctx) {
		t.Fatalf("Err = %v", ctx.Err())
	}
}

func TestWithTimeoutFollowsParentAndCancel(t *testing.T) {
	clk := clock.NewMock()
	parent, stop := context.WithCancel(context.Background())
	ctx, cancel := clockctx.WithTimeout(parent, clk, time.Hour)
	defer cancel()
	stop()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) || clockctx.Expired(ctx) {
		t.Fatalf("Err = %v", ctx.Err())
	}
	ctx2, cancel2 := clockctx.WithTimeout(context.Background(), clk, time.Hour)
	cancel2()
	if !errors.Is(ctx2.Err(), context.Canceled) {
		t.Fatalf("Err after cancel = %v", ctx2.Err())
	}
}

func TestDetachedIgnoresParentCancellation(t *testing.T) {
	clk := clock.NewMock()
	type key struct{}
	parent, stop := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	stop()
	ctx, cancel := clockctx.Detached(parent, clk, time.Second)
	defer cancel()
	if ctx.Err() != nil || ctx.Value(key{}) != "v" {
		t.Fatal("detached context must keep values and ignore the parent's end")
	}
	clk.Add(time.Second)
	<-ctx.Done()
	if !clockctx.Expired(ctx) {
		t.Fatal("detached context must still time out")
	}
}

func TestSleep(t *testing.T) {
	clk := clock.NewMock()
	armed := make(chan struct{})
	done := make(chan bool)
	go func() { done <- clockctx.Sleep(context.Background(), clk, time.Minute, func() { close(armed) }) }()
	<-armed
	clk.Add(time.Minute)
	if !<-done {
		t.Fatal("Sleep should report a full wait")
	}
	ctx, cancel := context.WithCancel(context.Background())
	armed2 := make(chan struct{})
	go func() { done <- clockctx.Sleep(ctx, clk, time.Minute, func() { close(armed2) }) }()
	<-armed2
	cancel()
	if <-done {
		t.Fatal("Sleep should report the context ending")
	}
}
