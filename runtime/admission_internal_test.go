package runtime

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
)

// TestAdmissionHandsASlotToTheOldestWaiter: a released slot goes to the
// oldest waiter at once, in the same step: the class shows it running and
// no longer queued before that waiter has been scheduled, so a call that
// arrives right then can take the freed queue place instead of finding
// the queue full of callers that already hold slots.
func TestAdmissionHandsASlotToTheOldestWaiter(t *testing.T) {
	clk := clock.NewMock()
	c := newClass("reads", Admission{MaxQueue: 2, MaxWait: time.Second}, 1, clk)
	ctx := context.Background()
	if err := c.acquire(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	waiter := func(name string) {
		if err := c.acquire(ctx, "test"); err != nil {
			got <- name + ": " + err.Error()
			return
		}
		got <- name
	}
	go waiter("first")
	waitQueued(t, c, 1)
	go waiter("second")
	waitQueued(t, c, 2)

	c.release()
	if l := c.load(); l.running != 1 || l.queued != 1 {
		t.Fatalf("right after release: %+v", l)
	}
	if name := <-got; name != "first" {
		t.Fatalf("slot went to %s", name)
	}
	// The freed queue place is there for a newcomer.
	go waiter("third")
	waitQueued(t, c, 2)
	for _, want := range []string{"second", "third"} {
		c.release()
		if name := <-got; name != want {
			t.Fatalf("slot went to %s, want %s", name, want)
		}
	}
	c.release()
	if l := c.load(); l.running != 0 || l.queued != 0 {
		t.Fatalf("at rest: %+v", l)
	}
}

// TestAdmissionSlotGivenWhileGivingUp: a waiter whose wait ends in the
// same instant that a slot is handed to it passes the slot on rather than
// leaking it.
func TestAdmissionSlotGivenWhileGivingUp(t *testing.T) {
	clk := clock.NewMock()
	c := newClass("reads", Admission{MaxQueue: 1, MaxWait: time.Second}, 1, clk)
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.acquire(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.acquire(ctx, "test") }()
	waitQueued(t, c, 1)
	c.release() // hands the slot over
	cancel()
	err := <-done
	if err != nil && !errors.Is(err, memorykit.ErrUnavailable) {
		t.Fatal(err)
	}
	if err == nil {
		c.release()
	}
	if l := c.load(); l.running != 0 || l.queued != 0 {
		t.Fatalf("slot leaked: %+v", l)
	}
}

func waitQueued(t *testing.T, c *class, n int) {
	t.Helper()
	for range 1_000_000 {
		if c.load().queued == n {
			return
		}
		goruntime.Gosched()
	}
	t.Fatalf("never saw %d queued: %+v", n, c.load())
}
