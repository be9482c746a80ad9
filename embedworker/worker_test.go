package embedworker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

func runOnce(t *testing.T, w *embedworker.Worker) embedworker.Round {
	t.Helper()
	r, err := w.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return r
}

// TestBatches: records are leased and embedded BatchSize at a time, one
// Embed call per batch; candidates are never embedded; afterwards nothing
// is pending and the vector channel finds each record by its own text.
func TestBatches(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		recs := e.createN(25)
		if _, err := e.store.Create(e.Ctx, memorykit.NewRecord{
			Scope: e.Scope, Kind: memorykit.KindNote, Key: "proposal", Content: "not reviewed yet",
			Status: memorykit.StatusCandidate, Actor: author,
		}); err != nil {
			t.Fatal(err)
		}
		if got := e.pending(); got != 25 {
			t.Fatalf("pending = %d, want 25", got)
		}
		emb := newEmbedder(e.Clock)
		w := e.worker(e.config("embed-1", emb))
		var rounds []embedworker.Round
		for {
			r := runOnce(t, w)
			if r.Leased == 0 {
				break
			}
			rounds = append(rounds, r)
		}
		batches, _ := emb.calls()
		if len(batches) != 3 || batches[0] != 10 || batches[1] != 10 || batches[2] != 5 {
			t.Fatalf("Embed batches = %v, want [10 10 5]", batches)
		}
		stored := 0
		for _, r := range rounds {
			stored += r.Stored
		}
		if stored != 25 || e.pending() != 0 {
			t.Fatalf("stored %d, pending %d", stored, e.pending())
		}
		events := 0
		for _, ev := range e.Sink.OfKind(memorykit.EventEmbeddingStored) {
			events += ev.Count
			if len(ev.RecordIDs) != ev.Count || ev.Channel != memorykit.ChannelVector || ev.SubjectID != "project-1" {
				t.Errorf("stored event = %+v", ev)
			}
		}
		if events != 25 {
			t.Fatalf("stored events count %d", events)
		}
		for _, r := range []memorykit.Record{recs[0], recs[13], recs[24]} {
			hits := e.vectorHits(r.EmbeddingText())
			if len(hits) == 0 || hits[0].ID != r.ID || hits[0].Score < 0.9999 {
				t.Fatalf("vector search for %s: %+v", r.ID, hits)
			}
		}
	})
}

// TestStaleHashGuard: a record corrected between lease and store is not
// given the vector of its old content. The store answers ErrStale, which
// the worker counts without error; the next round embeds the corrected
// text.
func TestStaleHashGuard(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		r := e.create("db engine", "the primary database is MySQL 5.7")
		emb := newEmbedder(e.Clock)
		local := embedder.NewLocal()
		emb.script(func(ctx context.Context, texts []string) ([][]float32, error) {
			// A reviewer corrects the record while its old text is being
			// embedded.
			if _, err := e.store.Correct(ctx, storekit.Correction{
				Transition: storekit.Transition{Scope: e.Scope, ID: r.ID, Actor: author, Reason: "fix"},
				Content:    "the primary database is PostgreSQL 15",
			}); err != nil {
				t.Errorf("Correct: %v", err)
			}
			return local.Embed(ctx, texts)
		})
		w := e.worker(e.config("embed-1", emb))
		got := runOnce(t, w)
		if got.Leased != 1 || got.Stale != 1 || got.Stored != 0 {
			t.Fatalf("round = %+v, want the vector refused as stale", got)
		}
		if e.pending() != 1 {
			t.Fatal("the corrected record is not pending")
		}
		if hits := e.vectorHits(r.EmbeddingText()); len(hits) != 0 {
			t.Fatalf("a stale vector is in use: %+v", hits)
		}
		emb.script(nil)
		if got := runOnce(t, w); got.Stored != 1 {
			t.Fatalf("second round = %+v", got)
		}
		fixed, err := e.store.Get(e.Ctx, e.Scope, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		hits := e.vectorHits(fixed.EmbeddingText())
		if len(hits) != 1 || hits[0].ID != r.ID || hits[0].Score < 0.9999 {
			t.Fatalf("vector of the corrected text: %+v", hits)
		}
		if e.pending() != 0 {
			t.Fatal("still pending")
		}
	})
}

// TestRecoverableRetryAtInstant: a recoverable Embedder failure releases
// the batch with RetryAt = now + Retry.Delay(attempt); the records are
// leased again exactly then, not a microsecond earlier.
func TestRecoverableRetryAtInstant(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		e.createN(3)
		emb := newEmbedder(e.Clock)
		fails := 2
		emb.script(func(ctx context.Context, texts []string) ([][]float32, error) {
			if fails > 0 {
				fails--
				return nil, memorykit.Recoverable(&memorykit.Error{Op: "test.embed", Kind: memorykit.ErrUnavailable, Reason: "rate_limited"})
			}
			return embedder.NewLocal().Embed(ctx, texts)
		})
		w := e.worker(e.config("embed-1", emb))
		t0 := e.Clock.Now()
		if r := runOnce(t, w); r.Retried != 3 {
			t.Fatalf("round = %+v", r)
		}
		// Attempt 1 waits Initial (10s); attempt 2 waits 30s.
		for _, at := range []time.Time{t0.Add(10 * time.Second), t0.Add(40 * time.Second)} {
			e.Clock.Set(at.Add(-time.Microsecond))
			if r := runOnce(t, w); r.Leased != 0 {
				t.Fatalf("leased %d before the retry time", r.Leased)
			}
			e.Clock.Set(at)
			if r := runOnce(t, w); r.Leased != 3 {
				t.Fatalf("leased %d at the retry time", r.Leased)
			}
		}
		_, times := emb.calls()
		want := []time.Duration{0, 10 * time.Second, 40 * time.Second}
		if len(times) != len(want) {
			t.Fatalf("%d Embed calls", len(times))
		}
		for i := range want {
			if got := times[i].Sub(t0); got != want[i] {
				t.Errorf("call %d at +%v, want +%v", i+1, got, want[i])
			}
		}
		if e.pending() != 0 {
			t.Fatal("still pending after the successful retry")
		}
		evs := e.Sink.OfKind(memorykit.EventEmbeddingRetry)
		if len(evs) != 2 || evs[0].Reason != "rate_limited" || evs[0].Count != 3 || evs[1].Attempt != 2 {
			t.Fatalf("retry events = %+v", evs)
		}
	})
}

// TestNonRecoverableParks: a permanent Embedder failure (or vectors of the
// wrong shape) parks the records: they stay pending for the operator, are
// not leased again, and an EventEmbeddingFailed says why. DeleteEmbeddings
// resets them.
func TestNonRecoverableParks(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		e.createN(2)
		emb := newEmbedder(e.Clock)
		emb.script(func(context.Context, []string) ([][]float32, error) {
			return nil, &memorykit.Error{Op: "test.embed", Kind: memorykit.ErrInvalidConfig, Reason: "model_not_found"}
		})
		w := e.worker(e.config("embed-1", emb))
		if r := runOnce(t, w); r.Parked != 2 {
			t.Fatalf("round = %+v", r)
		}
		if e.pending() != 2 {
			t.Fatalf("pending = %d, want the parked records counted", e.pending())
		}
		e.Clock.Add(48 * time.Hour)
		if r := runOnce(t, w); r.Leased != 0 {
			t.Fatalf("a parked record was leased again")
		}
		evs := e.Sink.OfKind(memorykit.EventEmbeddingFailed)
		if len(evs) != 1 || evs[0].Reason != "model_not_found" || len(evs[0].RecordIDs) != 2 {
			t.Fatalf("failed events = %+v", evs)
		}

		// Vectors of the wrong dimension are refused before the store.
		if _, err := e.store.DeleteAllEmbeddings(e.Ctx, embedder.LocalProfile); err != nil {
			t.Fatal(err)
		}
		emb.script(func(_ context.Context, texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i := range out {
				out[i] = []float32{1, 2, 3}
			}
			return out, nil
		})
		if r := runOnce(t, w); r.Parked != 2 {
			t.Fatalf("round with bad vectors = %+v", r)
		}
		if evs := e.Sink.OfKind(memorykit.EventEmbeddingFailed); evs[len(evs)-1].Reason != embedworker.ReasonBadVectors {
			t.Fatalf("reason %q", evs[len(evs)-1].Reason)
		}

		// The operator fixes the embedder and resets the park state.
		emb.script(nil)
		if _, err := e.store.DeleteAllEmbeddings(e.Ctx, embedder.LocalProfile); err != nil {
			t.Fatal(err)
		}
		if r := runOnce(t, w); r.Stored != 2 {
			t.Fatalf("round after reset = %+v", r)
		}
		if e.pending() != 0 {
			t.Fatal("still pending")
		}
	})
}

// TestEmbedDeadline: EmbedDeadline is measured on the injected clock; an
// Embedder that overruns it fails the batch recoverably.
func TestEmbedDeadline(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		e.createN(1)
		entered := make(chan struct{})
		emb := newEmbedder(e.Clock)
		emb.script(func(ctx context.Context, texts []string) ([][]float32, error) {
			close(entered)
			<-ctx.Done()
			return embedder.NewLocal().Embed(context.Background(), texts) // a late answer
		})
		w := e.worker(e.config("embed-1", emb))
		done := make(chan embedworker.Round)
		go func() {
			r, _ := w.RunOnce(context.Background())
			done <- r
		}()
		<-entered
		e.Clock.Add(embedDeadline)
		if r := <-done; r.Retried != 1 || r.Stored != 0 {
			t.Fatalf("round = %+v", r)
		}
		if evs := e.Sink.OfKind(memorykit.EventEmbeddingRetry); len(evs) != 1 || evs[0].Reason != embedworker.ReasonDeadline {
			t.Fatalf("retry events = %+v", evs)
		}
	})
}

// TestRecallWithoutVectors: exact and full-text recall work while vectors
// are missing; once the worker has run, the vector channel joins in.
func TestRecallWithoutVectors(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		r := e.create("deploy window", "deploys happen on tuesday mornings after the standup")
		e.createN(5)
		az := testkit.NewAuthorizer().Grant("user-1", e.Scope, memorykit.PermRead)
		eng, err := recall.New(recall.Config{
			Store: e.store, Embedder: embedder.NewLocal(), Authorizer: az, Policy: testkit.Policy(),
			Clock: e.Clock, Events: e.Sink, Logger: e.Log,
		})
		if err != nil {
			t.Fatal(err)
		}
		ask := func() recall.Result {
			t.Helper()
			res, err := eng.Recall(e.Ctx, recall.Request{
				Principal: testkit.Principal("tenant-a", memorykit.ActorUser, "user-1"),
				Scope:     e.Scope, Query: "when are deploys? tuesday", Keys: []string{"deploy window"},
			})
			if err != nil {
				t.Fatalf("Recall: %v", err)
			}
			if len(res.Entries) == 0 || res.Entries[0].ID != r.ID {
				t.Fatalf("recall entries = %+v", res.Entries)
			}
			return res
		}
		before := ask()
		tr, _ := before.Trace.Record(r.ID)
		if tr.Ranks[memorykit.ChannelExact] != 1 || tr.Ranks[memorykit.ChannelFullText] != 1 {
			t.Fatalf("ranks without vectors = %v", tr.Ranks)
		}
		if ch, _ := before.Trace.Channel(memorykit.ChannelVector); ch.Hits != 0 || ch.Degraded {
			t.Fatalf("vector channel without vectors = %+v", ch)
		}
		w := e.worker(e.config("embed-1", newEmbedder(e.Clock)))
		for runOnce(t, w).Leased > 0 {
		}
		after := ask()
		if ch, _ := after.Trace.Channel(memorykit.ChannelVector); ch.Hits == 0 {
			t.Fatalf("vector channel after embedding = %+v", ch)
		}
	})
}

// TestRunUntilEmpty: the operator rebuild deletes a profile's embeddings
// and drives PendingEmbeddings back to zero, reporting progress.
func TestRunUntilEmpty(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const n = 120
		e.createN(n)
		w := e.worker(e.config("embed-1", newEmbedder(e.Clock)))
		if _, err := w.RunUntilEmpty(e.Ctx, embedworker.RebuildOptions{MaxIdleRounds: 3}); err != nil {
			t.Fatalf("first build: %v", err)
		}
		deleted, err := e.store.DeleteAllEmbeddings(e.Ctx, embedder.LocalProfile)
		if err != nil || deleted != n {
			t.Fatalf("DeleteEmbeddings = %d, %v", deleted, err)
		}
		if e.pending() != n {
			t.Fatalf("pending = %d after delete", e.pending())
		}
		var seen []embedworker.Progress
		p, err := w.RunUntilEmpty(e.Ctx, embedworker.RebuildOptions{
			MaxIdleRounds: 3, OnProgress: func(p embedworker.Progress) { seen = append(seen, p) },
		})
		if err != nil {
			t.Fatalf("rebuild: %v", err)
		}
		if p.Pending != 0 || p.Stored != n || p.Rounds != n/10 || e.pending() != 0 {
			t.Fatalf("progress = %+v, pending %d", p, e.pending())
		}
		if len(seen) != n/10 {
			t.Fatalf("%d progress reports", len(seen))
		}
		for i := 1; i < len(seen); i++ {
			if seen[i].Stored <= seen[i-1].Stored || seen[i].Pending >= seen[i-1].Pending {
				t.Fatalf("progress not advancing: %+v then %+v", seen[i-1], seen[i])
			}
		}
		if seen[0].Pending != n {
			t.Fatalf("first report pending %d", seen[0].Pending)
		}
	})
}

// TestRunUntilEmptyStalls: records that stay pending but cannot be leased
// (parked) end the rebuild with ErrStalled after MaxIdleRounds idle
// rounds, each a PollInterval apart on the clock.
func TestRunUntilEmptyStalls(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		e.createN(3)
		emb := newEmbedder(e.Clock)
		emb.script(func(context.Context, []string) ([][]float32, error) {
			return nil, errors.New("permanent provider failure")
		})
		waits := make(chan supervisor.Wait, 10)
		cfg := e.config("embed-1", emb)
		cfg.OnWait = func(w supervisor.Wait) { waits <- w }
		w := e.worker(cfg)
		type result struct {
			p   embedworker.Progress
			err error
		}
		done := make(chan result)
		go func() {
			p, err := w.RunUntilEmpty(e.Ctx, embedworker.RebuildOptions{MaxIdleRounds: 3})
			done <- result{p, err}
		}()
		for i := 0; i < 2; i++ {
			got := <-waits
			if got.Reason != supervisor.WaitIdle || got.Delay != pollInterval {
				t.Fatalf("wait %+v", got)
			}
			e.Clock.Add(got.Delay)
		}
		res := <-done
		testkit.WantKind(t, res.err, memorykit.ErrUnavailable)
		if !errors.Is(res.err, embedworker.ErrStalled) {
			t.Fatalf("err = %v, want ErrStalled", res.err)
		}
		if res.p.Pending != 3 || res.p.Parked != 3 || res.p.Rounds != 4 {
			t.Fatalf("progress = %+v", res.p)
		}
		if _, err := w.RunUntilEmpty(e.Ctx, embedworker.RebuildOptions{}); err == nil {
			t.Fatal("MaxIdleRounds 0 accepted")
		}
	})
}

// TestWorkContextEndHandsBack: when the work context ends mid-batch the
// leases are handed back at once, so another worker takes the records
// without waiting for expiry.
func TestWorkContextEndHandsBack(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		e.createN(4)
		entered := make(chan struct{})
		emb := newEmbedder(e.Clock)
		emb.script(func(ctx context.Context, _ []string) ([][]float32, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		a := e.worker(e.config("embed-a", emb))
		fetchCtx, drain := context.WithCancel(context.Background())
		workCtx, stop := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- a.Run(fetchCtx, workCtx) }()
		<-entered
		drain()
		stop()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if n := e.Logs.FilterMessage("lease handed back").Len(); n != 4 {
			t.Fatalf("%d hand-backs logged, want 4", n)
		}
		b := e.worker(e.config("embed-b", newEmbedder(e.Clock)))
		if r := runOnce(t, b); r.Leased != 4 || r.Stored != 4 {
			t.Fatalf("second worker: %+v", r)
		}
	})
}

// TestPanicLeavesLeaseForReaper: an Embedder panic kills the worker with
// its leases held; after expiry the reaper returns them and another
// worker embeds the records.
func TestPanicLeavesLeaseForReaper(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		e.createN(3)
		emb := newEmbedder(e.Clock)
		emb.script(func(context.Context, []string) ([][]float32, error) { panic("embedder bug") })
		a := e.worker(e.config("embed-a", emb))
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			_, _ = a.RunOnce(context.Background())
		}()
		b := e.worker(e.config("embed-b", newEmbedder(e.Clock)))
		if r := runOnce(t, b); r.Leased != 0 {
			t.Fatal("held leases were leased again")
		}
		e.Clock.Add(leaseTTL)
		n, err := e.reaper(nil).RunOnce(e.Ctx)
		if err != nil || n.Embeddings != 3 {
			t.Fatalf("reaped %+v (%v)", n, err)
		}
		if r := runOnce(t, b); r.Stored != 3 {
			t.Fatalf("second worker: %+v", r)
		}
		if e.pending() != 0 {
			t.Fatal("still pending")
		}
	})
}

// roundThroughStoreRetries runs one round of w and, each time the worker
// waits to retry the store, checks the wait against the next of delays and
// advances the clock past it.
func (e *env) roundThroughStoreRetries(w *embedworker.Worker, waits <-chan supervisor.Wait, delays ...time.Duration) embedworker.Round {
	e.T.Helper()
	done := make(chan embedworker.Round)
	go func() {
		r, _ := w.RunOnce(context.Background())
		done <- r
	}()
	for _, want := range delays {
		got := <-waits
		if got.Reason != supervisor.WaitStoreRetry || got.Delay != want {
			e.T.Fatalf("wait %+v, want store_retry %v", got, want)
		}
		e.Clock.Add(got.Delay)
	}
	return <-done
}

// TestRecoverableStoreErrors: a recoverable PutEmbedding failure is retried
// after StoreBackoff within the lease; a recoverable lease failure in Run
// backs off and then works again.
func TestRecoverableStoreErrors(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		e.createN(2)
		fs := newFaultStore(e.store)
		fs.FailCalls("PutEmbedding", 2, testkit.DBDown)
		waits := make(chan supervisor.Wait, 10)
		cfg := e.config("embed-1", newEmbedder(e.Clock))
		cfg.Store = fs
		cfg.OnWait = func(w supervisor.Wait) { waits <- w }
		w := e.worker(cfg)
		if r := e.roundThroughStoreRetries(w, waits, 100*time.Millisecond, 200*time.Millisecond); r.Stored != 2 {
			t.Fatalf("round = %+v", r)
		}

		e.createN(3)
		e.create("extra", "one more record to embed")
		fs.FailCalls("LeaseEmbeddings", 2, testkit.DBDown)
		fetchCtx, cancel := context.WithCancel(context.Background())
		ran := make(chan error)
		go func() { ran <- w.Run(fetchCtx, context.Background()) }()
		for _, want := range []supervisor.Wait{
			{Reason: supervisor.WaitStoreBackoff, Delay: 100 * time.Millisecond},
			{Reason: supervisor.WaitStoreBackoff, Delay: 200 * time.Millisecond},
			{Reason: supervisor.WaitIdle, Delay: pollInterval},
		} {
			got := <-waits
			if got != want {
				t.Fatalf("wait %+v, want %+v", got, want)
			}
			if got.Reason != supervisor.WaitIdle {
				e.Clock.Add(got.Delay)
			}
		}
		if e.pending() != 0 {
			t.Fatalf("pending = %d", e.pending())
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

// TestBatchPut: a store with PutEmbeddings gets one call per batch; a
// recoverable failure of the whole call is retried after StoreBackoff; a
// call refused as a whole for its input falls back to one PutEmbedding per
// record; any other failure, or an answer of the wrong length, leaves the
// leases to the reaper and stores nothing.
func TestBatchPut(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		fs := newBatchFaultStore(e.store)
		waits := make(chan supervisor.Wait, 10)
		cfg := e.config("embed-1", newEmbedder(e.Clock))
		cfg.Store = fs
		cfg.OnWait = func(w supervisor.Wait) { waits <- w }
		w := e.worker(cfg)

		e.createN(3)
		if r := runOnce(t, w); r.Stored != 3 {
			t.Fatalf("round = %+v", r)
		}
		if b, s := fs.calls(); b != 1 || s != 0 {
			t.Fatalf("PutEmbeddings %d calls, PutEmbedding %d; want 1 and 0", b, s)
		}

		// Recoverable: retried as a whole.
		e.create("second", "a second round of records")
		e.create("second-b", "and one more for it")
		fs.FailCalls("PutEmbeddings", 2, testkit.DBDown)
		if r := e.roundThroughStoreRetries(w, waits, 100*time.Millisecond, 200*time.Millisecond); r.Stored != 2 {
			t.Fatalf("round after recoverable failures = %+v", r)
		}
		if b, s := fs.calls(); b != 4 || s != 0 {
			t.Fatalf("PutEmbeddings %d calls, PutEmbedding %d; want 4 and 0", b, s)
		}

		// Refused as a whole for its input: one by one instead.
		e.create("third", "records stored one by one")
		e.create("third-b", "another stored alone")
		fs.FailCalls("PutEmbeddings", 1, memorykit.FieldError("test.put", "items", "above_max_list_size"))
		if r := runOnce(t, w); r.Stored != 2 {
			t.Fatalf("round after a refused batch = %+v", r)
		}
		if b, s := fs.calls(); b != 5 || s != 2 {
			t.Fatalf("PutEmbeddings %d calls, PutEmbedding %d; want 5 and 2", b, s)
		}
		if e.pending() != 0 {
			t.Fatalf("pending = %d", e.pending())
		}

		// A permanent failure, then a short answer: nothing is stored and
		// the leases stay until they expire.
		for i, fault := range []func(){
			func() {
				fs.FailCalls("PutEmbeddings", 1, &memorykit.Error{Op: "test.put", Kind: memorykit.ErrIntegrity, Reason: "broken"})
			},
			func() { fs.mu.Lock(); fs.short = true; fs.mu.Unlock() },
		} {
			e.create(fmt.Sprintf("fourth-%d", i), "records whose put fails")
			fault()
			if r := runOnce(t, w); r.Stored != 0 || r.Abandoned != 1 {
				t.Fatalf("fault %d: round = %+v", i, r)
			}
			if r := runOnce(t, w); r.Leased != 0 {
				t.Fatalf("fault %d: an abandoned lease was leased again before expiry", i)
			}
			e.Clock.Add(leaseTTL)
			if _, err := e.store.ReapEmbeddingLeases(e.Ctx); err != nil {
				t.Fatal(err)
			}
			fs.mu.Lock()
			fs.short = false
			fs.mu.Unlock()
			// The short answer came after the store had applied the
			// put, so that record needs nothing more.
			if r := runOnce(t, w); r.Stored != 1-i {
				t.Fatalf("fault %d: round after the reaper = %+v", i, r)
			}
		}
		if n := len(e.Sink.OfKind(memorykit.EventWorkerError)); n != 2 {
			t.Fatalf("worker error events = %d, want 2", n)
		}
		if e.pending() != 0 {
			t.Fatalf("pending = %d", e.pending())
		}
	})
}
