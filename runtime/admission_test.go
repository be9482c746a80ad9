package runtime_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testkit"
	"github.com/goagents/memorykit/recall"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/writer"
)

// blockingStore holds every Recall and Create until release is closed,
// after telling entered.
type blockingStore struct {
	memorykit.Store
	entered chan string
	release chan struct{}
}

func (s blockingStore) Recall(ctx context.Context, q memorykit.RecallQuery) (memorykit.RecallResult, error) {
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
	<-bs.entered
	<-bs.entered
	go func() { done <- search() }() // queued
	waitLoad(t, b.rt, "a queued read", func(l mkruntime.Load) bool { return l.ReadsQueued == 1 })
	if l := b.rt.Load(); l.ReadsRunning != 2 || !l.Saturated {
		t.Fatalf("load %+v", l)
	}
	wantOverloaded(t, search(), mkruntime.ReasonQueueFull)

	// Writes are admitted apart from reads.
	go func() { done <- write() }()
	if got := <-bs.entered; got != "create" {
		t.Fatalf("entered %s", got)
	}
	go func() { done <- write() }() // queued write
	waitLoad(t, b.rt, "a queued write", func(l mkruntime.Load) bool { return l.WritesQueued == 1 })
	wantOverloaded(t, write(), mkruntime.ReasonQueueFull)

	// MaxWait passes: both queued calls are refused, nothing ran for them.
	clk.Add(50 * time.Millisecond)
	wantOverloaded(t, <-done, mkruntime.ReasonQueueWait)
	wantOverloaded(t, <-done, mkruntime.ReasonQueueWait)
	if l := b.rt.Load(); l.Refused != 4 || l.ReadsQueued != 0 || l.WritesQueued != 0 {
		t.Fatalf("load after the waits %+v", l)
	}

	// The admitted calls finish and free their slots.
	close(bs.release)
	for range 3 {
		if err := <-done; err != nil {
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
	} {
		cfg, _ := config(t)
		cfg.Admission = c.a
		_, err := mkruntime.New(cfg)
		var me *memorykit.Error
		if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrInvalidConfig) || me.Field != c.field {
			t.Errorf("%+v: %v", c.a, err)
		}
	}
	if d := mkruntime.DefaultAdmission(); d.MaxReads < 8 || d.MaxWrites < 8 || d.MaxQueue <= 0 || d.MaxWait <= 0 {
		t.Fatalf("preset %+v", d)
	}
}
