package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

// Gate holds work in flight: a fake Embedder or Extractor calls Pass at the
// top of each call. The first open calls go through; every later call is
// held until Release or the end of its context, so a test can drain or
// stop a runtime while batches are provably mid-work.
type Gate struct {
	open    int
	mu      sync.Mutex
	calls   int
	release chan struct{}
	once    sync.Once
	held    chan string
}

// NewGate returns a Gate that lets the first open calls through.
func NewGate(open int) *Gate {
	return &Gate{open: open, release: make(chan struct{}), held: make(chan string, 1000)}
}

// Pass counts a call by worker. Past the first open calls it reports the
// call as held and waits for Release (nil) or the end of ctx (ctx.Err()).
func (g *Gate) Pass(ctx context.Context, worker string) error {
	g.mu.Lock()
	g.calls++
	hold := g.calls > g.open
	g.mu.Unlock()
	if !hold {
		return nil
	}
	g.held <- worker
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release lets every held call, and every later one, through. It is
// idempotent.
func (g *Gate) Release() { g.once.Do(func() { close(g.release) }) }

// WaitHeld waits until each named worker has had a call held, or, with no
// names, until any call has been held. It fails the test after
// AwaitLimit.
func (g *Gate) WaitHeld(t testing.TB, workers ...string) {
	t.Helper()
	g.waitHeldWithin(t, AwaitLimit, workers...)
}

func (g *Gate) waitHeldWithin(t testing.TB, limit time.Duration, workers ...string) {
	t.Helper()
	want := make(map[string]bool)
	for _, w := range workers {
		want[w] = true
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for first := true; first || len(want) > 0; first = false {
		select {
		case w := <-g.held:
			delete(want, w)
		case <-timer.C:
			t.Fatalf("no call was held at the gate (still waiting for %v)", workers)
		}
	}
}

// DrainAsync starts sup.Drain(ctx) on a goroutine of its own, waits (see
// Await) until sink has seen the supervisor's lifecycle event announcing
// the drain, and returns the channel Drain's result will arrive on.
func DrainAsync(t testing.TB, ctx context.Context, sup *supervisor.Supervisor, sink *Sink) <-chan error {
	t.Helper()
	draining := sink.After(memorykit.EventLifecycle, 1)
	drained := make(chan error, 1)
	go func() { drained <- sup.Drain(ctx) }()
	Await(t, draining, "the draining event")
	return drained
}
