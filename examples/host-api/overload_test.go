package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/pgstore"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
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
	a := hostLimits(2, false, 500*time.Millisecond).Admission
	c := pgConfig(pgstore.Config{}, a)
	if c.MaxConns < int32(a.MaxReads+a.MaxWrites) || c.Workers != hostWorkerConns {
		t.Fatalf("pool %d for %+v", c.MaxConns, a)
	}
}

// TestPostgresRecallsRankInProcess: the Host runs pgstore with its recall
// cache, so its recalls are CPU work in this process and get the in-process
// limits and the extra P, like memorystore's and sqlitestore's.
func TestPostgresRecallsRankInProcess(t *testing.T) {
	for _, o := range []Options{{}, {DataDir: "d"}, {DSN: "postgres://x"}} {
		if !o.recallInProcess() {
			t.Errorf("%+v: recall not in process", o)
		}
	}
	if c := pgConfig(pgstore.Config{}, hostLimits(2, true, 500*time.Millisecond).Admission); c.SQLRecall {
		t.Error("the Host turns pgstore's recall cache off")
	}
	o := Options{DSN: "postgres://x"}
	l := hostLimits(2, o.recallInProcess(), 500*time.Millisecond)
	if l.EdgeReads != 2 || l.Admission.MaxReads != 4 || serverProcs(2, l, o.recallInProcess()) != 5 {
		t.Errorf("pgstore on 2 CPUs: %d reads (%d with the reserve), %d Ps", l.EdgeReads, l.Admission.MaxReads, serverProcs(2, l, o.recallInProcess()))
	}
}

// TestHostLimitsFollowCPUsAndDeadline: the edge's slots scale with the
// CPUs (reads one per CPU, at least two, for an in-process store; four per
// CPU with PostgreSQL), a queued call waits at most a hundredth of the
// recall deadline and not at all in a standing queue, and the runtime has
// a slot for every search, read and write the edge may let in (its slots
// and reserve), so none of them waits in the runtime's queue.
func TestHostLimitsFollowCPUsAndDeadline(t *testing.T) {
	for _, c := range []struct {
		cpus      int
		inProcess bool
		deadline  time.Duration
		reads     int
	}{
		{1, false, 500 * time.Millisecond, 4}, {2, false, 500 * time.Millisecond, 8}, {8, false, 300 * time.Millisecond, 32},
		{0, false, time.Second, 4}, {1, true, 500 * time.Millisecond, 2}, {2, true, 500 * time.Millisecond, 2},
		{8, true, time.Second, 8},
	} {
		l := hostLimits(c.cpus, c.inProcess, c.deadline)
		a := l.Admission
		if l.EdgeReads != c.reads || l.EdgeWrites != 4*max(1, c.cpus) {
			t.Errorf("%+v: edge slots %+v", c, l)
		}
		if a.MaxReads != edgeCeiling(l.EdgeReads) || a.MaxWrites != edgeCeiling(l.EdgeWrites) {
			t.Errorf("%+v: runtime slots %+v", c, a)
		}
		if a.MaxWait != c.deadline/100 || a.CongestedWait != 0 {
			t.Errorf("%+v: waits %v / %v", c, a.MaxWait, a.CongestedWait)
		}
		if l.EdgeChats != 2*l.EdgeReads || a.MaxQueue != l.EdgeReads {
			t.Errorf("%+v: edge %+v", c, l)
		}
	}
}

// TestServerProcsKeepAPForHTTP: with an in-process store the Host serves
// with one P more than it admits recalls at once (the edge's read slots
// and reserve), so a busy recall on every core does not keep the HTTP
// server from reading (and refusing) new requests; with PostgreSQL one P
// per CPU.
func TestServerProcsKeepAPForHTTP(t *testing.T) {
	for _, c := range []struct {
		cpus      int
		inProcess bool
		procs     int
	}{
		{1, true, 5}, {2, true, 5}, {8, true, 17}, {0, true, 5},
		{1, false, 1}, {2, false, 2}, {8, false, 8}, {0, false, 1},
	} {
		l := hostLimits(c.cpus, c.inProcess, 500*time.Millisecond)
		got := serverProcs(c.cpus, l, c.inProcess)
		if got != c.procs {
			t.Errorf("%+v: GOMAXPROCS %d", c, got)
		}
		if c.inProcess && got <= l.Admission.MaxReads {
			t.Errorf("%+v: %d Ps for %d admitted recalls", c, got, l.Admission.MaxReads)
		}
	}
}

// TestRouteClasses: every project route has a class; chat is its own,
// searches and GETs are reads, every other POST is a write.
func TestRouteClasses(t *testing.T) {
	e := newEnv(t, memoryBackend, nil)
	n := 0
	for _, p := range e.host.routes {
		if !strings.Contains(p, "/v1/projects/") {
			continue
		}
		n++
		want := classWrites
		switch {
		case strings.HasSuffix(p, "/chat"):
			want = classChats
		case strings.HasPrefix(p, "GET "), strings.HasSuffix(p, "/search"):
			want = classReads
		}
		if got := classOf(p); got != want || e.host.edge[got] == nil {
			t.Errorf("%s: class %q, want %q", p, got, want)
		}
	}
	if n < 10 {
		t.Fatalf("only %d project routes", n)
	}
}

// blockingRecall holds every Recall while blocked is set, after telling
// entered.
type blockingRecall struct {
	storekit.RecallStore
	entered chan struct{}
	release chan struct{}
}

func (s blockingRecall) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
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
	// The edge lets both searches in; the runtime's one read slot and
	// empty queue turn the second away.
	lim := overloadLimits{Admission: mkruntime.Admission{MaxReads: 1, MaxWrites: 1}, EdgeReads: 8, EdgeWrites: 8, EdgeChats: 8}
	b := backend{name: "memorystore", options: func(*testing.T) Options {
		return Options{TombstoneSecret: testTombstoneSecret, limits: &lim, workerStores: func(s storekit.Store) mkruntime.Stores {
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

// bodyProbe is a request body that records whether anything read it.
type bodyProbe struct {
	io.Reader
	read bool
}

func (b *bodyProbe) Read(p []byte) (int, error) {
	b.read = true
	return b.Reader.Read(p)
}

func (b *bodyProbe) Close() error { return nil }

// TestEdgeTurnsAwayBeforeTheBody: with one search in flight and an edge
// bound of one read, the next search is answered 503 overloaded
// (in_flight_limit, field reads) with Retry-After and the JSON error shape,
// without its body being read and without reaching recall; /healthz says
// overloaded and the refusal is counted in /metrics. A write, another
// class, still goes through. Once the search finishes, searches and health
// are back to normal.
func TestEdgeTurnsAwayBeforeTheBody(t *testing.T) {
	block := blockingRecall{entered: make(chan struct{}, 4), release: make(chan struct{})}
	lim := overloadLimits{Admission: mkruntime.Admission{MaxReads: 8, MaxWrites: 8}, EdgeReads: 1, EdgeWrites: 4, EdgeChats: 1}
	b := backend{name: "memorystore", options: func(*testing.T) Options {
		return Options{TombstoneSecret: testTombstoneSecret, limits: &lim, workerStores: func(s storekit.Store) mkruntime.Stores {
			st := mkruntime.StoresOf(s)
			block.RecallStore = s
			st.Recall = block
			return st
		}}
	}}
	e := newEnv(t, b, nil)
	var once sync.Once
	release := func() { once.Do(func() { close(block.release) }) }
	t.Cleanup(release)

	first := make(chan resp, 1)
	go func() { first <- e.do(aliceToken, "POST", apollo+"/search", `{"query":"deploy region"}`) }()
	<-block.entered

	// Straight into the handler, to see whether the body was touched.
	probe := &bodyProbe{Reader: strings.NewReader(`{"query":"deploy region"}`)}
	req := httptest.NewRequest("POST", apollo+"/search", probe)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		defer close(served)
		e.host.Handler().ServeHTTP(rec, req)
	}()
	select {
	case <-served:
	case <-block.entered:
		release()
		<-served
		t.Fatal("the second search reached recall instead of being turned away at the edge")
	}
	var body errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != retryAfterSeconds ||
		!strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") ||
		body != (errorBody{Error: "overloaded", Reason: reasonInFlight, Field: classReads}) {
		t.Fatalf("refused search: %d %v %+v", rec.Code, rec.Header(), body)
	}
	if probe.read {
		t.Fatal("the edge read the body of a request it turned away")
	}
	// The bound is per class: a write is not a read.
	e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in eu-west-1")
	// An unauthenticated search while alice holds the slot but the
	// reserve is free learns that it must authenticate.
	e.must(http.StatusUnauthorized, "", "POST", apollo+"/search", `{"query":"x"}`)
	// Another tenant's search, under its share, takes the reserve; the
	// class is then full for everyone.
	reads := e.host.edge[classReads]
	if !reads.enter("initech") || !reads.full() {
		t.Fatal("the reserve did not take a tenant under its share")
	}
	// A full class refuses before any authentication work: an
	// unauthenticated search gets the same 503 (it learns nothing), while
	// a class with a free slot still tells an unauthenticated caller so.
	if r := e.must(http.StatusServiceUnavailable, "", "POST", apollo+"/search", `{"query":"x"}`); r.str("error") != "overloaded" {
		t.Fatalf("unauthenticated search while full: %s", r.raw)
	}
	e.must(http.StatusUnauthorized, "", "POST", apollo+"/memories", `{"kind":"fact","key":"k","content":"c"}`)
	if r := e.must(http.StatusServiceUnavailable, "", "GET", "/healthz", ""); r.str("status") != "overloaded" {
		t.Fatalf("health while the edge is full: %s", r.raw)
	}
	m := e.must(http.StatusOK, "", "GET", "/metrics", "")
	if !strings.Contains(m.raw, `host_http_overloaded_total{host_class="reads"} 2`) {
		t.Fatalf("refusal not counted:\n%s", m.raw)
	}

	reads.leave("initech")
	reads.leave("initech")
	release()
	if r := <-first; r.status != http.StatusOK {
		t.Fatalf("admitted search: %d %s", r.status, r.raw)
	}
	if ids := e.searchIDs(aliceToken, "apollo", "deploy region"); len(ids) != 1 {
		t.Fatalf("search after the overload found %v", ids)
	}
	if r := e.must(http.StatusOK, "", "GET", "/healthz", ""); r.str("status") != "ok" {
		t.Fatalf("health at rest: %s", r.raw)
	}
}
