package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/writer"
)

// TestRuntimePurge: the runtime's purge entry point needs PermErase, erases
// the project and answers ErrDraining after Drain.
func TestRuntimePurge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := b.rt.Writer().WriteExplicit(ctx, b.alice, b.scope, writer.Input{Kind: memorykit.KindNote, Key: "k", Content: "v"})
	if err != nil {
		t.Fatal(err)
	}
	agent := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorModel, ID: "agent-1"}}
	if _, err := b.rt.Purge(ctx, agent, b.scope, "project_closed"); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("purge without PermErase: %v", err)
	}
	rep, err := b.rt.Purge(ctx, b.alice, b.scope, "project_closed")
	if err != nil || rep.Records != 1 || rep.RecordIDs[0] != res.Record.ID {
		t.Fatalf("purge = %+v, %v", rep, err)
	}
	if err := b.rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.rt.Purge(ctx, b.alice, b.scope, "project_closed"); !errors.Is(err, memorykit.ErrDraining) {
		t.Fatalf("purge after Drain: %v", err)
	}
}
