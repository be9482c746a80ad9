package supervisor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

// printEvents prints each event's kind, actor and reason code.
type printEvents struct{}

func (printEvents) Emit(e memorykit.Event) {
	fmt.Println("event:", e.Kind, e.Actor, e.Reason)
}

// reaper is a stand-in actor. A real one would claim expired leases while
// fetchCtx lives and finish each batch under workCtx.
type reaper struct{ jobs chan string }

func (reaper) Name() string { return "reaper" }

func (r reaper) Run(fetchCtx, workCtx context.Context) error {
	for {
		select {
		case <-fetchCtx.Done():
			return nil // draining or stopping: claim nothing more
		case job := <-r.jobs:
			if err := workCtx.Err(); err != nil {
				return nil // stopping: a real actor would hand the lease back
			}
			fmt.Println("reaped", job)
		}
	}
}

// Example shows a graceful shutdown: Start the actors, Drain them with a
// deadline (no new work, in-flight work finishes), then Stop.
func Example() {
	sup, err := supervisor.New(supervisor.Config{
		Clock:  clock.New(),
		Logger: zap.NewNop(),
		Events: printEvents{},
		Backoff: memorykit.Backoff{
			Initial:    time.Second,
			Max:        time.Minute,
			Multiplier: 2,
		},
		MaxRestarts: 5,
	}, reaper{jobs: make(chan string)})
	if err != nil {
		fmt.Println("config:", err)
		return
	}

	ctx := context.Background()
	if err := sup.Start(ctx); err != nil {
		fmt.Println("start:", err)
		return
	}
	fmt.Println("state:", sup.State())

	drainCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := sup.Drain(drainCtx); err != nil {
		fmt.Println("drain:", err) // in-flight work was cut short
	}
	fmt.Println("state:", sup.State())

	if err := sup.Stop(ctx); err != nil {
		fmt.Println("stop:", err)
	}
	fmt.Println("state:", sup.State())

	// Output:
	// event: lifecycle  started
	// state: running
	// event: lifecycle  draining
	// event: actor.stopped worker:reaper drained
	// event: lifecycle  drained
	// state: drained
	// event: lifecycle  stopping
	// event: lifecycle  stopped
	// state: stopped
}
