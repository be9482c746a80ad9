package storekit_test

import (
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestGovernsKeyAgainst covers the rule record by record: only the
// actor's own untouched version 1, or its own version 2 that its own later
// write superseded, leaves a key ungoverned; a superseded version 3 or
// later (a correction came between), another actor's touch, or any
// forget, reject or erase governs; a candidate never does.
func TestGovernsKeyAgainst(t *testing.T) {
	model := memorykit.Actor{Kind: memorykit.ActorModel, ID: "model-1"}
	other := memorykit.Actor{Kind: memorykit.ActorReviewer, ID: "rita"}
	rec := func(st memorykit.Status, v int64, created, touched memorykit.Actor) memorykit.Record {
		return memorykit.Record{Status: st, Version: v, CreatedBy: created, TouchedBy: touched}
	}
	cases := []struct {
		name string
		rec  memorykit.Record
		want bool
	}{
		{"own active v1", rec(memorykit.StatusActive, 1, model, model), false},
		{"own superseded v2", rec(memorykit.StatusSuperseded, 2, model, model), false},
		{"own superseded v3", rec(memorykit.StatusSuperseded, 3, model, model), true},
		{"own superseded v4", rec(memorykit.StatusSuperseded, 4, model, model), true},
		{"own active v2 (corrected by itself)", rec(memorykit.StatusActive, 2, model, model), true},
		{"own active v3", rec(memorykit.StatusActive, 3, model, model), true},
		{"own inactive v2", rec(memorykit.StatusInactive, 2, model, model), true},
		{"own rejected v2", rec(memorykit.StatusRejected, 2, model, model), true},
		{"own erased v3", rec(memorykit.StatusErased, 3, model, model), true},
		{"own active touched by another", rec(memorykit.StatusActive, 2, model, other), true},
		{"another's active v1", rec(memorykit.StatusActive, 1, other, other), true},
		{"another's superseded v2", rec(memorykit.StatusSuperseded, 2, other, other), true},
		{"own candidate", rec(memorykit.StatusCandidate, 1, model, model), false},
		{"another's candidate", rec(memorykit.StatusCandidate, 1, other, other), false},
		{"another's candidate v3", rec(memorykit.StatusCandidate, 3, other, model), false},
	}
	for _, c := range cases {
		if got := storekit.GovernsKeyAgainst(c.rec, model); got != c.want {
			t.Errorf("%s: GovernsKeyAgainst = %v, want %v", c.name, got, c.want)
		}
	}
}
