package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storetest"
	"github.com/goagents/memorykit/supervisor"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestProbe(t *testing.T) {
	var order []string
	after := false
	p := testkit.RunProbe(t, func(tb testing.TB) {
		tb.Cleanup(func() { order = append(order, "first") })
		tb.Cleanup(func() { order = append(order, "second"); tb.Errorf("cleanup %d", 2) })
		tb.Logf("note %d", 1)
		tb.Fatalf("stop %d", 3)
		after = true
	})
	if !p.Failed() || p.Skipped() || after {
		t.Fatalf("failed=%v skipped=%v ran on=%v", p.Failed(), p.Skipped(), after)
	}
	if got := p.Messages(); got != "note 1\nstop 3\ncleanup 2" {
		t.Fatalf("messages %q", got)
	}
	if !slices.Equal(order, []string{"second", "first"}) {
		t.Fatalf("cleanup order %v", order)
	}
	p = testkit.RunProbe(t, func(tb testing.TB) { tb.Skip("no database") })
	if p.Failed() || !p.Skipped() || p.Messages() != "no database" {
		t.Fatalf("skip: failed=%v skipped=%v %q", p.Failed(), p.Skipped(), p.Messages())
	}
	if p := testkit.RunProbe(t, func(testing.TB) {}); p.Failed() || p.Skipped() {
		t.Fatal("an empty probe failed or skipped")
	}
}

func TestSinkAfter(t *testing.T) {
	var s testkit.Sink
	const a, b = memorykit.EventJobCompleted, memorykit.EventJobRetry
	s.Emit(memorykit.Event{Kind: a}) // before the waiter: not counted
	two := s.After(a, 2)
	one := s.After(a, 1)
	s.Emit(memorykit.Event{Kind: b})
	if closed(two) || closed(one) {
		t.Fatal("a waiter fired on an event of another kind (or an earlier one)")
	}
	s.Emit(memorykit.Event{Kind: a})
	if closed(two) || !closed(one) {
		t.Fatalf("after one more %s: two=%v one=%v", a, closed(two), closed(one))
	}
	s.Emit(memorykit.Event{Kind: a})
	s.Emit(memorykit.Event{Kind: a}) // a fired waiter is not closed twice
	if !closed(two) {
		t.Fatal("After(2) did not fire after two events")
	}
	if !closed(s.After(a, 0)) {
		t.Fatal("After(0) is not closed")
	}
	if n := len(s.OfKind(a)); n != 4 || len(s.Events()) != 5 {
		t.Fatalf("recorded %d of kind %s, %d in all", n, a, len(s.Events()))
	}
}

func TestSinkAfterCount(t *testing.T) {
	var s testkit.Sink
	const k = memorykit.EventEmbeddingStored
	ch := s.AfterCount(k, 5)
	s.Emit(memorykit.Event{Kind: k, Count: 3})
	s.Emit(memorykit.Event{Kind: memorykit.EventEmbeddingRetry, Count: 9})
	if closed(ch) {
		t.Fatal("fired at a sum of 3 (or counted another kind)")
	}
	s.Emit(memorykit.Event{Kind: k, Count: 4})
	if !closed(ch) {
		t.Fatal("did not fire at a sum of 7")
	}
}

func TestSinkCopiesRecordIDs(t *testing.T) {
	var s testkit.Sink
	ids := []string{"r1", "r2"}
	s.Emit(memorykit.Event{Kind: memorykit.EventEmbeddingStored, RecordIDs: ids})
	ids[0] = "changed"
	if got := s.Events()[0].RecordIDs; got[0] != "r1" {
		t.Fatalf("recorded ids follow the caller's slice: %v", got)
	}
}

func TestSinkConcurrent(t *testing.T) {
	var s testkit.Sink
	const k = memorykit.EventJobCompleted
	all := s.After(k, 400)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				s.Emit(memorykit.Event{Kind: k})
				_ = s.After(k, 3)
			}
		})
	}
	wg.Wait()
	testkit.Await(t, all, "400 events")
}

func TestAwait(t *testing.T) {
	done := make(chan struct{})
	close(done)
	if p := testkit.RunProbe(t, func(tb testing.TB) { testkit.Await(tb, done, "x") }); p.Failed() {
		t.Fatalf("Await on a closed channel failed: %s", p.Messages())
	}
	p := testkit.RunProbe(t, func(tb testing.TB) {
		testkit.AwaitWithin(tb, make(chan struct{}), "the thing", time.Millisecond)
	})
	if !p.Failed() || !strings.Contains(p.Messages(), "the thing") {
		t.Fatalf("Await on an open channel: failed=%v %q", p.Failed(), p.Messages())
	}
}

func TestNoContent(t *testing.T) {
	const canary = "CANARY-7f3a"
	cases := []struct {
		name  string
		log   func(*zap.Logger)
		event memorykit.Event
		leaks bool
	}{
		{name: "clean", log: func(l *zap.Logger) { l.Info("stored", zap.Int("count", 2)) },
			event: memorykit.Event{Kind: memorykit.EventJobCompleted, Reason: "ok"}},
		{name: "log message", log: func(l *zap.Logger) { l.Info("stored " + canary) }, leaks: true},
		{name: "log field", log: func(l *zap.Logger) { l.Warn("failed", zap.String("text", "x"+canary)) }, leaks: true},
		{name: "logger name", log: func(l *zap.Logger) { l.Named(canary).Info("m") }, leaks: true},
		{name: "event reason", log: func(*zap.Logger) {},
			event: memorykit.Event{Kind: memorykit.EventJobRetry, Reason: canary}, leaks: true},
		{name: "event record id", log: func(*zap.Logger) {},
			event: memorykit.Event{Kind: memorykit.EventJobRetry, RecordIDs: []string{canary}}, leaks: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			c.log(zap.New(core))
			var s testkit.Sink
			if c.event.Kind != "" {
				s.Emit(c.event)
			}
			p := testkit.RunProbe(t, func(tb testing.TB) { testkit.NoContent(tb, logs, &s, canary) })
			if p.Failed() != c.leaks {
				t.Fatalf("NoContent failed=%v, want %v (%s)", p.Failed(), c.leaks, p.Messages())
			}
		})
	}
}

func TestWantKind(t *testing.T) {
	match := memorykit.WrapError("op", memorykit.ErrUnavailable, "down", errors.New("x"))
	var got *memorykit.Error
	p := testkit.RunProbe(t, func(tb testing.TB) {
		got = testkit.WantKind(tb, fmt.Errorf("wrapped: %w", match), memorykit.ErrUnavailable)
	})
	if p.Failed() || got != match {
		t.Fatalf("matching error: failed=%v got %v", p.Failed(), got)
	}
	for name, err := range map[string]error{
		"plain":      errors.New("unavailable"),
		"wrong kind": memorykit.WrapError("op", memorykit.ErrInvalidConfig, "bad", nil),
		"nil":        nil,
	} {
		if p := testkit.RunProbe(t, func(tb testing.TB) { testkit.WantKind(tb, err, memorykit.ErrUnavailable) }); !p.Failed() {
			t.Errorf("%s error passed", name)
		}
	}
}

func TestFaults(t *testing.T) {
	var f testkit.Faults
	if err := f.Fault("Put"); err != nil {
		t.Fatalf("zero Faults failed a call: %v", err)
	}
	f.FailCalls("Put", 2, testkit.DBDown)
	var got []error
	for range 3 {
		got = append(got, f.Fault("Put"))
	}
	if got[0] != testkit.DBDown || got[1] != testkit.DBDown || got[2] != nil {
		t.Fatalf("Put calls = %v", got)
	}
	if err := f.Fault("Lease"); err != nil {
		t.Fatalf("another method failed: %v", err)
	}
	if !memorykit.IsRecoverable(testkit.DBDown) {
		t.Fatal("DBDown is not recoverable")
	}
}

// TestDriver: two actors waiting on periods of 3s and 5s wake exactly at
// their instants; the clock only ever jumps to the earliest wake-up once
// both have armed.
func TestDriver(t *testing.T) {
	clk := testkit.NewClock()
	d := testkit.NewDriver(t, clk, 2)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	wakes := map[string][]time.Duration{}
	fiveDone := make(chan struct{})
	var wg sync.WaitGroup
	actor := func(name string, period time.Duration, arm func(time.Duration), rounds int, done chan struct{}) {
		defer wg.Done()
		for i := 0; ; i++ {
			if i == rounds {
				close(done)
			}
			timer := clk.Timer(period)
			arm(period)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			mu.Lock()
			wakes[name] = append(wakes[name], clk.Now().Sub(storetest.Epoch))
			mu.Unlock()
		}
	}
	// One actor reports through Hook (as workers do), the other through
	// OnBackoff (as the supervisor does).
	hook := d.Hook("five")
	armFive := func(p time.Duration) { hook(supervisor.Wait{Reason: supervisor.WaitIdle, Delay: p}) }
	armThree := func(p time.Duration) { d.OnBackoff("three", 1, p) }
	wg.Add(2)
	go actor("three", 3*time.Second, armThree, -1, nil)
	go actor("five", 5*time.Second, armFive, 2, fiveDone)
	testkit.Await(t, fiveDone, "two wake-ups of the 5s actor")
	d.Halt()
	d.Halt() // idempotent
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if got := wakes["five"]; !slices.Equal(got, []time.Duration{5 * time.Second, 10 * time.Second}) {
		t.Fatalf("5s actor woke at %v", got)
	}
	three := wakes["three"]
	if len(three) < 3 || !slices.Equal(three[:3], []time.Duration{3 * time.Second, 6 * time.Second, 9 * time.Second}) {
		t.Fatalf("3s actor woke at %v", three)
	}
	for i, at := range three {
		if at != time.Duration(i+1)*3*time.Second {
			t.Fatalf("3s actor woke at %v", three)
		}
	}
}

func TestHarness(t *testing.T) {
	h := testkit.NewHarness(t)
	if h.T != t || h.Ctx == nil || !h.Clock.Now().Equal(storetest.Epoch) || h.Guard == nil || h.Sink == nil || h.Log == nil {
		t.Fatalf("harness = %+v", h)
	}
	if h.Scope.TenantID != "tenant-a" || h.Scope.SubjectID != "project-1" {
		t.Fatalf("scope = %+v", h.Scope)
	}
	h.Log.Info("entry", zap.String("id", "r1"))
	h.Sink.Emit(memorykit.Event{Kind: memorykit.EventJobCompleted})
	if h.Logs.Len() != 1 || len(h.Sink.Events()) != 1 {
		t.Fatal("the harness does not record its logs and events")
	}
	h.NoContent("never-logged")
}

func TestGate(t *testing.T) {
	g := testkit.NewGate(1)
	ctx := context.Background()
	if err := g.Pass(ctx, "a"); err != nil {
		t.Fatalf("the first call was held: %v", err)
	}
	results := make(chan error, 3)
	go func() { results <- g.Pass(ctx, "a") }()
	go func() { results <- g.Pass(ctx, "b") }()
	g.WaitHeld(t, "a", "b")
	select {
	case err := <-results:
		t.Fatalf("a held call returned (%v) before Release", err)
	default:
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { results <- g.Pass(cctx, "c") }()
	g.WaitHeld(t)
	cancel()
	if err := <-results; !errors.Is(err, context.Canceled) {
		t.Fatalf("a held call whose context ended = %v", err)
	}
	g.Release()
	g.Release() // idempotent
	for range 2 {
		if err := <-results; err != nil {
			t.Fatalf("released call = %v", err)
		}
	}
	if err := g.Pass(ctx, "d"); err != nil {
		t.Fatalf("a call after Release = %v", err)
	}
	p := testkit.RunProbe(t, func(tb testing.TB) { testkit.NewGate(0).WaitHeldWithin(tb, time.Millisecond, "x") })
	if !p.Failed() {
		t.Fatal("WaitHeld with nothing held did not fail")
	}
}
