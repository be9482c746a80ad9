package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/goagents/memorykit"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// TestExplicitExtractionLearnsFromTurns: with no model-backed extractor the
// Host extracts with extraction.Explicit. A finished turn's explicit
// statement becomes a candidate (hidden from search until activated); a
// statement the content policy refuses is left out while the other one of
// the same turn is still proposed; the job completes rather than failing;
// the credential reaches no log.
func TestExplicitExtractionLearnsFromTurns(t *testing.T) {
	e := newEnv(t, memoryBackend, nil)
	const p = "/v1/projects/apollo"
	e.must(http.StatusOK, aliceToken, "POST", p+"/chat",
		`{"message":"Remember that the db password=hunter2. We decided to ship on Fridays.","turn_id":"x1"}`)
	ctx := context.Background()
	for i := 0; i < 5000; i++ {
		c, err := e.host.store.CountJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Queued == 0 && c.Leased == 0 {
			if c.Done != 1 || c.Failed != 0 {
				t.Fatalf("jobs = %+v, want one done", c)
			}
			break
		}
		e.clk.Add(mkruntime.WorkersV1().ExtractPoll)
	}
	r := e.must(http.StatusOK, aliceToken, "GET", p+"/candidates", "")
	list, _ := r.get("candidates").([]any)
	if len(list) != 1 || r.str("candidates.0.kind") != string(memorykit.KindDecision) ||
		r.str("candidates.0.content") != "We decided to ship on Fridays" {
		t.Fatalf("candidates = %s", r.raw)
	}
	id := r.str("candidates.0.id")
	if contains(e.searchIDs(aliceToken, "apollo", "ship on Fridays"), id) {
		t.Fatalf("a candidate reached search")
	}
	e.must(http.StatusOK, aliceToken, "POST", p+"/candidates/"+id+"/activate", `{"reason":"ok"}`)
	if !contains(e.searchIDs(aliceToken, "apollo", "ship on Fridays"), id) {
		t.Fatalf("the activated memory is not found")
	}
	e.assertLogsFree("hunter2")
}
