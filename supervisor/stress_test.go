package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

// queue is shared work: items are claimed from a channel and each claimed
// item is either completed or handed back.
type queue struct {
	items     chan int
	completed atomic.Int64
	returned  atomic.Int64
}

// queueWorker claims items while fetch lives and finishes each under work.
type queueWorker struct {
	name string
	q    *queue
}

func (w queueWorker) Name() string { return w.name }

func (w queueWorker) Run(fetch, work context.Context) error {
	for {
		select {
		case <-fetch.Done():
			return nil
		case it := <-w.q.items:
			if work.Err() != nil {
				w.q.items <- it // hand the lease back
				w.q.returned.Add(1)
				return nil
			}
			w.q.completed.Add(1)
		}
	}
}

// crasher fails at once, alternating errors and panics.
type crasher struct {
	name string
	n    *atomic.Int64
}

func (c crasher) Name() string { return c.name }

func (c crasher) Run(_, _ context.Context) error {
	if c.n.Add(1)%2 == 0 {
		panic("boom")
	}
	return errors.New("boom")
}

func TestStartStopStress(t *testing.T) {
	t.Parallel()
	const cycles = 200
	const items = 64
	rng := rand.New(rand.NewPCG(1, 2))
	var crashes atomic.Int64
	for i := 0; i < cycles; i++ {
		q := &queue{items: make(chan int, items)}
		for j := 0; j < items; j++ {
			q.items <- j
		}
		clk := clock.NewMock()
		cfg := supervisor.Config{
			Clock:   clk,
			Logger:  zap.NewNop(),
			Events:  memorykit.DiscardEvents{},
			Backoff: memorykit.Backoff{Initial: time.Millisecond, Max: time.Second, Multiplier: 2}, MaxRestarts: 1000,
		}
		actors := []supervisor.Actor{
			queueWorker{"w1", q}, queueWorker{"w2", q}, queueWorker{"w3", q},
			crasher{"crash", &crashes},
		}
		sup, err := supervisor.New(cfg, actors...)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := sup.Start(ctx); err != nil {
			t.Fatalf("cycle %d: Start: %v", i, err)
		}
		// Let the crasher go around its backoff a few times.
		for k := rng.IntN(4); k > 0; k-- {
			clk.Add(time.Second)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		switch mode := rng.IntN(4); mode {
		case 0: // Drain, then Stop
			errs <- sup.Drain(ctx)
			errs <- sup.Stop(ctx)
		case 1: // Stop only, twice
			errs <- sup.Stop(ctx)
			errs <- sup.Stop(ctx)
		default: // racing Drains and Stops
			for k := 0; k < 4; k++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if k%2 == 0 {
						err := sup.Drain(ctx)
						if errors.Is(err, memorykit.ErrStopped) {
							err = nil // the Stop won the race: a typed refusal, as documented
						}
						errs <- err
						return
					}
					errs <- sup.Stop(ctx)
				}()
			}
			wg.Wait()
		}
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("cycle %d: %v", i, err)
			}
		}
		if err := sup.Stop(ctx); err != nil {
			t.Fatalf("cycle %d: final Stop: %v", i, err)
		}
		if s := sup.State(); s != supervisor.StateStopped {
			t.Fatalf("cycle %d: state %v", i, s)
		}
		if got := q.completed.Load() + int64(len(q.items)); got != items {
			t.Fatalf("cycle %d: %d completed + %d queued, want %d: work lost or duplicated",
				i, q.completed.Load(), len(q.items), items)
		}
	}
	if testing.Verbose() {
		fmt.Printf("stress: %d cycles, %d crashes\n", cycles, crashes.Load())
	}
}
