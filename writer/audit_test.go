package writer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// TestWriteExplicitRefusesUntrustedActorKinds holds the explicit path to
// users and trusted tools even when the untrusted principal holds the
// write grant itself: only the actor-kind check can refuse these.
func TestWriteExplicitRefusesUntrustedActorKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, kind := range []memorykit.ActorKind{memorykit.ActorModel, memorykit.ActorProjection, memorykit.ActorReviewer, memorykit.ActorOperator, memorykit.ActorWorker} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			p := testkit.Principal("acme", kind, "granted-1")
			b.az.Grant("granted-1", b.scope, memorykit.PermWrite)
			_, err := b.w.WriteExplicit(ctx, p, b.scope, fact("k", "from an untrusted actor"))
			me := testkit.WantKind(t, err, memorykit.ErrForbidden)
			if me.Reason != "actor_kind_not_trusted" {
				t.Fatalf("reason = %q, want actor_kind_not_trusted", me.Reason)
			}
			if n := b.count(t); n != 0 {
				t.Fatalf("a refused write stored %d records", n)
			}
		})
	}
}

// failingCreate is a Host store whose Create fails with a driver error
// whose text carries a canary.
type failingCreate struct {
	storekit.Store
	err error
}

func (f failingCreate) Create(context.Context, memorykit.NewRecord) (memorykit.Record, error) {
	return memorykit.Record{}, f.err
}

// TestWriteContainsRawStoreErrors: a store's own error comes back from
// every write path as a *memorykit.Error whose text does not repeat the
// store's message; errors.Is still reaches the cause.
func TestWriteContainsRawStoreErrors(t *testing.T) {
	t.Parallel()
	const canary = "canary-rawstore-51d2"
	raw := errors.New("pq: duplicate value " + canary + " in relation memory")
	ctx := context.Background()
	b := setup(t)
	w, err := writer.New(writer.Config{Store: failingCreate{Store: b.store, err: raw}, Authorizer: b.az, Events: b.sink, Clock: testkit.NewClock()})
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func() error{
		"explicit": func() error { _, err := w.WriteExplicit(ctx, b.user, b.scope, fact("k", "v")); return err },
		"model":    func() error { _, err := w.WriteModel(ctx, b.model, b.scope, fact("k", "v")); return err },
	} {
		err := write()
		var me *memorykit.Error
		if !errors.As(err, &me) {
			t.Fatalf("%s: error %v (%T) is not a *memorykit.Error", name, err, err)
		}
		if _, raw := err.(*memorykit.Error); !raw {
			t.Fatalf("%s: error %T is not contained", name, err)
		}
		if strings.Contains(err.Error(), canary) {
			t.Fatalf("%s: error %q repeats the store's text", name, err)
		}
		if !errors.Is(err, raw) {
			t.Fatalf("%s: error %v lost its cause", name, err)
		}
	}
	b.sink.AssertNoCanary(t, canary)
}

// TestWritesRefuseBlankContent: content that shows nothing is refused on
// every write path with reason "blank", and nothing is stored.
func TestWritesRefuseBlankContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, blank := range []string{"   ", "\u200b\u200b", "\u2800", "\u3164\u3164", "\ufeff\u2060\n"} {
		b := setup(t)
		b.az.Grant("proj-1", b.scope, memorykit.PermWrite)
		proj := testkit.Principal("acme", memorykit.ActorProjection, "proj-1")
		for name, write := range map[string]func() error{
			"explicit":   func() error { _, err := b.w.WriteExplicit(ctx, b.user, b.scope, fact("k", blank)); return err },
			"model":      func() error { _, err := b.w.WriteModel(ctx, b.model, b.scope, fact("k", blank)); return err },
			"projection": func() error { _, err := b.w.WriteProjection(ctx, proj, b.scope, fact("k", blank)); return err },
		} {
			me := testkit.WantKind(t, write(), memorykit.ErrInvalidInput)
			if me.Reason != "blank" || me.Field != "content" {
				t.Fatalf("%s %+q: field %q reason %q, want content/blank", name, blank, me.Field, me.Reason)
			}
		}
		if n := b.count(t); n != 0 {
			t.Fatalf("blank writes stored %d records", n)
		}
	}
}

// TestRefusedWriteNamesNoCallerChosenProject: a write refused before
// authorization succeeds (no grant on the project, an untrusted actor
// kind) emits its write.failed event without the project the caller
// named, so a caller-chosen subject id never reaches an event.
func TestRefusedWriteNamesNoCallerChosenProject(t *testing.T) {
	t.Parallel()
	const canary = "canaryproj7c1e"
	ctx := context.Background()
	b := setup(t)
	ungranted := testkit.Scope(t, "acme", canary)
	if _, err := b.w.WriteExplicit(ctx, b.user, ungranted, fact("k", "v")); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("write on an ungranted project: %v", err)
	}
	if _, err := b.w.WriteModel(ctx, b.model, ungranted, fact("k", "v")); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("model write on an ungranted project: %v", err)
	}
	if _, err := b.w.WriteExplicit(ctx, b.model, ungranted, fact("k", "v")); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("explicit write by a model: %v", err)
	}
	if n := len(b.sink.OfKind(memorykit.EventWriteFailed)); n != 3 {
		t.Fatalf("%d write.failed events, want 3; the check would be vacuous", n)
	}
	b.sink.AssertNoCanary(t, canary)
}
