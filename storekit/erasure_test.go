package storekit_test

import (
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

func TestScrubReasonKeepsOnlyCodes(t *testing.T) {
	for in, want := range map[string]string{
		"subject_request": "subject_request", "": "", "asked by Jane Doe": "", "Jane": "", "jane-doe": "",
	} {
		if got := storekit.ScrubReason(in); got != want {
			t.Errorf("ScrubReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErasureJobIDs(t *testing.T) {
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	rec := memorykit.Record{Scope: scope, Sources: []memorykit.Source{{Kind: "conversation", Ref: "run-1/turn-2"}}}
	revs := []storekit.Revision{
		{Action: memorykit.ActionCreate, Reason: storekit.ExtractionCandidateReason("job_abc")},
		{Action: memorykit.ActionCorrect, Sources: []memorykit.Source{{Kind: "conversation", Ref: "run-1/turn-3"}}},
		{Action: memorykit.ActionForget, Reason: "extraction job not-a-create"},
	}
	got := storekit.ErasureJobIDs(rec, revs)
	want := map[string]bool{
		storekit.ExtractionJobID(scope, "run-1/turn-2"): true,
		storekit.ExtractionJobID(scope, "run-1/turn-3"): true,
		"job_abc": true,
	}
	if len(got) != len(want) {
		t.Fatalf("ErasureJobIDs = %v", got)
	}
	for _, id := range got {
		if !want[id] {
			t.Fatalf("ErasureJobIDs = %v; unexpected %s", got, id)
		}
	}
}
