package memorytools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/storekit"
)

// TestReadNeedsTheModelsReadGrant: read_memory needs PermRead for the
// model too; a model with no read right cannot read on the caller's grant.
func TestReadNeedsTheModelsReadGrant(t *testing.T) {
	b := setup(t, memoryBackend())
	r := b.add(t, memorykit.KindFact, "deploy region", "eu-west-1")
	p := b.provider(t, false)
	b.az.Revoke()
	b.az.Grant("user-1", b.scope, memorykit.PermRead, memorykit.PermWrite)
	b.az.Grant("model-1", b.scope, memorykit.PermModelWrite) // no read
	res, err := p.Call(b.ctx, memorytools.ReadMemory, json.RawMessage(`{"id":"`+r.ID+`"}`))
	if !errors.Is(err, memorykit.ErrForbidden) || res.Content != "" {
		t.Fatalf("read by a model without read: %+v %v", res, err)
	}
	if strings.Contains(res.Content, "eu-west-1") {
		t.Fatal("content reached the model")
	}
	// The same call with the model's grant back succeeds, so the refusal
	// above is the model's grant and nothing else.
	b.az.Grant("model-1", b.scope, memorykit.PermRead)
	if ok, err := p.Call(b.ctx, memorytools.ReadMemory, json.RawMessage(`{"id":"`+r.ID+`"}`)); err != nil || ok.IsError {
		t.Fatalf("read with both grants: %+v %v", ok, err)
	}
}

// failingGet is a Host store whose Get fails with a driver error whose
// text carries a canary.
type failingGet struct {
	storekit.LifecycleStore
	err error
}

func (f failingGet) Get(context.Context, memorykit.Scope, string) (memorykit.Record, error) {
	return memorykit.Record{}, f.err
}

// TestReadContainsRawStoreErrors: a store's own (non-recoverable) error
// from read_memory comes back as a *memorykit.Error whose text does not
// repeat the store's message, and nothing of it reaches logs or events.
func TestReadContainsRawStoreErrors(t *testing.T) {
	const canary = "canary-readstore-93c1"
	b := setup(t, memoryBackend())
	r := b.add(t, memorykit.KindFact, "deploy region", "eu-west-1")
	raw := errors.New("sql: row " + canary + " unreadable")
	cfg := b.config(false)
	cfg.Records = failingGet{LifecycleStore: b.store, err: raw}
	p, err := memorytools.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Call(b.ctx, memorytools.ReadMemory, json.RawMessage(`{"id":"`+r.ID+`"}`))
	if err == nil || res.Content != "" {
		t.Fatalf("read on a failing store: %+v %v", res, err)
	}
	if _, ok := err.(*memorykit.Error); !ok {
		t.Fatalf("error %T is not contained", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Fatalf("error %q repeats the store's text", err)
	}
	if !errors.Is(err, raw) {
		t.Fatalf("error %v lost its cause", err)
	}
	b.assertNoCanary(t, canary)
}

// TestRememberRefusesBlankContent: the model tool refuses content that
// shows nothing exactly as a direct write does: the fixed not-saved text,
// the failure flag, and nothing stored.
func TestRememberRefusesBlankContent(t *testing.T) {
	for _, blank := range []string{"   ", "\u200b\u200b", "\u2800\u2800", "\u3164", "\u2060\ufeff"} {
		b := setup(t, memoryBackend())
		p := b.provider(t, true)
		args, _ := json.Marshal(map[string]string{"kind": "fact", "key": "blank", "content": blank})
		res := call(t, p, memorytools.RememberProjectMemory, string(args))
		if res.Content != memorytools.NotSavedText || !res.IsError || !p.Failed() {
			t.Fatalf("blank %+q: %+v", blank, res)
		}
		if _, err := b.store.FindActive(b.ctx, b.scope, memorykit.KindFact, "blank"); !errors.Is(err, memorykit.ErrNotFound) {
			t.Fatalf("blank %+q was stored: %v", blank, err)
		}
		if ev := b.sink.OfKind(memorykit.EventWriteFailed); len(ev) != 1 || ev[0].Reason != "blank" {
			t.Fatalf("blank %+q: write.failed events %+v", blank, ev)
		}
	}
}

// TestCandidateNoteHoldsForAnotherKind: when a user's record under
// another kind governs the key, the model's write waits for review and the
// tool's note does not claim a record of the same kind exists.
func TestCandidateNoteHoldsForAnotherKind(t *testing.T) {
	b := setup(t, memoryBackend())
	testkit.Create(t, b.store, b.scope, memorykit.KindPreference, "deploy region", "eu-west-1")
	p := b.provider(t, true)
	res := call(t, p, memorytools.RememberProjectMemory, map[string]string{"kind": "fact", "key": "deploy region", "content": "us-east-1"})
	var out struct{ Status, Note string }
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil || res.IsError {
		t.Fatalf("result %+v: %v", res, err)
	}
	if out.Status != "pending_review" {
		t.Fatalf("status %q, want pending_review", out.Status)
	}
	if strings.Contains(out.Note, "this kind and key already exists") || !strings.Contains(out.Note, "another kind") {
		t.Fatalf("note %q is not true for a record of another kind", out.Note)
	}
	if _, err := b.store.FindActive(b.ctx, b.scope, memorykit.KindFact, "deploy region"); !errors.Is(err, memorykit.ErrNotFound) {
		t.Fatalf("a fact became active: %v", err)
	}
}
