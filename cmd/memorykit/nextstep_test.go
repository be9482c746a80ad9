package main

import (
	"strings"
	"testing"

	"github.com/goagents/memorykit"
)

// TestNextStepNamesTheRemedy: a failed lifecycle command tells the
// operator what to do next, from the error's kind and reason alone.
func TestNextStepNamesTheRemedy(t *testing.T) {
	cases := []struct {
		cmd  string
		err  error
		want string
	}{
		{"forget", memorykit.NewError("x", memorykit.ErrInvalidTransition, "from_candidate"), "reject or activate the candidate first"},
		{"erase", memorykit.NewError("x", memorykit.ErrInvalidTransition, "from_active"), "forget it first"},
		{"candidates activate", memorykit.NewError("x", memorykit.ErrInvalidTransition, "from_active"), "already active"},
		{"forget", memorykit.NewError("x", memorykit.ErrVersionConflict, "version_conflict"), "--expect-version"},
		{"audit", memorykit.NewError("x", memorykit.ErrNotFound, "not_found"), "candidates list"},
	}
	for _, c := range cases {
		if got := nextStep(c.cmd, c.err); !strings.Contains(got, c.want) {
			t.Errorf("%s / %v: next step %q, want it to contain %q", c.cmd, c.err, got, c.want)
		}
	}
	if got := nextStep("status", memorykit.NewError("x", memorykit.ErrUnavailable, "connection_lost")); got != "" {
		t.Errorf("no remedy to name, got %q", got)
	}
}
