package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/pgstore"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// TestOverloadedIs503WithRetryAfter: the runtime's ErrOverloaded becomes
// 503 with Retry-After and the JSON error shape naming the kind and reason.
func TestOverloadedIs503WithRetryAfter(t *testing.T) {
	rec := httptest.NewRecorder()
	writeErr(rec, &memorykit.Error{Op: "runtime.recall", Kind: memorykit.ErrOverloaded, Field: "reads",
		Reason: mkruntime.ReasonQueueFull, Retry: true})
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != retryAfterSeconds {
		t.Fatalf("status %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	var body errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Error != "overloaded" || body.Reason != mkruntime.ReasonQueueFull {
		t.Fatalf("body %+v", body)
	}
	// Other unavailability carries no Retry-After.
	rec = httptest.NewRecorder()
	writeErr(rec, memorykit.NewError("x", memorykit.ErrUnavailable, "store_full"))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("unavailable: %d %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestDegradedRecallHeader(t *testing.T) {
	rec := httptest.NewRecorder()
	markDegraded(rec, true, "deadline")
	if got := rec.Header().Get(degradedHeader); got != "deadline" {
		t.Fatalf("header %q", got)
	}
	rec = httptest.NewRecorder()
	markDegraded(rec, false, "")
	if _, ok := rec.Header()[degradedHeader]; ok {
		t.Fatal("header on a recall that did not degrade")
	}
}

func TestHostPoolCoversAdmission(t *testing.T) {
	a := hostAdmission()
	c := pgConfig(pgstoreConfigForTest())
	if c.MaxConns < int32(a.MaxReads+a.MaxWrites) || c.Workers != hostWorkerConns {
		t.Fatalf("pool %d for %+v", c.MaxConns, a)
	}
}

func pgstoreConfigForTest() pgstore.Config { return pgstore.Config{} }
