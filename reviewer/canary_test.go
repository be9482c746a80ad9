package reviewer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/reviewer"
)

// TestDeniedActionsNameNoCallerChosenIdentifier: a lifecycle action on a
// project the reviewer has no grant on, with a caller-chosen record id,
// is refused before anything is emitted, so neither the project id nor
// the record id reaches an event. The same action on the granted project
// is emitted, so the check is not vacuous.
func TestDeniedActionsNameNoCallerChosenIdentifier(t *testing.T) {
	const project, id = "canaryproj4d2a", "mem_canary9e0f"
	ctx := context.Background()
	b := setup(t)
	ungranted := testkit.Scope(t, "acme", project)
	d := reviewer.Decision{ID: id, Reason: "checked"}
	for name, act := range map[string]func() error{
		"activate": func() error { _, err := b.r.Activate(ctx, b.rita, ungranted, d); return err },
		"reject":   func() error { _, err := b.r.Reject(ctx, b.rita, ungranted, d); return err },
		"forget":   func() error { _, err := b.r.Forget(ctx, b.rita, ungranted, d); return err },
		"erase":    func() error { _, err := b.r.Erase(ctx, b.rita, ungranted, d); return err },
		"correct": func() error {
			_, err := b.r.Correct(ctx, b.rita, ungranted, reviewer.CorrectionInput{Decision: d, Content: "x"})
			return err
		},
		"history": func() error { _, err := b.r.History(ctx, b.rita, ungranted, id); return err },
	} {
		if err := act(); !errors.Is(err, memorykit.ErrForbidden) {
			t.Fatalf("%s on an ungranted project: %v", name, err)
		}
	}
	b.sink.AssertNoCanary(t, project)
	b.sink.AssertNoCanary(t, id)
	if n := len(b.sink.Events()); n != 0 {
		t.Fatalf("%d events for denied actions, want 0", n)
	}
	if _, err := b.r.Forget(ctx, b.rita, b.scope, d); !errors.Is(err, memorykit.ErrNotFound) {
		t.Fatalf("forget of an unknown id on the granted project: %v", err)
	}
	if n := len(b.sink.Events()); n != 1 {
		t.Fatalf("%d events after an authorized action, want 1", n)
	}
}
