package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/pgstore"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/sqlitestore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var testEpoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// backend opens the Host's store: the embedded default or PostgreSQL in a
// schema of its own.
type backend struct {
	name string
	// options fills the store fields of Options for one test.
	options func(t *testing.T) Options
}

// testTombstoneSecret keys erased records' key digests in the tests.
var testTombstoneSecret = []byte("host-api test tombstone secret, tests only")

var memoryBackend = backend{name: "memorystore", options: func(*testing.T) Options {
	return Options{TombstoneSecret: testTombstoneSecret}
}}

// sqliteBackend gives each test a SQLite file in a directory of its own.
var sqliteBackend = backend{name: "sqlitestore", options: func(t *testing.T) Options {
	return Options{DataDir: t.TempDir(), TombstoneSecret: testTombstoneSecret}
}}

// postgresBackend gives each test a fresh schema, dropped when it ends.
// Without a DSN it skips, or fails with MEMORYKIT_REQUIRE_POSTGRES=1.
func postgresBackend(t *testing.T) backend {
	t.Helper()
	dsn := pgtest.DSN(t)
	return backend{name: "pgstore", options: func(t *testing.T) Options {
		return Options{DSN: dsn, Schema: pgtest.Schema(t, dsn), TombstoneSecret: testTombstoneSecret}
	}}
}

// coverage records which routes answered 2xx at least once.
type coverage struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (c *coverage) mark(pattern string, status int) {
	if status < 200 || status > 299 || pattern == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = make(map[string]bool)
	}
	c.seen[pattern] = true
}

func (c *coverage) missing(routes []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range routes {
		if !c.seen[r] {
			out = append(out, r)
		}
	}
	return out
}

// env is one Host behind a real HTTP server on 127.0.0.1.
type env struct {
	t    *testing.T
	host *Host
	srv  *httptest.Server
	clk  *clock.Mock
	logs *observer.ObservedLogs
	once sync.Once
}

// newEnv starts a Host on b with a mock clock and an observed logger, and
// shuts it down (HTTP server first, then the Host) when the test ends.
// Each option may adjust the Host's Options last.
func newEnv(t *testing.T, b backend, cov *coverage, options ...func(*Options)) *env {
	t.Helper()
	dir, err := LoadDirectory("")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewMock()
	clk.Set(testEpoch)
	core, logs := observer.New(zapcore.DebugLevel)
	o := b.options(t)
	o.Directory, o.Clock, o.Logger, o.Model, o.WorkerID = dir, clk, zap.New(core), ScriptedModel{}, "test-host"
	for _, opt := range options {
		opt(&o)
	}
	host, err := NewHost(context.Background(), o)
	if err != nil {
		if o.DSN != "" {
			pgtest.Unusable(t, "NewHost", err)
		}
		t.Fatalf("NewHost: %v", err)
	}
	handler := host.Handler()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		handler.ServeHTTP(sw, r)
		if cov != nil {
			cov.mark(r.Pattern, sw.status)
		}
	}))
	srv.Config.ConnContext = host.ConnContext
	srv.Start()
	e := &env{t: t, host: host, srv: srv, clk: clk, logs: logs}
	t.Cleanup(func() {
		srv.Close()
		e.close()
	})
	return e
}

// close shuts the Host down once (tests may close it early).
func (e *env) close() {
	e.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.host.Close(ctx); err != nil {
			e.t.Errorf("host close: %v", err)
		}
	})
}

// resp is one HTTP answer.
type resp struct {
	status int
	raw    string
	reply
}

// do sends one request. headers are name, value pairs.
func (e *env) do(token, method, path, body string, headers ...string) resp {
	e.t.Helper()
	var rd io.Reader = http.NoBody
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	return resp{status: res.StatusCode, raw: string(raw), reply: reply{v: v}}
}

// must sends a request and fails the test unless the status is want.
func (e *env) must(want int, token, method, path, body string, headers ...string) resp {
	e.t.Helper()
	r := e.do(token, method, path, body, headers...)
	if r.status != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.status, want, r.raw)
	}
	return r
}

// write stores an explicit memory as alice (or token) and returns its ID.
func (e *env) write(token, project, kind, key, content string) string {
	e.t.Helper()
	body := fmt.Sprintf(`{"kind":%q,"key":%q,"content":%q}`, kind, key, content)
	r := e.must(http.StatusCreated, token, "POST", "/v1/projects/"+project+"/memories", body)
	id := r.str("memory.id")
	if id == "" || r.str("memory.status") != "active" {
		e.t.Fatalf("write: unexpected body %s", r.raw)
	}
	return id
}

// searchIDs runs the search endpoint and returns the IDs found.
func (e *env) searchIDs(token, project, query string) []string {
	e.t.Helper()
	r := e.must(http.StatusOK, token, "POST", "/v1/projects/"+project+"/search", fmt.Sprintf(`{"query":%q}`, query))
	hits, _ := r.get("memories").([]any)
	ids := make([]string, 0, len(hits))
	for i := range hits {
		ids = append(ids, r.str(fmt.Sprintf("memories.%d.id", i)))
	}
	return ids
}

// settle moves the mock clock one embedding poll at a time until every
// active record is embedded (Mock.Add yields to the woken workers), so the
// vector channel takes part in what follows. It fails the test when the
// worker never catches up.
func (e *env) settle() {
	e.t.Helper()
	ctx := context.Background()
	for i := 0; i < 5000; i++ {
		n, err := e.host.store.PendingEmbeddings(ctx, embedder.LocalV2Profile)
		if err != nil {
			e.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		e.clk.Add(mkruntime.WorkersV1().EmbedPoll)
	}
	e.t.Fatal("embeddings still pending")
}

// dump renders the whole store (content included; tests only).
func (e *env) dump() string {
	e.t.Helper()
	switch s := e.host.store.(type) {
	case *memorystore.Store:
		return s.Dump()
	case *sqlitestore.Store:
		d, err := s.Dump(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		return d
	case *pgstore.Store:
		d, err := s.Dump(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		// The embedding worker's own bookkeeping (the profile it registers
		// on its first lease, its queue hints and lease rows) may still move
		// after settle, on the worker's goroutine; a
		// request never writes it, and records, revisions, embeddings and
		// jobs stay in the comparison.
		var kept []string
		for _, line := range strings.SplitAfter(d, "\n") {
			if !strings.HasPrefix(line, "embedding_queue: ") && !strings.HasPrefix(line, "embedding_leases: ") &&
				!strings.HasPrefix(line, "embedding_profiles: ") {
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "")
	}
	e.t.Fatalf("unknown store %T", e.host.store)
	return ""
}

// assertLogsFree fails when any log line (message or field) holds one of
// the secrets: memory content, query text, tokens.
func (e *env) assertLogsFree(secrets ...string) {
	e.t.Helper()
	for _, entry := range e.logs.All() {
		line := entry.Message + " " + fmt.Sprint(entry.ContextMap())
		for _, s := range secrets {
			if strings.Contains(line, s) {
				e.t.Errorf("log line carries %q: %s", s, line)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
