package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/recall"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// blockingStore holds every Recall and Create until release is closed,
// after telling entered.
type blockingStore struct {
	storekit.Store
	entered chan string
	release chan struct{}
}

func (s blockingStore) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	s.entered <- "recall"
	<-s.release
	return s.Store.Recall(ctx, q)
}

func (s blockingStore) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	s.entered <- "create"
	<-s.release
	return s.Store.Create(ctx, in)
}

// waitLoad spins (yielding, never sleeping) until the Runtime's load
// satisfies cond.
func waitLoad(t *testing.T, rt *mkruntime.Runtime, what string, cond func(mkruntime.Load) bool) {
	t.Helper()
	for i := 0; i < 1_000_000; i++ {
		if cond(rt.Load()) {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("never saw %s: %+v", what, rt.Load())
}

func wantOverloaded(t *testing.T, err error, reason string) {
	t.Helper()
	if !errors.Is(err, memorykit.ErrOverloaded) || !memorykit.IsRecoverable(err) || memorykit.ReasonCode(err) != reason {
		t.Fatalf("want a recoverable ErrOverloaded %s, got %v", reason, err)
	}
}

// TestAdmissionBoundsReadsAndWrites fills the read class (2 slots, a queue
// of 1): the third recall queues, the fourth is refused at once with
// queue_full, and the queued one is refused with queue_wait once MaxWait
// passes on the Runtime's clock. Writes have their own bound and queue. A
// slot freed by a finished call admits the next one.
func TestAdmissionBoundsReadsAndWrites(t *testing.T) {
	clk := testkit.NewClock()
	mem := testkit.MemStore(t, clk)
	bs := blockingStore{Store: mem, entered: make(chan string, 16), release: make(chan struct{})}
	cfg, b := configOn(t, clk, bs)
	cfg.Admission = mkruntime.Admission{MaxReads: 2, MaxWrites: 1, MaxQueue: 1, MaxWait: 50 * time.Millisecond}
	b = start(t, cfg, b)
	ctx := context.Background()
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	search := func() error {
		_, err := b.rt.Engine().Recall(ctx, recall.Request{Principal: b.alice, Scope: b.scope, Query: "deploy region"})
		return err
	}
	write := func() error {
		_, err := b.rt.Writer().WriteExplicit(ctx, b.alice, b.scope, writer.Input{Kind: memorykit.KindFact, Key: "k", Content: "v"})
		return err
	}

	done := make(chan error, 8)
	for range 2 {
		go func() { done <- search() }()
	}
	testkit.Recv(t, bs.entered, "bs.entered")
	testkit.Recv(t, bs.entered, "bs.entered")
	go func() { done <- search() }() // queued
	waitLoad(t, b.rt, "a queued read", func(l mkruntime.Load) bool { return l.ReadsQueued == 1 })
	if l := b.rt.Load(); l.ReadsRunning != 2 || !l.Saturated {
		t.Fatalf("load %+v", l)
	}
	wantOverloaded(t, search(), mkruntime.ReasonQueueFull)

	// Writes are admitted apart from reads.
	go func() { done <- write() }()
	if got := testkit.Recv(t, bs.entered, "bs.entered"); got != "create" {
		t.Fatalf("entered %s", got)
	}
	go func() { done <- write() }() // queued write
	waitLoad(t, b.rt, "a queued write", func(l mkruntime.Load) bool { return l.WritesQueued == 1 })
	wantOverloaded(t, write(), mkruntime.ReasonQueueFull)

	// MaxWait passes: both queued calls are refused, nothing ran for them.
	clk.Add(50 * time.Millisecond)
	wantOverloaded(t, testkit.Recv(t, done, "done"), mkruntime.ReasonQueueWait)
	wantOverloaded(t, testkit.Recv(t, done, "done"), mkruntime.ReasonQueueWait)
	if l := b.rt.Load(); l.Refused != 4 || l.ReadsQueued != 0 || l.WritesQueued != 0 {
		t.Fatalf("load after the waits %+v", l)
	}

	// The admitted calls finish and free their slots.
	close(bs.release)
	for range 3 {
		if err := testkit.Recv(t, done, "done"); err != nil {
			t.Fatal(err)
		}
	}
	if err := search(); err != nil {
		t.Fatal(err)
	}
	if l := b.rt.Load(); l.ReadsRunning != 0 || l.WritesRunning != 0 || l.Saturated {
		t.Fatalf("load at rest %+v", l)
	}
}

func TestAdmissionConfigIsValidated(t *testing.T) {
	for _, c := range []struct {
		a     mkruntime.Admission
		field string
	}{
		{mkruntime.Admission{MaxReads: 0, MaxWrites: 1}, "admission.max_reads"},
		{mkruntime.Admission{MaxReads: 1, MaxWrites: -1}, "admission.max_writes"},
		{mkruntime.Admission{MaxReads: 1, MaxWrites: 1, MaxQueue: -1}, "admission.max_queue"},
		{mkruntime.Admission{MaxReads: 1, MaxWrites: 1, MaxQueue: 4}, "admission.max_wait"},
		{mkruntime.Admission{MaxReads: 1, MaxWrites: 1, MaxWait: -time.Second}, "admission.max_wait"},
		{mkruntime.Admission{MaxReads: 1, MaxWrites: 1, MaxQueue: 1, MaxWait: time.Second, CongestedWait: -1}, "admission.congested_wait"},
		{mkruntime.Admission{MaxReads: 1, MaxWrites: 1, MaxQueue: 1, MaxWait: time.Second, CongestedWait: 2 * time.Second}, "admission.congested_wait"},
	} {
		cfg, _ := config(t)
		cfg.Admission = c.a
		_, err := mkruntime.New(cfg)
		var me *memorykit.Error
		if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrInvalidConfig) || me.Field != c.field {
			t.Errorf("%+v: %v", c.a, err)
		}
	}
	if d := mkruntime.DefaultAdmission(); d.MaxReads < 8 || d.MaxWrites < 8 || d.MaxQueue <= 0 || d.MaxWait <= 0 ||
		d.CongestedWait <= 0 || d.CongestedWait >= d.MaxWait {
		t.Fatalf("preset %+v", d)
	}
}

// TestAdmissionStandingQueueRefusesFast: once a class's queue has not been
// empty for MaxWait, a call that must queue waits only CongestedWait, so
// sustained overload is refused fast instead of MaxWait late; with a zero
// CongestedWait it is refused at once. When the queue drains, a queued call
// gets the full MaxWait again. Every wait is on the mock clock.
func TestAdmissionStandingQueueRefusesFast(t *testing.T) {
	clk := testkit.NewClock()
	mem := testkit.MemStore(t, clk)
	bs := blockingStore{Store: mem, entered: make(chan string, 16), release: make(chan struct{})}
	cfg, b := configOn(t, clk, bs)
	cfg.Admission = mkruntime.Admission{MaxReads: 1, MaxWrites: 1, MaxQueue: 4, MaxWait: 100 * time.Millisecond,
		CongestedWait: 10 * time.Millisecond}
	b = start(t, cfg, b)
	ctx := context.Background()
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	search := func(done chan<- error) {
		_, err := b.rt.Engine().Recall(ctx, recall.Request{Principal: b.alice, Scope: b.scope, Query: "deploy region"})
		done <- err
	}
	queued := func(n int) {
		t.Helper()
		waitLoad(t, b.rt, fmt.Sprintf("%d queued reads", n), func(l mkruntime.Load) bool { return l.ReadsQueued == n })
	}
	held := make(chan error, 1)
	go search(held)
	testkit.Recv(t, bs.entered, "bs.entered") // the only read slot is taken

	a, bb, c := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go search(a) // t=0: joins an empty queue, waits up to t=100ms
	queued(1)
	clk.Add(60 * time.Millisecond)
	go search(bb) // t=60ms: the queue is young, so the full wait, to t=160ms
	queued(2)
	if l := b.rt.Load(); l.Congested {
		t.Fatalf("congested after 60ms: %+v", l)
	}
	clk.Add(40 * time.Millisecond) // t=100ms: a gives up; the queue has stood 100ms
	wantOverloaded(t, testkit.Recv(t, a, "a"), mkruntime.ReasonQueueWait)
	queued(1)
	if l := b.rt.Load(); !l.Congested {
		t.Fatalf("not congested after 100ms of queue: %+v", l)
	}
	go search(c) // joins a standing queue: waits 10ms, not 100ms
	queued(2)
	clk.Add(10 * time.Millisecond)
	queued(1) // c left after 10ms (waiting for it would hang if it had not)
	wantOverloaded(t, testkit.Recv(t, c, "c"), mkruntime.ReasonQueueWait)
	select {
	case err := <-bb:
		t.Fatalf("the call queued before the queue stood was cut short: %v", err)
	default:
	}

	// The slot frees: bb runs, the queue drains, and the next call to queue
	// gets the full wait again.
	close(bs.release)
	if err := testkit.Recv(t, held, "held"); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, bb, "bb"); err != nil {
		t.Fatal(err)
	}
	if l := b.rt.Load(); l.Congested || l.ReadsQueued != 0 {
		t.Fatalf("load after draining: %+v", l)
	}
}

// TestAdmissionStandingQueueZeroWait: with CongestedWait zero a call that
// finds a standing queue is refused at once with ReasonCongested.
func TestAdmissionStandingQueueZeroWait(t *testing.T) {
	clk := testkit.NewClock()
	mem := testkit.MemStore(t, clk)
	bs := blockingStore{Store: mem, entered: make(chan string, 16), release: make(chan struct{})}
	cfg, b := configOn(t, clk, bs)
	cfg.Admission = mkruntime.Admission{MaxReads: 1, MaxWrites: 1, MaxQueue: 4, MaxWait: 100 * time.Millisecond}
	b = start(t, cfg, b)
	ctx := context.Background()
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	search := func() error {
		_, err := b.rt.Engine().Recall(ctx, recall.Request{Principal: b.alice, Scope: b.scope, Query: "deploy region"})
		return err
	}
	done := make(chan error, 4)
	go func() { done <- search() }()
	testkit.Recv(t, bs.entered, "bs.entered")
	go func() { done <- search() }() // t=0: queued
	waitLoad(t, b.rt, "a queued read", func(l mkruntime.Load) bool { return l.ReadsQueued == 1 })
	clk.Add(99 * time.Millisecond)
	go func() { done <- search() }() // t=99ms: the queue is young, so it queues
	waitLoad(t, b.rt, "two queued reads", func(l mkruntime.Load) bool { return l.ReadsQueued == 2 })
	clk.Add(1 * time.Millisecond) // t=100ms: the first gives up, the queue stands
	wantOverloaded(t, testkit.Recv(t, done, "done"), mkruntime.ReasonQueueWait)
	go func() { done <- search() }()
	select {
	case err := <-done:
		wantOverloaded(t, err, mkruntime.ReasonCongested)
	case <-time.After(10 * time.Second): // a safety net, not a wait for work
		t.Fatal("a call joined a standing queue instead of being refused at once")
	}
	close(bs.release)
	for range 2 {
		if err := testkit.Recv(t, done, "done"); err != nil {
			t.Fatal(err)
		}
	}
}
