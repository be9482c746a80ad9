package embedworker_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/supervisor"
)

// gated makes emb pass g before embedding as worker.
func gated(emb *fakeEmbedder, worker string, g *testkit.Gate) *fakeEmbedder {
	local := embedder.NewLocal()
	emb.script(func(ctx context.Context, texts []string) ([][]float32, error) {
		if err := g.Pass(ctx, worker); err != nil {
			return nil, err
		}
		return local.Embed(ctx, texts)
	})
	return emb
}

// drainSetup starts two embedding workers and the reaper over n records
// and returns once a batch is held at the gate. (On PostgreSQL two workers
// racing for the same first records can leave one of them with an empty
// lease; it then idles on the frozen mock clock, which is fine here.)
func drainSetup(t *testing.T, e *env, n int) (*supervisor.Supervisor, *testkit.Gate) {
	e.createN(n)
	g := testkit.NewGate(5)
	ea, eb := gated(newEmbedder(e.Clock), "a", g), gated(newEmbedder(e.Clock), "b", g)
	sup := e.Supervisor(nil, e.worker(e.config("embed-a", ea)), e.worker(e.config("embed-b", eb)), e.reaper(nil))
	if err := sup.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	g.WaitHeld(t)
	return sup, g
}

// checkNothingLost asserts that no lease is left behind (a fresh worker can
// lease every pending record at once, without any clock movement) and that
// everything ends up embedded. It returns how many records were still
// pending after the drain.
func checkNothingLost(t *testing.T, e *env, n int) int {
	t.Helper()
	pending := e.pending()
	stored := make(map[string]bool)
	dup := 0
	for _, ev := range e.Sink.OfKind(memorykit.EventEmbeddingStored) {
		for _, id := range ev.RecordIDs {
			if stored[id] {
				dup++
			}
			stored[id] = true
		}
	}
	if dup > 0 {
		t.Errorf("%d records were embedded twice", dup)
	}
	// A put whose commit raced the work context's end is stored without
	// its event, so events may undercount, never overcount.
	if len(stored) > n-pending {
		t.Fatalf("events report %d records stored, but only %d have a vector", len(stored), n-pending)
	}
	c := e.worker(e.config("embed-c", newEmbedder(e.Clock)))
	leased := 0
	for {
		r := runOnce(t, c)
		if r.Leased == 0 {
			break
		}
		leased += r.Leased
	}
	if leased != pending || e.pending() != 0 {
		t.Fatalf("a fresh worker leased %d of %d pending records (now %d pending)", leased, pending, e.pending())
	}
	return pending
}

// TestDrainFinishesInFlightBatches: Drain lets the held batches finish,
// returns, and leaves every other record pending and unleased; Stop leaves
// no goroutine.
func TestDrainFinishesInFlightBatches(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const n = 300
		sup, g := drainSetup(t, e, n)
		drained := testkit.DrainAsync(t, e.Ctx, sup, e.Sink)
		select {
		case err := <-drained:
			t.Fatalf("Drain returned (%v) with batches in flight", err)
		default:
		}
		g.Release()
		if err := <-drained; err != nil {
			t.Fatalf("Drain = %v", err)
		}
		pending := checkNothingLost(t, e, n)
		if pending == 0 || pending > n-50 {
			t.Fatalf("%d pending after drain", pending)
		}
		if err := sup.Stop(e.Ctx); err != nil {
			t.Fatalf("Stop = %v", err)
		}
	})
}

// TestDrainDeadlineHandsBack: when Drain's context ends first, the held
// batches are handed back and nothing stays leased.
func TestDrainDeadlineHandsBack(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const n = 200
		sup, _ := drainSetup(t, e, n)
		ctx, cancel := context.WithCancel(e.Ctx)
		drained := testkit.DrainAsync(t, ctx, sup, e.Sink)
		cancel()
		err := <-drained
		testkit.WantKind(t, err, memorykit.ErrUnavailable)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Drain = %v", err)
		}
		if n := e.Logs.FilterMessage("lease handed back").Len(); n < 10 {
			t.Fatalf("%d leases handed back, want at least the held batch", n)
		}
		checkNothingLost(t, e, n)
		if err := sup.Stop(e.Ctx); err != nil {
			t.Fatalf("Stop = %v", err)
		}
	})
}

// TestPostgresOutage: PostgreSQL drops the runtime's connections several
// times while the embedding worker runs; it sees recoverable errors, backs
// off on the clock, and embeds every record once connections come back.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	e := pgOnly(t)
	const n = 80
	recs := e.createN(n)

	var mu sync.Mutex
	killed, storeWaits, calls := 0, 0, 0
	emb := newEmbedder(e.Clock)
	local := embedder.NewLocal()
	emb.script(func(ctx context.Context, texts []string) ([][]float32, error) {
		mu.Lock()
		calls++
		kill := calls%5 == 2
		mu.Unlock()
		if kill {
			k := e.pg.Terminate(t)
			mu.Lock()
			killed += k
			mu.Unlock()
		}
		return local.Embed(ctx, texts)
	})
	d := testkit.NewDriver(t, e.Clock, 2)
	cfg := e.config("embed-1", emb)
	cfg.BatchSize = 5
	cfg.OnWait = func(w supervisor.Wait) {
		if w.Reason != supervisor.WaitIdle {
			mu.Lock()
			storeWaits++
			mu.Unlock()
		}
		d.Hook("worker")(w)
	}
	stored := e.Sink.AfterCount(memorykit.EventEmbeddingStored, n)
	sup := e.Supervisor(d, e.worker(cfg), e.reaper(d.Hook("reaper")))
	if err := sup.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Await(t, stored, "every record's vector")
	d.Halt()
	if err := sup.Drain(e.Ctx); err != nil {
		t.Fatalf("Drain = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if killed == 0 || storeWaits == 0 {
		t.Fatalf("terminated %d backends, %d store backoff waits: the outage was not seen", killed, storeWaits)
	}
	if e.pending() != 0 {
		t.Fatalf("pending = %d", e.pending())
	}
	emb.mu.Lock()
	for _, r := range recs {
		if c := emb.texts[r.EmbeddingText()]; c != 1 {
			t.Errorf("record %s embedded %d times", r.ID, c)
		}
	}
	emb.mu.Unlock()
	t.Logf("terminated %d backends; %d store backoff waits", killed, storeWaits)
}
