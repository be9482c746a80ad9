package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/runtime/runtimetest"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
	"github.com/goagents/memorykit/writer"
)

// outage makes the workers' store calls fail recoverably while down is set,
// the way a database that is restarting or a schema that is briefly
// missing does. The request path (Lifecycle, Recall) is untouched.
type outage struct{ down atomic.Bool }

func (o *outage) err(op string) error {
	if !o.down.Load() {
		return nil
	}
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "store_down", Retry: true}
}

type outageEmbeddings struct {
	storekit.EmbeddingStore
	o *outage
}

func (s outageEmbeddings) LeaseEmbeddings(ctx context.Context, p storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	if err := s.o.err("test.lease_embeddings"); err != nil {
		return nil, err
	}
	return s.EmbeddingStore.LeaseEmbeddings(ctx, p)
}

func (s outageEmbeddings) ReapEmbeddingLeases(ctx context.Context) (int, error) {
	if err := s.o.err("test.reap_embeddings"); err != nil {
		return 0, err
	}
	return s.EmbeddingStore.ReapEmbeddingLeases(ctx)
}

type outageJobs struct {
	storekit.JobStore
	o *outage
}

func (s outageJobs) LeaseJobs(ctx context.Context, p storekit.JobLease) ([]storekit.Job, error) {
	if err := s.o.err("test.lease_jobs"); err != nil {
		return nil, err
	}
	return s.JobStore.LeaseJobs(ctx, p)
}

func (s outageJobs) ReapJobLeases(ctx context.Context) (int, error) {
	if err := s.o.err("test.reap_jobs"); err != nil {
		return 0, err
	}
	return s.JobStore.ReapJobLeases(ctx)
}

// stepper advances a mock clock in steps no longer than any actor's
// longest wait (30s: polls 1s, reaping 5s, store backoff at most 30s)
// and, after each step, waits (on the OnWait hook, with a
// real-time guard against a hang) until every actor has armed its next
// wait: so each step runs at least one round of every actor.
type stepper struct {
	t     *testing.T
	clk   *clock.Mock
	waits chan string
}

func newStepper(t *testing.T, clk *clock.Mock, cfg *mkruntime.Config) *stepper {
	s := &stepper{t: t, clk: clk, waits: make(chan string, 10000)}
	runtimetest.WithHooks(cfg, runtimetest.Hooks{OnWait: func(actor string, _ supervisor.Wait) { s.waits <- actor }})
	return s
}

// armed returns once each actor has armed a wait.
func (s *stepper) armed() {
	s.t.Helper()
	left := map[string]bool{mkruntime.ActorEmbed: true, mkruntime.ActorExtract: true, mkruntime.ActorReap: true}
	for len(left) > 0 {
		select {
		case a := <-s.waits:
			delete(left, a)
		case <-time.After(time.Minute): // a guard against a hang, not a wait for work
			s.t.Fatalf("actors %v armed no wait", left)
		}
	}
}

func (s *stepper) step(d time.Duration) {
	s.t.Helper()
	s.clk.Add(d)
	s.armed()
}

// until steps by d until cond holds, at most n steps.
func (s *stepper) until(d time.Duration, n int, what string, cond func() bool) {
	s.t.Helper()
	for i := 0; i < n; i++ {
		if cond() {
			return
		}
		s.step(d)
	}
	if !cond() {
		s.t.Fatalf("%s did not happen within %d steps of %v", what, n, d)
	}
}

func healthString(h mkruntime.Health) string {
	out := fmt.Sprintf("ok=%v state=%s", h.OK, h.State)
	for _, a := range h.Actors {
		out += fmt.Sprintf(" [%s %s %s since=%s failures=%d]", a.Name, a.State, a.Reason, a.Since.Format(time.RFC3339), a.Failures)
	}
	return out
}

func allIn(h mkruntime.Health, state supervisor.ActorState) bool {
	if len(h.Actors) != 3 {
		return false
	}
	for _, a := range h.Actors {
		if a.State != state {
			return false
		}
	}
	return true
}

func countEvents(sink *testkit.Sink, kind memorykit.EventKind, actor string) int {
	n := 0
	for _, e := range sink.Events() {
		if e.Kind == kind && (actor == "" || e.Actor == actor) {
			n++
		}
	}
	return n
}

// TestWorkersNeverGiveUpOnRecoverableStoreErrors is hole 7 of issue 10:
// the workers' store fails recoverably for two hours on the mock clock (the
// supervisor's old give-up limit is a few minutes), then comes back. No
// actor gives up; Health shows each backing off with the reason code while
// the outage lasts and running after; one degraded and one recovered event
// per actor; and the record written during the outage gets embedded.
func TestWorkersNeverGiveUpOnRecoverableStoreErrors(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		clk := testkit.NewClock()
		store := be.Open(t, clk)
		cfg, b := configOn(t, clk, store)
		o := &outage{}
		cfg.Stores.Embeddings = outageEmbeddings{EmbeddingStore: store, o: o}
		cfg.Stores.Jobs = outageJobs{JobStore: store, o: o}
		st := newStepper(t, clk, &cfg)
		start(t, cfg, b)
		ctx := context.Background()
		if h := b.rt.Health(); h.OK || h.State != "new" || !allIn(h, supervisor.ActorStopped) {
			t.Fatalf("health before Start: %s", healthString(h))
		}
		if err := b.rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		st.armed()
		if h := b.rt.Health(); !h.OK || !allIn(h, supervisor.ActorRunning) {
			t.Fatalf("health after Start: %s", healthString(h))
		}

		o.down.Store(true)
		downAt := clk.Now()
		s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1", WriteIntent: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1"}); err != nil {
			t.Fatal(err)
		}
		st.until(30*time.Second, 10, "every actor backing off", func() bool { return allIn(b.rt.Health(), supervisor.ActorBackingOff) })
		// Two hours of outage at the 30s maximum store backoff.
		for i := 0; i < 240; i++ {
			st.step(30 * time.Second)
		}
		h := b.rt.Health()
		if h.OK || !allIn(h, supervisor.ActorBackingOff) {
			t.Fatalf("health during the outage: %s", healthString(h))
		}
		for _, a := range h.Actors {
			if a.Reason != "store_down" || a.Since.Before(downAt) || a.Failures < 200 {
				t.Fatalf("actor during the outage: %+v", a)
			}
		}
		if n, err := store.PendingEmbeddings(ctx, "memorykit/hash-v1"); err != nil || n != 1 {
			t.Fatalf("pending during the outage = %d, %v", n, err)
		}
		if n := countEvents(b.sink, memorykit.EventActorGaveUp, ""); n != 0 {
			t.Fatalf("%d actors gave up", n)
		}

		o.down.Store(false)
		st.until(30*time.Second, 10, "the record's embedding", func() bool {
			n, err := store.PendingEmbeddings(ctx, "memorykit/hash-v1")
			return err == nil && n == 0
		})
		st.until(30*time.Second, 10, "every actor running", func() bool { return b.rt.Health().OK })
		for _, a := range b.rt.Health().Actors {
			actor := string(memorykit.ActorWorker) + ":" + a.Name
			if d, r := countEvents(b.sink, memorykit.EventActorDegraded, actor), countEvents(b.sink, memorykit.EventActorRecovered, actor); d != 1 || r != 1 {
				t.Fatalf("actor %s: %d degraded and %d recovered events, want 1 and 1", a.Name, d, r)
			}
		}
		for _, e := range b.sink.Events() {
			if e.Kind == memorykit.EventActorDegraded && e.Reason != "store_down" {
				t.Fatalf("degraded event %+v", e)
			}
		}
		if err := b.rt.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if h := b.rt.Health(); h.OK || h.State != "stopped" || !allIn(h, supervisor.ActorStopped) {
			t.Fatalf("health after Stop: %s", healthString(h))
		}
	})
}

// TestPostgresHiddenSchemaDoesNotKillTheWorkers is hole 7 of issue 10 on a
// real database: the schema is renamed away (ALTER SCHEMA ... RENAME) for
// ten minutes of the mock clock and then renamed back. The workers back off
// with a SQLSTATE reason instead of giving up, Health says so, and once the
// schema is back they run again and embed a new record.
func TestPostgresHiddenSchemaDoesNotKillTheWorkers(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	clk := testkit.NewClock()
	store := db.Open(t, clk)
	cfg, b := configOn(t, clk, store)
	st := newStepper(t, clk, &cfg)
	start(t, cfg, b)
	admin := pgtest.Connect(t, db.DSN)
	ctx := context.Background()
	hidden := db.Schema + "_hidden"
	rename := func(from, to string) {
		t.Helper()
		if _, err := admin.Exec(ctx, "ALTER SCHEMA "+from+" RENAME TO "+to); err != nil {
			t.Fatalf("rename schema: %v", err)
		}
	}
	isHidden := false
	t.Cleanup(func() {
		if isHidden { // put it back so the schema's own cleanup drops it
			_, _ = admin.Exec(context.Background(), "ALTER SCHEMA "+hidden+" RENAME TO "+db.Schema)
		}
	})

	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	st.armed()
	rename(db.Schema, hidden)
	isHidden = true
	hiddenAt := clk.Now()
	st.until(30*time.Second, 10, "every actor backing off", func() bool { return allIn(b.rt.Health(), supervisor.ActorBackingOff) })
	for clk.Since(hiddenAt) < 10*time.Minute {
		st.step(30 * time.Second)
	}
	h := b.rt.Health()
	if h.OK || !allIn(h, supervisor.ActorBackingOff) {
		t.Fatalf("health while the schema is hidden: %s", healthString(h))
	}
	t.Logf("health while the schema is hidden: %s", healthString(h))
	for _, a := range h.Actors {
		if !strings.HasPrefix(a.Reason, "sqlstate_") || a.Failures < 15 {
			t.Fatalf("actor while the schema is hidden: %+v", a)
		}
	}
	if n := countEvents(b.sink, memorykit.EventActorGaveUp, ""); n != 0 {
		t.Fatalf("%d actors gave up", n)
	}

	rename(hidden, db.Schema)
	isHidden = false
	s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1", WriteIntent: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1"}); err != nil {
		t.Fatal(err)
	}
	st.until(30*time.Second, 10, "the record's embedding", func() bool {
		n, err := store.PendingEmbeddings(ctx, "memorykit/hash-v1")
		return err == nil && n == 0
	})
	st.until(30*time.Second, 10, "every actor running", func() bool { return b.rt.Health().OK })
	for _, a := range b.rt.Health().Actors {
		actor := string(memorykit.ActorWorker) + ":" + a.Name
		if d, r := countEvents(b.sink, memorykit.EventActorDegraded, actor), countEvents(b.sink, memorykit.EventActorRecovered, actor); d != 1 || r != 1 {
			t.Fatalf("actor %s: %d degraded and %d recovered events, want 1 and 1", a.Name, d, r)
		}
	}
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestStopBeforeStartIsFinal is hole 9 of issue 10: Stop before Start used
// to leave the Runtime startable. Stop is final: a later Start is a typed
// ErrStopped error, no request path opens, and nothing runs.
func TestStopBeforeStartIsFinal(t *testing.T) {
	t.Parallel()
	cfg, b := config(t)
	start(t, cfg, b)
	ctx := context.Background()
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	err := b.rt.Start(ctx)
	var me *memorykit.Error
	if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrStopped) || me.Reason != "stopped" {
		t.Fatalf("Start after Stop = %v, want a typed ErrStopped", err)
	}
	if _, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"}); !errors.Is(err, memorykit.ErrStopped) {
		t.Fatalf("Session after Stop = %v, want ErrStopped", err)
	}
	if h := b.rt.Health(); h.OK || h.State != "stopped" || !allIn(h, supervisor.ActorStopped) {
		t.Fatalf("health: %s", healthString(h))
	}
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}
