package main

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
)

// gatedPurge holds every Purge until gate is closed (or its context
// ends), after telling entered; the first failFirst calls fail with a
// recoverable ErrOverloaded instead, without waiting.
type gatedPurge struct {
	storekit.Store
	entered   chan struct{}
	gate      chan struct{}
	failFirst int
	calls     int
}

func (g *gatedPurge) Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error) {
	g.calls++
	if g.calls <= g.failFirst {
		g.entered <- struct{}{}
		return memorykit.PurgeReport{}, &memorykit.Error{Op: "test.purge", Kind: memorykit.ErrOverloaded, Reason: "test_busy", Retry: true}
	}
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return memorykit.PurgeReport{}, memorykit.WrapError("test.purge", memorykit.ErrUnavailable, "context_done", ctx.Err())
	}
	return g.Store.(storekit.Purger).Purge(ctx, scope, actor, reason)
}

// purgeEnv is a Host on memorystore whose lifecycle store's Purge is g.
func purgeEnv(t *testing.T, g *gatedPurge) *env {
	return newEnv(t, memoryBackend, nil, func(o *Options) {
		o.workerStores = func(s storekit.Store) mkruntime.Stores {
			g.Store = s
			st := mkruntime.StoresOf(s)
			st.Lifecycle = g
			return st
		}
	})
}

// purgeGuard bounds a test's wait for a background purge: a safety net,
// never how the test waits for work.
const purgeGuard = 10 * time.Second

// recvWithin takes one value from ch or fails the test after purgeGuard.
func recvWithin[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(purgeGuard):
		t.Fatalf("no %s within %v", what, purgeGuard)
		panic("unreachable")
	}
}

// purgeState polls the project's purge status until cond holds, yielding
// between polls and failing after purgeGuard of real time.
func (e *env) purgeState(token, project string, cond func(state string) bool) resp {
	e.t.Helper()
	deadline := time.Now().Add(purgeGuard)
	for {
		r := e.must(http.StatusOK, token, "GET", "/v1/projects/"+project+"/purge", "")
		if cond(r.str("purge.state")) {
			return r
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("purge status never reached the wanted state: %s", r.raw)
		}
		runtime.Gosched()
	}
}

// purgeFinished waits for the project's purge to end (done or failed).
func (e *env) purgeFinished(token, project string) resp {
	e.t.Helper()
	return e.purgeState(token, project, func(s string) bool { return s == purgeDone || s == purgeFailed })
}

// TestHostPurgeRunsInBackground: a purge over a slow store answers 202 at
// once and runs to completion in the background, well past the request
// deadline on the Host's clock; the status route reports it running, then
// done with the deletion report's counts. A second POST while it runs
// starts nothing new.
func TestHostPurgeRunsInBackground(t *testing.T) {
	g := &gatedPurge{entered: make(chan struct{}, 4), gate: make(chan struct{})}
	e := purgeEnv(t, g)
	const canary = "PurgeCanary4407"
	for _, k := range []string{"a", "b", "c"} {
		e.write(aliceToken, "apollo", "fact", "purge "+k, "Fact "+k+" "+canary)
	}
	e.must(http.StatusNotFound, aliceToken, "GET", apollo+"/purge", "")

	r := e.must(http.StatusAccepted, aliceToken, "POST", apollo+"/purge", `{"reason_code":"project_closed"}`)
	if r.str("purge.state") != purgeRunning || r.str("purge.reason_code") != "project_closed" {
		t.Fatalf("accepted purge: %s", r.raw)
	}
	recvWithin(t, g.entered, "purge call")
	// Far past every request deadline: the purge is not cut short.
	e.clk.Add(10 * requestTimeout)
	if r := e.must(http.StatusOK, aliceToken, "GET", apollo+"/purge", ""); r.str("purge.state") != purgeRunning || r.get("purge.attempts") != float64(1) {
		t.Fatalf("status while the store is slow: %s", r.raw)
	}
	if r := e.must(http.StatusAccepted, aliceToken, "POST", apollo+"/purge", `{"reason_code":"project_closed"}`); r.str("purge.state") != purgeRunning {
		t.Fatalf("second POST: %s", r.raw)
	}
	select {
	case <-g.entered:
		t.Fatal("a second POST started a second purge")
	default:
	}

	close(g.gate)
	r = e.purgeFinished(aliceToken, "apollo")
	if r.str("purge.state") != purgeDone || r.get("purge.report.records") != float64(3) || r.get("purge.attempts") != float64(1) ||
		!strings.HasPrefix(r.str("purge.report.digest"), "sha256:") {
		t.Fatalf("finished purge: %s", r.raw)
	}
	if strings.Contains(r.raw, canary) {
		t.Fatal("the purge status carries content")
	}
	if ids := e.searchIDs(aliceToken, "apollo", canary); len(ids) != 0 {
		t.Fatalf("search after purge: %v", ids)
	}
	testkit.AssertNoCanaryInLogs(t, e.logs, canary)
}

// TestHostPurgeRetriesARecoverableFailure: a purge the runtime turns away
// as overloaded is retried after purgeRetryPause on the Host's clock, and
// then finishes.
func TestHostPurgeRetriesARecoverableFailure(t *testing.T) {
	g := &gatedPurge{entered: make(chan struct{}, 4), gate: make(chan struct{}), failFirst: 1}
	close(g.gate)
	e := purgeEnv(t, g)
	e.write(aliceToken, "apollo", "fact", "purge a", "a fact")
	e.must(http.StatusAccepted, aliceToken, "POST", apollo+"/purge", `{"reason_code":"project_closed"}`)
	recvWithin(t, g.entered, "first purge call")
	r := e.purgeState(aliceToken, "apollo", func(s string) bool { return s == purgeRetrying })
	if r.str("purge.error") != "overloaded" || r.str("purge.error_reason") != "test_busy" {
		t.Fatalf("retrying status: %s", r.raw)
	}
	select {
	case <-g.entered:
		t.Fatal("retried before the pause passed")
	default:
	}
	e.clk.Add(purgeRetryPause)
	recvWithin(t, g.entered, "second purge call")
	r = e.purgeFinished(aliceToken, "apollo")
	if r.str("purge.state") != purgeDone || r.get("purge.attempts") != float64(2) || r.get("purge.report.records") != float64(1) {
		t.Fatalf("finished purge: %s", r.raw)
	}
}

// TestHostPurgeRefusedStartsNothing: a caller without erase permission,
// a bad reason code and a foreign tenant get their error at once, and no
// purge starts.
func TestHostPurgeRefusedStartsNothing(t *testing.T) {
	g := &gatedPurge{entered: make(chan struct{}, 4), gate: make(chan struct{})}
	close(g.gate)
	e := purgeEnv(t, g)
	e.write(aliceToken, "apollo", "fact", "purge a", "a fact")
	e.must(http.StatusForbidden, bobToken, "POST", apollo+"/purge", `{"reason_code":"project_closed"}`)
	e.must(http.StatusUnprocessableEntity, aliceToken, "POST", apollo+"/purge", `{"reason_code":"Because I said so"}`)
	e.must(http.StatusUnprocessableEntity, aliceToken, "POST", apollo+"/purge", `{"reason_code":""}`)
	e.must(http.StatusBadRequest, aliceToken, "POST", apollo+"/purge", `{"reason_code":"x","tenant":"globex"}`)
	e.must(http.StatusForbidden, bobToken, "GET", apollo+"/purge", "")
	e.must(http.StatusNotFound, aliceToken, "GET", apollo+"/purge", "")
	// carol's apollo is globex's apollo: her purge and status never touch acme's.
	e.must(http.StatusAccepted, carolToken, "POST", apollo+"/purge", `{"reason_code":"project_closed"}`)
	recvWithin(t, g.entered, "globex purge call")
	e.purgeFinished(carolToken, "apollo")
	e.must(http.StatusNotFound, aliceToken, "GET", apollo+"/purge", "")
	if ids := e.searchIDs(aliceToken, "apollo", "a fact"); len(ids) != 1 {
		t.Fatalf("acme's memory after globex's purge: %v", ids)
	}
}

// TestHostPurgeCutShortByClose: Close waits for a running purge while its
// context lasts, then cuts it short; the purge reports failed and its
// goroutine has ended (goleak checks the package).
func TestHostPurgeCutShortByClose(t *testing.T) {
	g := &gatedPurge{entered: make(chan struct{}, 4), gate: make(chan struct{})}
	e := purgeEnv(t, g)
	e.write(aliceToken, "apollo", "fact", "purge a", "a fact")
	e.must(http.StatusAccepted, aliceToken, "POST", apollo+"/purge", `{"reason_code":"project_closed"}`)
	recvWithin(t, g.entered, "purge call")
	e.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() { done <- e.host.Close(ctx) }()
		_ = recvWithin(t, done, "Close") // a cancelled ctx may make Drain report it; the purge must end either way
	})
	st, ok := e.host.purges.status(e.scope(t, "acme", "apollo"))
	if !ok || st.State != purgeFailed || st.Error != "unavailable" {
		t.Fatalf("status after Close: %+v", st)
	}
}

// scope is the project Scope of tenant and project.
func (e *env) scope(t *testing.T, tenant, project string) memorykit.Scope {
	s, err := memorykit.ProjectScope(tenant, project)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
