package storekit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestContain: a foreign error leaving an entry point becomes a
// content-free *memorykit.Error that keeps its kind, its recoverable
// marker and its cause (for errors.Is / errors.As), without printing it.
func TestContain(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-query-text"
	if storekit.Contain("op", nil) != nil {
		t.Fatal("Contain(nil) is not nil")
	}
	own := memorykit.FieldError("memorystore.create", "sources[0].ref", "too_long")
	if got := storekit.Contain("writer.explicit", own); got != error(own) {
		t.Fatalf("a code-shaped *Error was rewritten: %v", got)
	}
	hostSentinel := errors.New("host sentinel " + secret)
	cases := []struct {
		name      string
		in        error
		kind      error
		reason    string
		retry     bool
		reachable error
	}{
		{"untyped", errors.New("embed " + secret), memorykit.ErrUnavailable, "dependency_failed", false, nil},
		{"recoverable untyped", memorykit.Recoverable(hostSentinel), memorykit.ErrUnavailable, "dependency_failed", true, hostSentinel},
		{"wrapped *Error", fmt.Errorf("%s: %w", secret, memorykit.NewError("x.y", memorykit.ErrNotFound, "not_found")), memorykit.ErrNotFound, "not_found", false, nil},
		{"*Error with content in its fields", &memorykit.Error{Op: "host", Kind: memorykit.ErrIntegrity, Field: secret, Reason: secret, Retry: true}, memorykit.ErrIntegrity, "integrity", true, nil},
		{"*Error with a foreign kind", &memorykit.Error{Op: "host", Kind: errors.New(secret), Reason: "bad"}, memorykit.ErrUnavailable, "bad", false, nil},
		{"context", fmt.Errorf("%s: %w", secret, context.Canceled), memorykit.ErrUnavailable, "canceled", false, context.Canceled},
	}
	for _, c := range cases {
		got := storekit.Contain("recall.embed", c.in)
		me, ok := got.(*memorykit.Error)
		if !ok {
			t.Fatalf("%s: %T is not a *memorykit.Error", c.name, got)
		}
		if strings.Contains(got.Error(), secret) {
			t.Errorf("%s: message carries content: %q", c.name, got)
		}
		if !errors.Is(got, c.kind) || me.Reason != c.reason || memorykit.IsRecoverable(got) != c.retry || me.Op != "recall.embed" {
			t.Errorf("%s: got %q (recoverable %v), want kind %v reason %q recoverable %v", c.name, got, memorykit.IsRecoverable(got), c.kind, c.reason, c.retry)
		}
		if !errors.Is(got, c.in) {
			t.Errorf("%s: the cause is not reachable with errors.Is", c.name)
		}
		if c.reachable != nil && !errors.Is(got, c.reachable) {
			t.Errorf("%s: %v is not reachable", c.name, c.reachable)
		}
	}
	got := storekit.ContainAs("recall", memorykit.ErrIntegrity, "vector_failed", errors.New(secret))
	if me := got.(*memorykit.Error); !errors.Is(got, memorykit.ErrIntegrity) || me.Reason != "vector_failed" {
		t.Errorf("ContainAs defaults: %v", got)
	}
}
