package supervisor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	workerkit "github.com/goagents/memorykit/internal/plumbing/worker"
	"github.com/goagents/memorykit/supervisor"
)

func healthOf(t *testing.T, sup *supervisor.Supervisor, name string) supervisor.ActorHealth {
	t.Helper()
	for _, h := range sup.Health() {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no health for %s", name)
	return supervisor.ActorHealth{}
}

// TestActorNeverGivesUpOnRecoverableErrors is hole 7 of issue 10 at the
// supervisor: an actor whose Run keeps returning a recoverable store error
// is restarted far past MaxRestarts, at the backoff's maximum, and Health
// shows it backing off with the reason code; when a run finally lasts, it
// is running again. One degraded and one recovered event mark the episode.
func TestActorNeverGivesUpOnRecoverableErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.MaxRestarts = 3
	flaky := newScripted("flaky", b.clk)
	sup, err := supervisor.New(b.cfg, flaky)
	if err != nil {
		t.Fatal(err)
	}
	if h := healthOf(t, sup, "flaky"); h.State != supervisor.ActorStopped || h.Reason != "not_started" {
		t.Fatalf("health before Start: %+v", h)
	}
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sup.Stop(context.Background()) })
	storeDown := func() error {
		return memorykit.Recoverable(&memorykit.Error{Op: "test.lease", Kind: memorykit.ErrUnavailable, Reason: "store_down"})
	}
	c := flaky.next(t)
	if h := healthOf(t, sup, "flaky"); h.State != supervisor.ActorRunning {
		t.Fatalf("health after Start: %+v", h)
	}
	const restarts = 50 // far past MaxRestarts
	for attempt := 1; attempt <= restarts; attempt++ {
		failedAt := b.clk.Now()
		c.finish(storeDown)
		got := b.waitArmed(t)
		if got.attempt != attempt || (attempt >= 7 && got.d != time.Minute) {
			t.Fatalf("restart %d armed %+v", attempt, got)
		}
		h := healthOf(t, sup, "flaky")
		if h.State != supervisor.ActorBackingOff || h.Reason != "store_down" || h.Failures != attempt || !h.Since.Equal(failedAt) {
			t.Fatalf("health during restart %d: %+v", attempt, h)
		}
		b.clk.Add(got.d)
		c = flaky.next(t)
	}
	if n := b.events.count(memorykit.EventActorGaveUp, ""); n != 0 {
		t.Fatalf("gave up %d times on a recoverable error", n)
	}
	// This run lasts: the actor is running again.
	if h := healthOf(t, sup, "flaky"); h.State != supervisor.ActorRunning || h.Reason != "" {
		t.Fatalf("health after the restart: %+v", h)
	}
	// Each restart ends one backing-off spell: the actor runs again.
	if d, r := b.events.count(memorykit.EventActorDegraded, "flaky"), b.events.count(memorykit.EventActorRecovered, "flaky"); d != restarts || r != restarts {
		t.Fatalf("%d degraded and %d recovered events, want %d each", d, r, restarts)
	}
	for _, e := range b.events.events() {
		if e.Kind == memorykit.EventActorDegraded && e.Reason != "store_down" {
			t.Fatalf("degraded event %+v", e)
		}
	}
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := healthOf(t, sup, "flaky"); h.State != supervisor.ActorStopped || h.Reason != "stopped" {
		t.Fatalf("health after Stop: %+v", h)
	}
	b.assertLogsClean(t)
}

// TestNonRecoverableFailuresStillGiveUp documents the decision: the
// give-up limit remains for non-recoverable errors and panics, and Health
// then reports the actor stopped with reason gave_up.
func TestNonRecoverableFailuresStillGiveUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.MaxRestarts = 2
	flaky := newScripted("flaky", b.clk)
	sup := b.start(t, flaky)
	c := flaky.next(t)
	for attempt := 1; attempt <= 2; attempt++ {
		c.panicNow()
		got := b.waitArmed(t)
		if h := healthOf(t, sup, "flaky"); h.State != supervisor.ActorBackingOff || h.Reason != "panic" {
			t.Fatalf("health after panic %d: %+v", attempt, h)
		}
		b.clk.Add(got.d)
		c = flaky.next(t)
	}
	c.fail()
	if got := b.waitExit(t); got != (exited{"flaky", "gave_up"}) {
		t.Fatalf("exit %+v", got)
	}
	if h := healthOf(t, sup, "flaky"); h.State != supervisor.ActorStopped || h.Reason != "gave_up" {
		t.Fatalf("health after giving up: %+v", h)
	}
	b.assertLogsClean(t)
}

// TestPollReportsBackingOffAndRecovery: a Poll loop under a Supervisor marks
// its actor backing_off on the first recoverable failure and running on
// the next good round, with exactly one event each way, however long the
// failures last.
func TestPollReportsBackingOffAndRecovery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	waits := make(chan supervisor.Wait, 1)
	rounds := make(chan error, 1)
	a := &pollActor{name: "poller", poll: workerkit.Poll{
		Clock: b.clk, Interval: time.Second,
		Backoff: memorykit.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2},
		OnWait:  func(w supervisor.Wait) { waits <- w }, Logger: zap.NewNop(), What: "lease",
	}, rounds: rounds}
	sup := b.start(t, a)
	down := memorykit.Recoverable(errors.New("db down"))
	step := func(err error) supervisor.Wait {
		t.Helper()
		rounds <- err
		w := recv(t, waits, "a wait")
		return w
	}
	step(nil)
	b.clk.Add(time.Second)
	for i := 1; i <= 100; i++ {
		w := step(down)
		h := healthOf(t, sup, "poller")
		if h.State != supervisor.ActorBackingOff || h.Failures != i || h.Reason != memorykit.ReasonCode(down) {
			t.Fatalf("health after failure %d: %+v", i, h)
		}
		b.clk.Add(w.Delay)
	}
	step(nil)
	if h := healthOf(t, sup, "poller"); h.State != supervisor.ActorRunning {
		t.Fatalf("health after recovery: %+v", h)
	}
	if d, r := b.events.count(memorykit.EventActorDegraded, "poller"), b.events.count(memorykit.EventActorRecovered, "poller"); d != 1 || r != 1 {
		t.Fatalf("%d degraded and %d recovered events, want 1 and 1", d, r)
	}
	e := b.events.waitFor(t, memorykit.EventActorRecovered, "poller")
	if e.Count != 100 {
		t.Fatalf("recovered event %+v, want Count 100", e)
	}
	if n := b.events.count(memorykit.EventActorGaveUp, ""); n != 0 {
		t.Fatalf("gave up %d times", n)
	}
}

// pollActor runs a Poll whose rounds' outcomes come from rounds.
type pollActor struct {
	name   string
	poll   workerkit.Poll
	rounds chan error
}

func (p *pollActor) Name() string { return p.name }

func (p *pollActor) Run(fetch, work context.Context) error {
	return p.poll.Run(fetch, work, func() (bool, error) {
		select {
		case err := <-p.rounds:
			return false, err
		case <-fetch.Done():
			return false, nil
		}
	})
}
