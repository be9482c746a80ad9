package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/runtime/runtimetest"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

// flakyJobs fails EnqueueJob recoverably while down is set and counts the
// jobs it stored per ID.
type flakyJobs struct {
	storekit.Store
	down   atomic.Bool
	mu     sync.Mutex
	stored map[string]int
	tries  int
}

func (f *flakyJobs) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	f.mu.Lock()
	f.tries++
	f.mu.Unlock()
	if f.down.Load() {
		return storekit.Job{}, testkit.DBDown
	}
	job, err := f.Store.EnqueueJob(ctx, j)
	if err == nil {
		f.mu.Lock()
		f.stored[j.ID]++
		f.mu.Unlock()
	}
	return job, err
}

// outboxSetup builds a Runtime whose job store is flaky and whose outbox
// reports each armed retry wait on the returned channel.
func outboxSetup(t *testing.T, ob mkruntime.Outbox) (*bundle, *flakyJobs, <-chan supervisor.Wait, *mkruntime.Session) {
	t.Helper()
	cfg, b := config(t)
	fj := &flakyJobs{Store: b.store, stored: map[string]int{}}
	cfg.Stores.Jobs = fj
	cfg.Outbox = ob
	waits := make(chan supervisor.Wait, 100)
	runtimetest.WithHooks(&cfg, runtimetest.Hooks{OnWait: func(actor string, w supervisor.Wait) {
		if actor == mkruntime.ActorOutbox {
			waits <- w
		}
	}})
	start(t, cfg, b)
	if err := b.rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := b.rt.Session(context.Background(), mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	return b, fj, waits, s
}

// nextWait returns the outbox's next armed retry wait.
func nextWait(t *testing.T, waits <-chan supervisor.Wait) supervisor.Wait {
	t.Helper()
	select {
	case w := <-waits:
		return w
	case <-time.After(time.Minute): // a guard against a hang, not a wait for work
		t.Fatal("the outbox never armed its retry wait")
		return supervisor.Wait{}
	}
}

// TestOutboxStoresTurnsAfterAnOutage: turns finished while the job store is
// down are deferred to the outbox (one of them twice), the outbox bound
// drops the one that does not fit, retries back off on the clock, and once
// the store is back every deferred turn lands exactly once.
func TestOutboxStoresTurnsAfterAnOutage(t *testing.T) {
	retry := memorykit.Backoff{Initial: time.Second, Max: 8 * time.Second, Multiplier: 2}
	b, fj, waits, s := outboxSetup(t, mkruntime.Outbox{MaxTurns: 4, MaxBytes: 1 << 10, Retry: retry})
	ctx := context.Background()
	const canary = "canary-outbox-77c1"
	fj.down.Store(true)
	for i := 1; i <= 4; i++ {
		res := s.FinishTurn(ctx, mkruntime.Turn{RunRef: fmt.Sprintf("run-1/turn-%d", i), Transcript: "remember: k" + fmt.Sprint(i) + " = " + canary})
		if res.Status != extractworker.EnqueueDeferred || res.JobID == "" {
			t.Fatalf("turn %d during the outage = %+v, want deferred", i, res)
		}
	}
	if res := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1/turn-2", Transcript: "remember: k2 = " + canary}); res.Status != extractworker.EnqueueDeferred {
		t.Fatalf("a held turn finished again = %+v, want deferred", res)
	}
	full := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1/turn-5", Transcript: "remember: k5 = " + canary})
	if full.Status != extractworker.EnqueueDropped || full.Reason != mkruntime.ReasonOutboxFull {
		t.Fatalf("turn over the bound = %+v, want dropped (outbox_full)", full)
	}
	rep := b.rt.OutboxReport()
	if rep.Held != 4 || rep.Deferred != 4 || rep.Dropped != 1 || rep.Landed != 0 || len(rep.JobIDs) != 4 {
		t.Fatalf("report during the outage = %+v", rep)
	}
	// Still down: the retries back off 1 s, 2 s, 4 s on the clock.
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		w := nextWait(t, waits)
		if w.Delay != want {
			t.Fatalf("retry wait %v, want %v", w.Delay, want)
		}
		if w.Delay == 4*time.Second {
			break
		}
		b.clk.Add(w.Delay)
	}
	landed := b.sink.After(memorykit.EventExtractionEnqueued, 4)
	fj.down.Store(false)
	b.clk.Add(4 * time.Second)
	testkit.Await(t, landed, "the held turns' jobs")
	rep = b.rt.OutboxReport()
	if rep.Held != 0 || rep.Landed != 4 || rep.Bytes != 0 {
		t.Fatalf("report after recovery = %+v", rep)
	}
	fj.mu.Lock()
	for i := 1; i <= 4; i++ {
		id := storekit.ExtractionJobID(b.scope, fmt.Sprintf("run-1/turn-%d", i))
		if fj.stored[id] != 1 {
			t.Errorf("turn %d stored %d times, want once", i, fj.stored[id])
		}
	}
	fj.mu.Unlock()
	if res := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1/turn-3", Transcript: "remember: k3 = " + canary}); res.Status != extractworker.EnqueueDuplicate {
		t.Fatalf("a landed turn finished again = %+v, want duplicate", res)
	}
	if err := b.rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if rep := b.rt.OutboxReport(); !rep.Closed || rep.Held != 0 {
		t.Fatalf("report after drain = %+v", rep)
	}
	b.sink.AssertNoCanary(t, canary)
	for _, e := range b.logs.All() {
		if strings.Contains(fmt.Sprint(e.Message, e.Context), canary) {
			t.Fatalf("a log line carries turn content: %s", e.Message)
		}
	}
}

// TestOutboxDrainHandsLeftoversToTheHost: turns still held when the Runtime
// drains (the store never came back) are reported without content and
// handed to OnDrain; the byte bound drops a turn the count bound would
// have taken.
func TestOutboxDrainHandsLeftoversToTheHost(t *testing.T) {
	var (
		gotRep   mkruntime.OutboxReport
		gotTurns []extractworker.Turn
		calls    int
	)
	ob := mkruntime.Outbox{
		MaxTurns: 10, MaxBytes: 40,
		Retry: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
		OnDrain: func(r mkruntime.OutboxReport, ts []extractworker.Turn) {
			calls++
			gotRep, gotTurns = r, ts
		},
	}
	b, fj, _, s := outboxSetup(t, ob)
	ctx := context.Background()
	fj.down.Store(true)
	first := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-2/turn-1", Transcript: strings.Repeat("a", 15)})
	second := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-2/turn-2", Transcript: strings.Repeat("b", 15)})
	if first.Status != extractworker.EnqueueDeferred || second.Status != extractworker.EnqueueDeferred {
		t.Fatalf("deferred = %+v, %+v", first, second)
	}
	if big := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-2/turn-3", Transcript: strings.Repeat("c", 11)}); big.Status != extractworker.EnqueueDropped || big.Reason != mkruntime.ReasonOutboxFull {
		t.Fatalf("turn over the byte bound = %+v, want dropped", big)
	}
	if err := b.rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(gotTurns) != 2 || gotTurns[0].RunRef != "run-2/turn-1" || gotTurns[1].Payload != strings.Repeat("b", 15) {
		t.Fatalf("OnDrain got %d calls, turns %+v", calls, gotTurns)
	}
	want := []string{first.JobID, second.JobID}
	if gotRep.Held != 2 || gotRep.Bytes != 30 || fmt.Sprint(gotRep.JobIDs) != fmt.Sprint(want) || gotRep.Dropped != 1 || !gotRep.Closed {
		t.Fatalf("drain report = %+v", gotRep)
	}
	if rep := b.rt.OutboxReport(); rep.Held != 2 || !rep.Closed {
		t.Fatalf("report after drain = %+v", rep)
	}
	// Drain made one last attempt per held turn before handing them over.
	fj.mu.Lock()
	tries := fj.tries
	fj.mu.Unlock()
	if tries != 5 {
		t.Fatalf("%d enqueue attempts, want 5 (3 turns, then one last try for each held turn)", tries)
	}
	if err := b.rt.Stop(ctx); err != nil || calls != 1 {
		t.Fatalf("Stop = %v, OnDrain calls %d", err, calls)
	}
}

// TestOutboxConfigFailsClosed: every outbox bound is required.
func TestOutboxConfigFailsClosed(t *testing.T) {
	t.Parallel()
	cfg, _ := config(t)
	for name, mutate := range map[string]func(*mkruntime.Outbox){
		"max turns": func(o *mkruntime.Outbox) { o.MaxTurns = 0 },
		"max bytes": func(o *mkruntime.Outbox) { o.MaxBytes = -1 },
		"retry":     func(o *mkruntime.Outbox) { o.Retry = memorykit.Backoff{} },
	} {
		c := cfg
		mutate(&c.Outbox)
		if _, err := mkruntime.New(c); err == nil {
			t.Errorf("%s: New accepted the outbox", name)
		}
	}
}
