package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

// watchdog bounds every wait in these tests so a bug fails the test instead
// of hanging it. Nothing waits on it for work to happen: each wait ends on a
// signal from the code under test.
const watchdog = 10 * time.Second

// secret stands for memory content that must never reach logs or errors.
const secret = "SECRET-CONTENT-7f3a"

// sink records events and forwards each to a channel.
type sink struct {
	mu  sync.Mutex
	all []memorykit.Event
	ch  chan memorykit.Event
}

func newSink() *sink { return &sink{ch: make(chan memorykit.Event, 4096)} }

func (s *sink) Emit(e memorykit.Event) {
	s.mu.Lock()
	s.all = append(s.all, e)
	s.mu.Unlock()
	s.ch <- e
}

func (s *sink) events() []memorykit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]memorykit.Event(nil), s.all...)
}

// count returns how many events of kind were emitted for actor ("" for any).
func (s *sink) count(kind memorykit.EventKind, actor string) int {
	n := 0
	for _, e := range s.events() {
		if e.Kind == kind && (actor == "" || e.Actor == "worker:"+actor) {
			n++
		}
	}
	return n
}

// waitFor reads events until one of kind for actor arrives.
func (s *sink) waitFor(t *testing.T, kind memorykit.EventKind, actor string) memorykit.Event {
	t.Helper()
	timeout := time.After(watchdog)
	for {
		select {
		case e := <-s.ch:
			if e.Kind == kind && (actor == "" || e.Actor == "worker:"+actor) {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event for %q", kind, actor)
		}
	}
}

type armed struct {
	name    string
	attempt int
	d       time.Duration
}

type exited struct {
	name, reason string
}

// bundle is what most tests need: a mock clock, recorded events, observed
// logs and the two hook channels.
type bundle struct {
	clk    *clock.Mock
	events *sink
	logs   *observer.ObservedLogs
	armed  chan armed
	exited chan exited
	cfg    supervisor.Config
}

func backoff() memorykit.Backoff {
	return memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}
}

func setup(t *testing.T) *bundle {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	b := &bundle{
		clk:    clock.NewMock(),
		events: newSink(),
		logs:   logs,
		armed:  make(chan armed, 64),
		exited: make(chan exited, 64),
	}
	b.cfg = supervisor.Config{
		Clock:       b.clk,
		Logger:      zap.New(core),
		Events:      b.events,
		Backoff:     backoff(),
		MaxRestarts: 5,
		OnBackoffArmed: func(name string, attempt int, d time.Duration) {
			b.armed <- armed{name, attempt, d}
		},
		OnActorExit: func(name, reason string) {
			b.exited <- exited{name, reason}
		},
	}
	return b
}

// start builds and starts a supervisor and registers a Stop for cleanup.
func (b *bundle) start(t *testing.T, actors ...supervisor.Actor) *supervisor.Supervisor {
	t.Helper()
	sup, err := supervisor.New(b.cfg, actors...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := sup.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sup.Stop(context.Background()); err != nil {
			t.Errorf("cleanup Stop: %v", err)
		}
	})
	return sup
}

func (b *bundle) waitArmed(t *testing.T) armed {
	t.Helper()
	select {
	case a := <-b.armed:
		return a
	case <-time.After(watchdog):
		t.Fatal("backoff timer never armed")
	}
	return armed{}
}

func (b *bundle) waitExit(t *testing.T) exited {
	t.Helper()
	select {
	case e := <-b.exited:
		return e
	case <-time.After(watchdog):
		t.Fatal("actor never exited")
	}
	return exited{}
}

func (b *bundle) noArmed(t *testing.T) {
	t.Helper()
	select {
	case a := <-b.armed:
		t.Fatalf("unexpected backoff armed: %+v", a)
	default:
	}
}

// assertLogsClean fails if any log message or field mentions secret.
func (b *bundle) assertLogsClean(t *testing.T) {
	t.Helper()
	for _, e := range b.logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, secret) {
			t.Errorf("log leaks content: %q", line)
		}
	}
}

// call is one invocation of a scripted actor's Run, waiting for the test to
// say how it ends.
type call struct {
	fetch, work context.Context
	at          time.Time // clock reading when Run began
	reply       chan func() error
}

// finish makes the call's Run return f().
func (c *call) finish(f func() error) { c.reply <- f }

func (c *call) fail() {
	c.finish(func() error { return fmt.Errorf("claim %s: %w", secret, memorykit.ErrUnavailable) })
}
func (c *call) exit()     { c.finish(func() error { return nil }) }
func (c *call) panicNow() { c.finish(func() error { panic(errors.New(secret)) }) }
func (c *call) dontRetry() {
	c.finish(func() error { return fmt.Errorf("bad setup: %w", supervisor.ErrDoNotRestart) })
}

// scripted is an actor whose every run is driven by the test. A run that
// gets no instruction returns nil once its fetch context ends.
type scripted struct {
	name  string
	clk   clock.Clock
	calls chan *call
}

func newScripted(name string, clk clock.Clock) *scripted {
	return &scripted{name: name, clk: clk, calls: make(chan *call, 64)}
}

func (a *scripted) Name() string { return a.name }

func (a *scripted) Run(fetch, work context.Context) error {
	c := &call{fetch: fetch, work: work, at: a.clk.Now(), reply: make(chan func() error, 1)}
	a.calls <- c
	select {
	case f := <-c.reply:
		return f()
	case <-fetch.Done():
		return nil
	}
}

func (a *scripted) next(t *testing.T) *call {
	t.Helper()
	select {
	case c := <-a.calls:
		return c
	case <-time.After(watchdog):
		t.Fatalf("actor %s was not run", a.name)
	}
	return nil
}

func (a *scripted) notRun(t *testing.T) {
	t.Helper()
	select {
	case c := <-a.calls:
		t.Fatalf("actor %s run unexpectedly at %v", a.name, c.at)
	default:
	}
}

// worker claims items while its fetch context lives and holds each item
// until released or until its work context ends, when it hands the item
// back.
type worker struct {
	name    string
	items   chan string
	ctxs    chan [2]context.Context
	working chan string
	release chan struct{}

	mu         sync.Mutex
	done       []string
	handedBack []string
}

func newWorker(name string) *worker {
	return &worker{
		name:    name,
		items:   make(chan string, 16),
		ctxs:    make(chan [2]context.Context, 16),
		working: make(chan string, 16),
		release: make(chan struct{}),
	}
}

func (w *worker) Name() string { return w.name }

func (w *worker) Run(fetch, work context.Context) error {
	w.ctxs <- [2]context.Context{fetch, work}
	for {
		select {
		case <-fetch.Done():
			return nil
		case it := <-w.items:
			w.working <- it
			select {
			case <-w.release:
				w.mu.Lock()
				w.done = append(w.done, it)
				w.mu.Unlock()
			case <-work.Done():
				w.mu.Lock()
				w.handedBack = append(w.handedBack, it)
				w.mu.Unlock()
				return nil
			}
		}
	}
}

func (w *worker) results() (done, handedBack []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.done...), append([]string(nil), w.handedBack...)
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(watchdog):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(watchdog):
		t.Fatalf("%s never ended", what)
	}
}
