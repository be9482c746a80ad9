package runtime_test

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// stuckExtractor holds every Extract call until release is closed. With
// obeyCtx it also returns when its context ends (work that can be
// cancelled); without, it ignores cancellation (work that cannot).
type stuckExtractor struct {
	entered chan struct{} // one send per call
	release chan struct{}
	obeyCtx bool
	ctxs    chan context.Context
}

func newStuck(obeyCtx bool) *stuckExtractor {
	return &stuckExtractor{entered: make(chan struct{}, 8), release: make(chan struct{}), obeyCtx: obeyCtx, ctxs: make(chan context.Context, 8)}
}

func (e *stuckExtractor) Extract(ctx context.Context, _ memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	e.ctxs <- ctx
	e.entered <- struct{}{}
	if e.obeyCtx {
		select {
		case <-e.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		<-e.release
	}
	return nil, nil
}

// inFlight starts a Runtime around ext and leaves one extraction running.
func inFlight(t *testing.T, ext *stuckExtractor) (*bundle, context.Context) {
	t.Helper()
	cfg, b := config(t)
	cfg.Extractor = ext
	start(t, cfg, b)
	ctx := context.Background()
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1", Transcript: "a finished turn"}); r.Status != extractworker.EnqueueQueued {
		t.Fatalf("FinishTurn = %+v", r)
	}
	eventually(t, b.clk, time.Second, "extraction starts", func() bool { return len(ext.entered) > 0 })
	return b, ctx
}

// until yields until cond holds (another goroutine's state change), with a
// real-time guard against a hang.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen", what)
		}
		goruntime.Gosched()
	}
}

// within fails the test unless fn returns within a generous real-time
// guard; it only bounds a hang, it never waits for work.
func within(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s hung", what)
		return nil
	}
}

// TestStopWhileDrainWaits: a Drain blocked on in-flight work holds no
// lock, so Stop from another goroutine cancels that work and returns, and
// then the Drain returns too.
func TestStopWhileDrainWaits(t *testing.T) {
	ext := newStuck(true)
	b, ctx := inFlight(t, ext)
	drained := make(chan error, 1)
	go func() { drained <- b.rt.Drain(ctx) }()
	// Drain has closed intake before it blocks.
	until(t, "drain closes intake", func() bool { return b.rt.Health().State == "draining" })
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := within(t, "Stop during Drain", func() error { return b.rt.Stop(stopCtx) }); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := within(t, "Drain after Stop", func() error { return <-drained }); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

// TestDrainContextEndsWithoutCancellingWork: when Drain's context ends it
// returns that error at once, and the in-flight work goes on until Stop.
func TestDrainContextEndsWithoutCancellingWork(t *testing.T) {
	ext := newStuck(true)
	b, ctx := inFlight(t, ext)
	work := <-ext.ctxs
	drainCtx, cancel := context.WithCancel(ctx)
	cancel()
	err := within(t, "Drain with an ended context", func() error { return b.rt.Drain(drainCtx) })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, memorykit.ErrUnavailable) {
		t.Fatalf("Drain = %v, want context.Canceled as ErrUnavailable", err)
	}
	if work.Err() != nil {
		t.Fatal("Drain's ended context cancelled the in-flight work")
	}
	if err := within(t, "Stop", func() error { return b.rt.Stop(ctx) }); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if work.Err() == nil {
		t.Fatal("Stop did not cancel the in-flight work")
	}
}

// TestDrainWhileStopWaits: Stop waiting for work that ignores cancellation
// holds no lock either: a Drain from another goroutine answers at once
// (ErrStopped), and Stop returns within its own context.
func TestDrainWhileStopWaits(t *testing.T) {
	ext := newStuck(false)
	b, ctx := inFlight(t, ext)
	stopCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- b.rt.Stop(stopCtx) }()
	until(t, "stop closes intake", func() bool { return b.rt.Health().State == "stopped" })
	err := within(t, "Drain during Stop", func() error { return b.rt.Drain(ctx) })
	if !errors.Is(err, memorykit.ErrStopped) {
		t.Fatalf("Drain during Stop = %v, want ErrStopped", err)
	}
	cancel() // Stop's own context bounds its wait
	if err := within(t, "Stop", func() error { return <-stopped }); !errors.Is(err, memorykit.ErrUnavailable) {
		t.Fatalf("Stop with an ended context = %v, want ErrUnavailable", err)
	}
	close(ext.release)
	if err := within(t, "second Stop", func() error { return b.rt.Stop(ctx) }); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}
