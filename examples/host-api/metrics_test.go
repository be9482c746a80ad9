package main

import (
	"net/http"
	"strings"
	"testing"
)

// testMetrics scrapes GET /metrics after a write and a search: the
// Prometheus exporter serves memorykit's instruments with their units, the
// counts match what happened, and no sample holds the written content or
// the query.
func testMetrics(t *testing.T, e *env) {
	const secret = "zebracanary"
	e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in "+secret)
	if ids := e.searchIDs(aliceToken, "apollo", "where does the API run "+secret); len(ids) != 1 {
		t.Fatalf("search found %v", ids)
	}
	r := e.must(http.StatusOK, "", "GET", "/metrics", "")
	t.Log(r.raw)
	for _, want := range []string{
		`memorykit_writes_total{memorykit_outcome="stored",memorykit_write_path="user"} 1`,
		`memorykit_recall_duration_seconds_count{memorykit_outcome="completed",memorykit_reason="ok"} 1`,
		`memorykit_recall_store_duration_seconds_count{memorykit_outcome="ok",memorykit_recall_vector="true"} 1`,
		`memorykit_runtime_state{memorykit_runtime_state="running"} 1`,
		`memorykit_actor_state{memorykit_actor="lease_reaper",memorykit_actor_state="running"} 1`,
		`memorykit_queue_depth{memorykit_job_state="queued"} 0`,
		`memorykit_embeddings_pending{memorykit_embedder_profile="memorykit/hash-v2"}`,
	} {
		if !strings.Contains(r.raw, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(r.raw, secret) {
		t.Errorf("scrape holds the content or query")
	}
}
