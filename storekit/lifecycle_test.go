package storekit_test

import (
	"slices"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

func TestLifecycleRulesMatchTheStateMachine(t *testing.T) {
	t.Parallel()
	// The whole table, written out: which action may start from which
	// status, and where it leads.
	tests := []struct {
		rule   storekit.LifecycleRule
		action memorykit.Action
		from   []memorykit.Status
		to     memorykit.Status // empty: keeps the status
	}{
		{storekit.RuleActivate, memorykit.ActionActivate, []memorykit.Status{memorykit.StatusCandidate}, memorykit.StatusActive},
		{storekit.RuleReject, memorykit.ActionReject, []memorykit.Status{memorykit.StatusCandidate}, memorykit.StatusRejected},
		{storekit.RuleSupersede, memorykit.ActionSupersede, []memorykit.Status{memorykit.StatusActive}, memorykit.StatusSuperseded},
		{storekit.RuleForget, memorykit.ActionForget, []memorykit.Status{memorykit.StatusActive}, memorykit.StatusInactive},
		{storekit.RuleErase, memorykit.ActionErase, []memorykit.Status{
			memorykit.StatusInactive, memorykit.StatusRejected, memorykit.StatusSuperseded,
		}, memorykit.StatusErased},
		{storekit.RuleCorrect, memorykit.ActionCorrect, []memorykit.Status{memorykit.StatusActive, memorykit.StatusCandidate}, ""},
	}
	for _, tc := range tests {
		t.Run(string(tc.action), func(t *testing.T) {
			r := tc.rule
			if r.Action() != tc.action {
				t.Fatalf("Action() = %q, want %q", r.Action(), tc.action)
			}
			if got := r.From(); !slices.Equal(got, tc.from) {
				t.Fatalf("From() = %v, want %v", got, tc.from)
			}
			for _, st := range memorykit.Statuses() {
				want := slices.Contains(tc.from, st)
				if r.Allows(st) != want {
					t.Errorf("Allows(%s) = %v, want %v", st, !want, want)
				}
				to := tc.to
				if to == "" {
					to = st
				}
				if got := r.Target(st); got != to {
					t.Errorf("Target(%s) = %s, want %s", st, got, to)
				}
			}
		})
	}
	if storekit.RuleErase.Allows(memorykit.StatusErased) {
		t.Fatal("an erased record can be erased again")
	}
	var zero storekit.LifecycleRule
	for _, st := range memorykit.Statuses() {
		if zero.Allows(st) {
			t.Fatalf("the zero rule allows %s", st)
		}
	}
}

func TestLifecycleRuleFromIsACopy(t *testing.T) {
	t.Parallel()
	from := storekit.RuleActivate.From()
	from[0] = memorykit.StatusErased
	if storekit.RuleActivate.Allows(memorykit.StatusErased) || !storekit.RuleActivate.Allows(memorykit.StatusCandidate) {
		t.Fatal("changing From()'s result changed the rule")
	}
}

func TestLifecycleRuleCheck(t *testing.T) {
	t.Parallel()
	rec := memorykit.Record{ID: "r1", Status: memorykit.StatusActive, Version: 3}
	if err := storekit.RuleForget.Check("test", storekit.Transition{ExpectVersion: 0}, rec); err != nil {
		t.Fatalf("no expected version: %v", err)
	}
	if err := storekit.RuleForget.Check("test", storekit.Transition{ExpectVersion: 3}, rec); err != nil {
		t.Fatalf("matching version: %v", err)
	}
	err := storekit.RuleForget.Check("test", storekit.Transition{ExpectVersion: 2}, rec)
	wantError(t, err, memorykit.ErrVersionConflict, "", "version_mismatch")
	err = storekit.RuleActivate.Check("test", storekit.Transition{}, rec)
	wantError(t, err, memorykit.ErrInvalidTransition, "", "from_active")
	// The version is checked before the status.
	err = storekit.RuleActivate.Check("test", storekit.Transition{ExpectVersion: 9}, rec)
	wantError(t, err, memorykit.ErrVersionConflict, "", "version_mismatch")
}
