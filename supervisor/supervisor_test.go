package supervisor_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

func TestRestartAfterErrorAtExactBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newScripted("embed", b.clk)
	b.start(t, a)

	prev := a.next(t)
	for attempt, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		attempt++
		prev.fail()
		got := b.waitArmed(t)
		if got != (armed{"embed", attempt, want}) {
			t.Fatalf("armed %+v, want attempt %d after %v", got, attempt, want)
		}
		b.clk.Add(want - time.Millisecond)
		a.notRun(t)
		if n := b.events.count(memorykit.EventActorRestarted, "embed"); n != attempt-1 {
			t.Fatalf("restart events before the backoff ran out: %d, want %d", n, attempt-1)
		}
		b.clk.Add(time.Millisecond)
		next := a.next(t)
		if d := next.at.Sub(prev.at); d != want {
			t.Fatalf("attempt %d restarted %v after the failure, want %v", attempt, d, want)
		}
		e := b.events.waitFor(t, memorykit.EventActorRestarted, "embed")
		if e.Attempt != attempt || e.Reason != "error" || !e.At.Equal(next.at) {
			t.Fatalf("restart event %+v, want attempt %d reason error at %v", e, attempt, next.at)
		}
		prev = next
	}
	b.assertLogsClean(t)
}

func TestRestartAfterPanic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newScripted("extract", b.clk)
	b.start(t, a)

	a.next(t).panicNow()
	if got := b.waitArmed(t); got.attempt != 1 || got.d != time.Second {
		t.Fatalf("armed %+v", got)
	}
	b.clk.Add(time.Second)
	a.next(t)
	e := b.events.waitFor(t, memorykit.EventActorRestarted, "extract")
	if e.Reason != "panic" || e.Attempt != 1 {
		t.Fatalf("restart event %+v, want reason panic attempt 1", e)
	}
	var sawType bool
	for _, l := range b.logs.All() {
		if v, ok := l.ContextMap()["panic_type"]; ok {
			sawType = true
			if v != "*errors.errorString" {
				t.Errorf("panic_type = %v", v)
			}
		}
	}
	if !sawType {
		t.Error("the panic was not logged with its type")
	}
	b.assertLogsClean(t)
}

func TestRestartAfterNilReturn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newScripted("reaper", b.clk)
	b.start(t, a)

	a.next(t).exit()
	if got := b.waitArmed(t); got.attempt != 1 || got.d != time.Second {
		t.Fatalf("armed %+v", got)
	}
	b.clk.Add(time.Second)
	a.next(t)
	if e := b.events.waitFor(t, memorykit.EventActorRestarted, "reaper"); e.Reason != "exited" {
		t.Fatalf("restart reason %q, want exited", e.Reason)
	}
}

func TestGiveUpAfterMaxRestarts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.MaxRestarts = 3
	flaky := newScripted("flaky", b.clk)
	steady := newScripted("steady", b.clk)
	sup := b.start(t, flaky, steady)
	steadyRun := steady.next(t)

	c := flaky.next(t)
	for attempt := 1; attempt <= 3; attempt++ {
		c.fail()
		got := b.waitArmed(t)
		if got.attempt != attempt {
			t.Fatalf("armed attempt %d, want %d", got.attempt, attempt)
		}
		b.clk.Add(got.d)
		c = flaky.next(t)
	}
	c.fail()
	e := b.events.waitFor(t, memorykit.EventActorGaveUp, "flaky")
	if e.Attempt != 3 || e.Count != 4 || e.Reason != "error" {
		t.Fatalf("give-up event %+v, want 3 restarts, 4 failures, reason error", e)
	}
	if got := b.waitExit(t); got != (exited{"flaky", "gave_up"}) {
		t.Fatalf("exit %+v", got)
	}
	b.noArmed(t)
	b.clk.Add(time.Hour)
	flaky.notRun(t)

	// The other actor is untouched and the supervisor still runs.
	if err := steadyRun.fetch.Err(); err != nil {
		t.Fatalf("steady actor's fetch context ended: %v", err)
	}
	if s := sup.State(); s != supervisor.StateRunning {
		t.Fatalf("state %v, want running", s)
	}
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := b.events.count(memorykit.EventActorGaveUp, ""); n != 1 {
		t.Fatalf("%d give-up events, want exactly 1", n)
	}
	if n := b.events.count(memorykit.EventActorRestarted, "flaky"); n != 3 {
		t.Fatalf("%d restart events, want 3", n)
	}
	if n := b.events.count(memorykit.EventActorRestarted, "steady"); n != 0 {
		t.Fatalf("steady actor restarted %d times", n)
	}
	if got := b.waitExit(t); got != (exited{"steady", "stopped"}) {
		t.Fatalf("exit %+v", got)
	}
	b.assertLogsClean(t)
}

func TestFailureCounterResetsAfterHealthyRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Backoff = memorykit.Backoff{Initial: time.Second, Max: 10 * time.Second, Multiplier: 2}
	b.cfg.MaxRestarts = 2
	a := newScripted("embed", b.clk)
	b.start(t, a)

	a.next(t).fail()
	if got := b.waitArmed(t); got.attempt != 1 || got.d != time.Second {
		t.Fatalf("armed %+v", got)
	}
	b.clk.Add(time.Second)

	// This run lasts exactly Max before failing: the count starts over.
	c := a.next(t)
	b.clk.Add(10 * time.Second)
	c.fail()
	if got := b.waitArmed(t); got.attempt != 1 || got.d != time.Second {
		t.Fatalf("after a healthy run: armed %+v, want attempt 1 after 1s", got)
	}
	b.clk.Add(time.Second)

	// This one falls short of Max by a millisecond: the count goes on.
	c = a.next(t)
	b.clk.Add(10*time.Second - time.Millisecond)
	c.fail()
	if got := b.waitArmed(t); got.attempt != 2 || got.d != 2*time.Second {
		t.Fatalf("after a short run: armed %+v, want attempt 2 after 2s", got)
	}
	b.clk.Add(2 * time.Second)

	// A third consecutive failure is over MaxRestarts (2).
	a.next(t).fail()
	if e := b.events.waitFor(t, memorykit.EventActorGaveUp, "embed"); e.Count != 3 {
		t.Fatalf("give-up event %+v, want 3 consecutive failures", e)
	}
}

func TestDoNotRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	quitter := newScripted("quitter", b.clk)
	other := newScripted("other", b.clk)
	sup := b.start(t, quitter, other)
	otherRun := other.next(t)

	quitter.next(t).dontRetry()
	if e := b.events.waitFor(t, memorykit.EventActorStopped, "quitter"); e.Reason != "do_not_restart" {
		t.Fatalf("stop event %+v", e)
	}
	if got := b.waitExit(t); got != (exited{"quitter", "do_not_restart"}) {
		t.Fatalf("exit %+v", got)
	}
	b.noArmed(t)
	b.clk.Add(time.Hour)
	quitter.notRun(t)
	if otherRun.fetch.Err() != nil || sup.State() != supervisor.StateRunning {
		t.Fatal("the other actor or the supervisor stopped")
	}
	if err := sup.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := b.events.count(memorykit.EventActorRestarted, ""); n != 0 {
		t.Fatalf("%d restarts", n)
	}
}

func TestDrainWaitsForInFlightWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorker("embed")
	sup := b.start(t, w)
	ctxs := recv(t, w.ctxs, "run")
	fetch, work := ctxs[0], ctxs[1]

	w.items <- "job-1"
	recv(t, w.working, "job-1 claimed")
	drained := make(chan error, 1)
	go func() { drained <- sup.Drain(context.Background()) }()

	waitDone(t, fetch, "fetch context")
	if c := context.Cause(fetch); !errors.Is(c, memorykit.ErrDraining) {
		t.Fatalf("fetch cause %v, want ErrDraining", c)
	}
	if s := sup.State(); s != supervisor.StateDraining {
		t.Fatalf("state %v, want draining", s)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned (%v) while work was in flight", err)
	default:
	}
	if work.Err() != nil {
		t.Fatal("Drain cancelled the work context")
	}

	close(w.release)
	if err := recv(t, drained, "Drain"); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	done, back := w.results()
	if len(done) != 1 || len(back) != 0 {
		t.Fatalf("done %v handed back %v, want job-1 done", done, back)
	}
	if s := sup.State(); s != supervisor.StateDrained {
		t.Fatalf("state %v, want drained", s)
	}
	if work.Err() != nil {
		t.Fatal("work context ended by a completed Drain")
	}
	if e := b.events.waitFor(t, memorykit.EventActorStopped, "embed"); e.Reason != "drained" {
		t.Fatalf("stop event %+v", e)
	}
	if n := b.events.count(memorykit.EventActorRestarted, ""); n != 0 {
		t.Fatalf("%d restarts during drain", n)
	}

	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := context.Cause(work); !errors.Is(c, memorykit.ErrStopped) {
		t.Fatalf("work cause after Stop: %v", c)
	}
	if s := sup.State(); s != supervisor.StateStopped {
		t.Fatalf("state %v, want stopped", s)
	}
}

func TestDrainContextExpiryCancelsWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorker("extract")
	sup := b.start(t, w)
	ctxs := recv(t, w.ctxs, "run")
	fetch, work := ctxs[0], ctxs[1]

	w.items <- "job-1"
	recv(t, w.working, "job-1 claimed")
	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan error, 1)
	go func() { drained <- sup.Drain(ctx) }()
	waitDone(t, fetch, "fetch context")
	if work.Err() != nil {
		t.Fatal("work cancelled before Drain's context ended")
	}
	cancel()

	err := recv(t, drained, "Drain")
	if !errors.Is(err, context.Canceled) || !errors.Is(err, memorykit.ErrUnavailable) {
		t.Fatalf("Drain: %v, want canceled wrapped as unavailable", err)
	}
	if c := context.Cause(work); !errors.Is(c, memorykit.ErrDraining) {
		t.Fatalf("work cause %v, want ErrDraining", c)
	}
	done, back := w.results()
	if len(done) != 0 || len(back) != 1 || back[0] != "job-1" {
		t.Fatalf("done %v handed back %v, want job-1 handed back", done, back)
	}
	// Drain waited for the actor after cancelling its work.
	if s := sup.State(); s != supervisor.StateDrained {
		t.Fatalf("state %v, want drained", s)
	}
	if err := sup.Drain(context.Background()); err != nil {
		t.Fatalf("second Drain: %v", err)
	}
}

func TestStopDuringBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newScripted("embed", b.clk)
	sup := b.start(t, a)

	a.next(t).fail()
	got := b.waitArmed(t)
	b.clk.Add(got.d - time.Millisecond)
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := sup.State(); s != supervisor.StateStopped {
		t.Fatalf("state %v", s)
	}
	if e := b.waitExit(t); e != (exited{"embed", "stopped"}) {
		t.Fatalf("exit %+v", e)
	}
	b.clk.Add(time.Hour)
	a.notRun(t)
	if n := b.events.count(memorykit.EventActorRestarted, ""); n != 0 {
		t.Fatalf("%d restarts after Stop", n)
	}
}

func TestDrainDuringBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newScripted("embed", b.clk)
	sup := b.start(t, a)

	a.next(t).panicNow()
	b.waitArmed(t)
	if err := sup.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := b.waitExit(t); e != (exited{"embed", "drained"}) {
		t.Fatalf("exit %+v", e)
	}
	b.clk.Add(time.Hour)
	a.notRun(t)
}

// stuck ignores both contexts until released.
type stuck struct {
	works   chan context.Context
	release chan struct{}
}

func (s *stuck) Name() string { return "stuck" }

func (s *stuck) Run(_, work context.Context) error {
	s.works <- work
	<-s.release
	return nil
}

func TestStopReportsActorsThatDidNotStop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := newScripted("good", b.clk)
	bad := &stuck{works: make(chan context.Context, 1), release: make(chan struct{})}
	sup := b.start(t, good, bad)
	good.next(t)
	work := recv(t, bad.works, "stuck run")

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- sup.Stop(ctx) }()
	waitDone(t, work, "stuck actor's work context")
	if e := b.waitExit(t); e != (exited{"good", "stopped"}) {
		t.Fatalf("exit %+v", e)
	}
	cancel()

	err := recv(t, stopped, "Stop")
	var ns *supervisor.NotStoppedError
	if !errors.As(err, &ns) {
		t.Fatalf("Stop: %v, want *NotStoppedError", err)
	}
	if len(ns.Actors) != 1 || ns.Actors[0] != "stuck" {
		t.Fatalf("not stopped: %v, want [stuck]", ns.Actors)
	}
	for _, want := range []error{supervisor.ErrNotStopped, memorykit.ErrUnavailable, context.Canceled} {
		if !errors.Is(err, want) {
			t.Errorf("Stop error does not match %v", want)
		}
	}
	var me *memorykit.Error
	if !errors.As(err, &me) || me.Reason != "actors_not_stopped" {
		t.Errorf("no *memorykit.Error with reason actors_not_stopped in %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "stuck") || strings.Contains(msg, "good") {
		t.Errorf("message %q should name only the stuck actor", msg)
	}
	if s := sup.State(); s != supervisor.StateStopping {
		t.Fatalf("state %v, want stopping", s)
	}

	close(bad.release)
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if s := sup.State(); s != supervisor.StateStopped {
		t.Fatalf("state %v, want stopped", s)
	}
}

func TestErrorWhileDrainingIsNotRestarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newScripted("embed", b.clk)
	sup := b.start(t, a)
	c := a.next(t)

	// Hold the run open across Drain, then fail it.
	c.reply <- func() error {
		<-c.fetch.Done()
		return errors.New(secret)
	}
	if err := sup.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := b.waitExit(t); e != (exited{"embed", "drained"}) {
		t.Fatalf("exit %+v", e)
	}
	b.noArmed(t)
	a.notRun(t)
	b.assertLogsClean(t)
}

func TestLifecycleEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newScripted("embed", b.clk)
	sup := b.start(t, a)
	a.next(t)
	if err := sup.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range b.events.events() {
		switch e.Kind {
		case memorykit.EventLifecycle:
			if e.Count != 1 {
				t.Errorf("lifecycle %s count %d, want 1", e.Reason, e.Count)
			}
			got = append(got, e.Reason)
		case memorykit.EventActorStopped:
			got = append(got, e.Actor+"="+e.Reason)
		}
	}
	want := "started draining worker:embed=drained drained stopping stopped"
	if strings.Join(got, " ") != want {
		t.Fatalf("events %v, want %s", got, want)
	}
}

func TestOutOfOrderCalls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newScripted("embed", b.clk)
	sup, err := supervisor.New(b.cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(name string, err error, want ...error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		var me *memorykit.Error
		if !errors.As(err, &me) {
			t.Errorf("%s: %T is not a *memorykit.Error", name, err)
		}
		for _, w := range want {
			if !errors.Is(err, w) {
				t.Errorf("%s: %v does not match %v", name, err, w)
			}
		}
	}
	state := func(want supervisor.State) {
		t.Helper()
		if s := sup.State(); s != want {
			t.Fatalf("state %v, want %v", s, want)
		}
	}

	state(supervisor.StateNew)
	check("Drain before Start", sup.Drain(ctx), supervisor.ErrNotStarted, memorykit.ErrInvalidTransition)
	check("Stop before Start", sup.Stop(ctx), supervisor.ErrNotStarted, memorykit.ErrInvalidTransition)
	var nilCtx context.Context
	check("Start(nil)", sup.Start(nilCtx), memorykit.ErrInvalidInput)
	done, cancel := context.WithCancel(ctx)
	cancel()
	check("Start(done ctx)", sup.Start(done), memorykit.ErrUnavailable, context.Canceled)
	state(supervisor.StateNew)
	a.notRun(t)

	if err := sup.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	state(supervisor.StateRunning)
	a.next(t)
	check("Start twice", sup.Start(ctx), supervisor.ErrAlreadyStarted, memorykit.ErrInvalidTransition)
	check("Drain(nil)", sup.Drain(nilCtx), memorykit.ErrInvalidInput)
	check("Stop(nil)", sup.Stop(nilCtx), memorykit.ErrInvalidInput)
	state(supervisor.StateRunning)

	if err := sup.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if err := sup.Drain(ctx); err != nil {
		t.Fatalf("Drain twice: %v", err)
	}
	state(supervisor.StateDrained)
	check("Start after Drain", sup.Start(ctx), supervisor.ErrAlreadyStarted, memorykit.ErrDraining)

	if err := sup.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := sup.Stop(ctx); err != nil {
		t.Fatalf("Stop twice: %v", err)
	}
	state(supervisor.StateStopped)
	check("Start after Stop", sup.Start(ctx), supervisor.ErrAlreadyStarted, memorykit.ErrStopped)
	check("Drain after Stop", sup.Drain(ctx), memorykit.ErrStopped)
	state(supervisor.StateStopped)
	a.notRun(t)
}

func TestStopWithoutDrain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorker("embed")
	sup := b.start(t, w)
	ctxs := recv(t, w.ctxs, "run")
	w.items <- "job-1"
	recv(t, w.working, "job-1 claimed")
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, c := range ctxs {
		if cause := context.Cause(c); !errors.Is(cause, memorykit.ErrStopped) {
			t.Errorf("context %d cause %v, want ErrStopped", i, cause)
		}
	}
	if _, back := w.results(); len(back) != 1 {
		t.Fatalf("handed back %v, want job-1", back)
	}
	if e := b.events.waitFor(t, memorykit.EventActorStopped, "embed"); e.Reason != "stopped" {
		t.Fatalf("stop event %+v", e)
	}
}

// goexiter ends its goroutine with runtime.Goexit instead of returning.
type goexiter struct{}

func (goexiter) Name() string { return "goexiter" }

func (goexiter) Run(_, _ context.Context) error {
	runtime.Goexit()
	return nil
}

func TestActorCallingGoexitIsAccountedFor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sup := b.start(t, goexiter{})
	if e := b.waitExit(t); e != (exited{"goexiter", "goexit"}) {
		t.Fatalf("exit %+v", e)
	}
	if err := sup.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := sup.State(); s != supervisor.StateDrained {
		t.Fatalf("state %v", s)
	}
}
