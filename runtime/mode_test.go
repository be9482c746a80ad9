package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/writer"
)

// TestRequestsOnlyRunsNoWorkers: a Runtime started with ModeRequestsOnly
// serves sessions and stores jobs, but nothing embeds, extracts or reaps in
// its process however far the clock moves.
func TestRequestsOnlyRunsNoWorkers(t *testing.T) {
	cfg, b := config(t)
	cfg.Mode = mkruntime.ModeRequestsOnly
	start(t, cfg, b)
	ctx := context.Background()
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.rt.Start(ctx); !errors.Is(err, memorykit.ErrInvalidTransition) {
		t.Fatalf("second Start = %v", err)
	}
	s, err := b.rt.Session(context.Background(), mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "region", Content: "eu-west-1"}); err != nil {
		t.Fatal(err)
	}
	if res := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1/turn-1", Transcript: "remember: oncall = Bob"}); res.Status != extractworker.EnqueueQueued {
		t.Fatalf("FinishTurn = %+v", res)
	}
	for range 100 {
		b.clk.Add(time.Minute)
	}
	if c, err := b.store.CountJobs(ctx); err != nil || c.Queued != 1 || b.ext.Calls() != 0 {
		t.Fatalf("jobs %+v (%v), extractor calls %d: a worker ran", c, err, b.ext.Calls())
	}
	if n, err := b.store.PendingEmbeddings(ctx, b.cfg.Policy.EmbeddingProfile); err != nil || n != 1 {
		t.Fatalf("pending embeddings %d (%v): a worker ran", n, err)
	}
	if err := b.rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.rt.Session(context.Background(), mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"}); !errors.Is(err, memorykit.ErrDraining) {
		t.Fatalf("Session after Drain = %v", err)
	}
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.rt.Start(ctx); !errors.Is(err, memorykit.ErrStopped) {
		t.Fatalf("Start after Stop = %v", err)
	}
}

// TestWorkersOnlyServesNoRequests: a Runtime started with ModeWorkersOnly
// refuses every request path with a typed error and works the shared queue
// that a request-serving Runtime filled.
func TestWorkersOnlyServesNoRequests(t *testing.T) {
	cfg, b := config(t)
	front := cfg
	front.Mode, front.WorkerID = mkruntime.ModeRequestsOnly, "host-front"
	cfg.Mode = mkruntime.ModeWorkersOnly
	start(t, cfg, b)
	fr, err := mkruntime.New(front)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fr.Stop(context.Background()) })
	ctx := context.Background()
	if err := fr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"}
	_, err = b.rt.Session(context.Background(), req)
	var me *memorykit.Error
	if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrInvalidTransition) || me.Reason != "workers_only" {
		t.Fatalf("Session on a workers-only Runtime = %v", err)
	}
	if _, err := b.rt.Reviewer().Get(ctx, b.alice, b.scope, "mem-1"); !errors.Is(err, memorykit.ErrInvalidTransition) {
		t.Fatalf("Reviewer on a workers-only Runtime = %v", err)
	}
	s, err := fr.Session(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1/turn-1", Transcript: "remember: oncall = Bob"}); res.Status != extractworker.EnqueueQueued {
		t.Fatalf("FinishTurn = %+v", res)
	}
	eventually(t, b.clk, time.Second, "the workers-only Runtime extracting the job", func() bool {
		c, err := b.store.CountJobs(ctx)
		return err == nil && c.Done == 1
	})
	if err := b.rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fr.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestModeIsRequired: a Runtime without a known Mode is refused.
func TestModeIsRequired(t *testing.T) {
	t.Parallel()
	cfg, _ := config(t)
	for _, m := range []mkruntime.Mode{"", "everything", "ALL"} {
		c := cfg
		c.Mode = m
		if _, err := mkruntime.New(c); !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("Mode %q: New = %v", m, err)
		}
	}
}
