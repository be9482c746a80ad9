package runtime

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit/internal/testsupport/testkit"

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
	if name := testkit.Recv(t, got, "got"); name != "first" {
		t.Fatalf("slot went to %s", name)
	}
	// The freed queue place is there for a newcomer.
	go waiter("third")
	waitQueued(t, c, 2)
	for _, want := range []string{"second", "third"} {
		c.release()
		if name := testkit.Recv(t, got, "got"); name != want {
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
	err := testkit.Recv(t, done, "done")
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

// lockProbeClock reports, each time a timer is armed, whether the class's
// lock was held at that moment.
type lockProbeClock struct {
	*clock.Mock
	c      *class
	locked chan bool
}

func (p *lockProbeClock) Timer(d time.Duration) *clock.Timer {
	held := !p.c.mu.TryLock()
	if !held {
		p.c.mu.Unlock()
	}
	p.locked <- held
	return p.Mock.Timer(d)
}

// TestAdmissionWaitArmedWhileQueued: a queued call's deadline is armed
// under the class's lock, in the same step that makes it visible as queued
// in Load. A test (or a Host's health check) that sees the call queued and
// then advances the clock therefore always ends the wait; with the timer
// armed after the lock, the clock could move first and the call would wait
// for a tick that never comes.
func TestAdmissionWaitArmedWhileQueued(t *testing.T) {
	mock := clock.NewMock()
	probe := &lockProbeClock{Mock: mock, locked: make(chan bool, 1)}
	c := newClass("reads", Admission{MaxQueue: 1, MaxWait: time.Second}, 1, probe)
	probe.c = c
	ctx := context.Background()
	if err := c.acquire(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.acquire(ctx, "test") }()
	if !testkit.Recv(t, probe.locked, "probe.locked") {
		t.Fatal("the queued call's timer was armed outside the class's lock")
	}
	waitQueued(t, c, 1)
	mock.Add(time.Second) // no yield first: the timer must already be armed
	err := testkit.Recv(t, done, "done")
	if !errors.Is(err, memorykit.ErrOverloaded) || memorykit.ReasonCode(err) != ReasonQueueWait {
		t.Fatalf("want queue_wait, got %v", err)
	}
	c.release()
}
