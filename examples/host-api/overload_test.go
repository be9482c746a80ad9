package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// blockingRecall holds every Recall while blocked is set, after telling
// entered.
type blockingRecall struct {
	memorykit.RecallStore
	entered chan struct{}
	release chan struct{}
}

func (s blockingRecall) Recall(ctx context.Context, q memorykit.RecallQuery) (memorykit.RecallResult, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.RecallStore.Recall(ctx, q)
}

// TestHostAnswersOverload503: with one read slot and no queue, a search
// that arrives while another holds the slot is answered 503 overloaded
// with Retry-After and the JSON error shape, and /healthz reports
// "overloaded" (503) until the slot is free again.
func TestHostAnswersOverload503(t *testing.T) {
	block := blockingRecall{entered: make(chan struct{}, 4), release: make(chan struct{})}
	adm := mkruntime.Admission{MaxReads: 1, MaxWrites: 1}
	b := backend{name: "memorystore", options: func(*testing.T) Options {
		return Options{TombstoneSecret: testTombstoneSecret, admission: &adm, workerStores: func(s memorykit.Store) mkruntime.Stores {
			st := mkruntime.StoresOf(s)
			block.RecallStore = s
			st.Recall = block
			return st
		}}
	}}
	e := newEnv(t, b, nil)
	var once sync.Once
	release := func() { once.Do(func() { close(block.release) }) }
	// Registered after newEnv's cleanup, so it runs first: a failed test
	// never leaves the Host's shutdown waiting on the held search.
	t.Cleanup(release)
	e.must(http.StatusOK, "", "GET", "/healthz", "")

	first := make(chan resp, 1)
	go func() { first <- e.do(aliceToken, "POST", apollo+"/search", `{"query":"deploy region"}`) }()
	<-block.entered

	req, err := http.NewRequest("POST", e.srv.URL+apollo+"/search", strings.NewReader(`{"query":"deploy region"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body errorBody
	err = json.NewDecoder(res.Body).Decode(&body)
	_ = res.Body.Close()
	if err != nil || res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != retryAfterSeconds ||
		body.Error != "overloaded" || body.Reason != mkruntime.ReasonQueueFull {
		t.Fatalf("overloaded search: %d %q %+v %v", res.StatusCode, res.Header.Get("Retry-After"), body, err)
	}
	if r := e.must(http.StatusServiceUnavailable, "", "GET", "/healthz", ""); r.str("status") != "overloaded" {
		t.Fatalf("health while overloaded: %s", r.raw)
	}

	release()
	if r := <-first; r.status != http.StatusOK {
		t.Fatalf("admitted search: %d %s", r.status, r.raw)
	}
	if r := e.must(http.StatusOK, "", "GET", "/healthz", ""); r.str("status") != "ok" {
		t.Fatalf("health at rest: %s", r.raw)
	}
}
