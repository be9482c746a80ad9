package supervisor_test

import (
	"context"
	"strings"
	"testing"
)

// TestLifecycleLogOrderAfterFinishedDrain: Stop after a Drain that
// finished logs "stopping" before "stopped" (and Drain "draining" before
// "drained"), in the order the states were reached.
func TestLifecycleLogOrderAfterFinishedDrain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorker("embed")
	sup := b.start(t, w)
	recv(t, w.ctxs, "run")
	if err := sup.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range b.logs.All() {
		if rest, ok := strings.CutPrefix(e.Message, "supervisor "); ok {
			switch rest {
			case "draining", "drained", "stopping", "stopped":
				got = append(got, rest)
			}
		}
	}
	if want := "draining drained stopping stopped"; strings.Join(got, " ") != want {
		t.Fatalf("lifecycle logs %q, want %q", strings.Join(got, " "), want)
	}
}
