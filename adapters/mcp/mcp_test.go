package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	mkmcp "github.com/goagents/memorykit/adapters/mcp"
	"github.com/goagents/memorykit/internal/testsupport/adaptertest"
	"github.com/goagents/memorykit/memorytools"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// canary is planted in every input a client controls; it must never reach
// a log line.
const canary = "CANARY-7f3e91-mcp"

type bundle struct {
	fx   *adaptertest.Fixture
	logs *observer.ObservedLogs
	cfg  mkmcp.Config
}

func setup(t *testing.T) *bundle {
	t.Helper()
	fx := adaptertest.New(t)
	core, logs := observer.New(zap.DebugLevel)
	return &bundle{fx: fx, logs: logs, cfg: mkmcp.Config{
		Runtime: fx.Runtime, Name: "memorykit-test", Version: "v0.0.0",
		Logger: zap.New(core), MaxRequestBytes: 64 << 10,
	}}
}

func (b *bundle) request(writeIntent bool) mkruntime.Request {
	return mkruntime.Request{Caller: b.fx.User, Scope: b.fx.Scope, ModelID: adaptertest.ModelID, WriteIntent: writeIntent}
}

// connect serves req over in-memory transports and returns a connected
// client session; cleanup closes both ends.
func (b *bundle) connect(t *testing.T, req mkruntime.Request) *sdk.ClientSession {
	t.Helper()
	srv, err := mkmcp.NewServer(context.Background(), b.cfg, req)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// noCanary fails when any log line holds the canary.
func (b *bundle) noCanary(t *testing.T) {
	t.Helper()
	for _, e := range b.logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, canary) {
			t.Errorf("log line holds caller content: %q", line)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties           map[string]any `json:"properties"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema is open to extra fields", tool.Name)
		}
		for p := range schema.Properties {
			for _, w := range []string{"tenant", "scope", "subject", "project", "permission", "write", "actor", "principal"} {
				if strings.Contains(strings.ToLower(p), w) {
					t.Errorf("%s: schema has a %q field", tool.Name, p)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func text(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content parts: %d", len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	return tc.Text
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, error) {
	t.Helper()
	return cs.CallTool(ctxT(t), &sdk.CallToolParams{Name: name, Arguments: args})
}

func rpcCode(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

func TestToolListFollowsWriteIntent(t *testing.T) {
	b := setup(t)
	if got := toolNames(t, b.connect(t, b.request(false))); strings.Join(got, ",") != "read_memory,search_memory" {
		t.Errorf("read-only tools = %v", got)
	}
	if got := toolNames(t, b.connect(t, b.request(true))); strings.Join(got, ",") != "read_memory,remember_project_memory,search_memory" {
		t.Errorf("write-intent tools = %v", got)
	}
}

func TestRememberSearchReadAndResource(t *testing.T) {
	b := setup(t)
	cs := b.connect(t, b.request(true))
	res, err := call(t, cs, memorytools.RememberProjectMemory, map[string]any{"kind": "fact", "key": "deploy region", "content": "We deploy to eu-central-1."})
	if err != nil || res.IsError {
		t.Fatalf("remember: %v %+v", err, res)
	}
	res, err = call(t, cs, memorytools.SearchMemory, map[string]any{"query": "deploy region"})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	if !strings.Contains(text(t, res), "eu-central-1") {
		t.Fatalf("search result lacks the memory: %s", text(t, res))
	}
	recs, err := b.fx.Store.List(context.Background(), storekit.ListFilter{Scope: b.fx.Scope, Limit: 10})
	if err != nil || len(recs) != 1 {
		t.Fatalf("list: %v %d", err, len(recs))
	}
	res, err = call(t, cs, memorytools.ReadMemory, map[string]any{"id": recs[0].ID})
	if err != nil || res.IsError || !strings.Contains(text(t, res), "eu-central-1") {
		t.Fatalf("read: %v %+v", err, res)
	}
	rr, err := cs.ReadResource(ctxT(t), &sdk.ReadResourceParams{URI: mkmcp.MemoryURIPrefix + recs[0].ID})
	if err != nil {
		t.Fatalf("read resource: %v", err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "eu-central-1") {
		t.Fatalf("resource contents: %+v", rr.Contents)
	}
}

func TestFailedWriteIsAnErrorResultWithTheFixedText(t *testing.T) {
	b := setup(t)
	cs := b.connect(t, b.request(true))
	res, err := call(t, cs, memorytools.RememberProjectMemory, map[string]any{"kind": "fact", "key": "k", "content": adaptertest.RejectMarker + " " + canary})
	if err != nil {
		t.Fatalf("remember: %v", err)
	}
	if !res.IsError || !strings.Contains(text(t, res), memorytools.NotSavedText) {
		t.Fatalf("failed write = %+v, want isError with %s", res, memorytools.NotSavedText)
	}
	b.noCanary(t)
}

// TestNothingAClientSendsChangesTheScope: extra argument fields, _meta and
// resource URIs cannot reach another Scope's record or grant a write.
func TestNothingAClientSendsChangesTheScope(t *testing.T) {
	b := setup(t)
	other, err := memorykit.ProjectScope("globex", "apollo")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := b.fx.Store.Create(context.Background(), memorykit.NewRecord{
		Scope: other, Kind: memorykit.KindFact, Key: "secret plan", Content: "globex secret plan " + canary,
		Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "mallory"},
	})
	if err != nil {
		t.Fatalf("create foreign record: %v", err)
	}
	cs := b.connect(t, b.request(false))

	for _, args := range []map[string]any{
		{"query": "secret plan", "tenant": "globex"},
		{"query": "secret plan", "scope": map[string]any{"tenant_id": "globex", "subject_id": "apollo"}},
		{"query": "secret plan", "project": "apollo", "write_intent": true},
	} {
		res, err := call(t, cs, memorytools.SearchMemory, args)
		if err != nil {
			t.Fatalf("search %v: %v", args, err)
		}
		if !res.IsError || strings.Contains(text(t, res), canary) {
			t.Errorf("search with %v = %+v, want a bad-arguments error", args, res)
		}
	}
	res, err := cs.CallTool(ctxT(t), &sdk.CallToolParams{
		Meta: sdk.Meta{"tenant_id": "globex", "scope": "globex/apollo", "write_intent": true},
		Name: memorytools.SearchMemory, Arguments: map[string]any{"query": "secret plan"},
	})
	if err != nil {
		t.Fatalf("search with _meta: %v", err)
	}
	if strings.Contains(text(t, res), canary) {
		t.Fatal("another tenant's memory reached the client")
	}
	res, err = cs.CallTool(ctxT(t), &sdk.CallToolParams{
		Meta: sdk.Meta{"write_intent": true}, Name: memorytools.RememberProjectMemory,
		Arguments: map[string]any{"kind": "fact", "key": "k", "content": "c"},
	})
	if err == nil && !res.IsError {
		t.Fatal("a read-only client wrote memory through _meta")
	}
	res, err = call(t, cs, memorytools.ReadMemory, map[string]any{"id": foreign.ID})
	if err != nil || !res.IsError || strings.Contains(text(t, res), canary) {
		t.Fatalf("read of a foreign id = %v %+v", err, res)
	}
	for _, uri := range []string{
		mkmcp.MemoryURIPrefix + foreign.ID,
		mkmcp.MemoryURIPrefix + foreign.ID + "?tenant=globex",
		"memorykit://globex/memories/" + foreign.ID,
		mkmcp.MemoryURIPrefix + "..%2F" + foreign.ID,
	} {
		if rr, err := cs.ReadResource(ctxT(t), &sdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("resource %s read: %+v", uri, rr)
		}
	}
	n, err := b.fx.Store.List(context.Background(), storekit.ListFilter{Scope: b.fx.Scope, Limit: 10})
	if err != nil || len(n) != 0 {
		t.Fatalf("the caller's Scope gained records: %v %d", err, len(n))
	}
	b.noCanary(t)
}

func TestUnknownToolAndOversizeArguments(t *testing.T) {
	b := setup(t)
	cs := b.connect(t, b.request(true))
	if _, err := call(t, cs, "drop_all_memory", map[string]any{}); err == nil {
		t.Error("an unknown tool was called")
	}
	big := strings.Repeat(canary, (b.cfg.MaxRequestBytes/len(canary))+1)
	_, err := call(t, cs, memorytools.SearchMemory, map[string]any{"query": big})
	if rpcCode(err) != mkmcp.CodeRefused {
		t.Fatalf("oversize arguments: %v, want code %d", err, mkmcp.CodeRefused)
	}
	if strings.Contains(err.Error(), canary) {
		t.Error("the error quotes the arguments")
	}
	b.noCanary(t)
}

func TestForbiddenRequestGetsNoServer(t *testing.T) {
	b := setup(t)
	other, err := memorykit.ProjectScope(adaptertest.Tenant, "hermes")
	if err != nil {
		t.Fatal(err)
	}
	req := b.request(true)
	req.Scope = other
	if _, err := mkmcp.NewServer(context.Background(), b.cfg, req); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("NewServer for an ungranted project: %v, want ErrForbidden", err)
	}
	for _, bad := range []mkmcp.Config{
		{},
		{Runtime: b.fx.Runtime, Name: "n", Version: "v", Logger: zap.NewNop()},
		{Runtime: b.fx.Runtime, Name: "n", Version: "v", MaxRequestBytes: 1},
	} {
		if _, err := mkmcp.NewServer(context.Background(), bad, b.request(false)); !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("NewServer(%+v): %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func TestDrainRefusesNewCalls(t *testing.T) {
	b := setup(t)
	cs := b.connect(t, b.request(false))
	if err := b.fx.Runtime.Drain(ctxT(t)); err != nil {
		t.Fatalf("drain: %v", err)
	}
	_, err := call(t, cs, memorytools.SearchMemory, map[string]any{"query": "anything"})
	if rpcCode(err) != mkmcp.CodeDraining {
		t.Fatalf("call while draining: %v, want code %d", err, mkmcp.CodeDraining)
	}
}

// --- streamable HTTP ---

// tokens maps bearer tokens to callers of the fixture's tenant.
var tokens = map[string]memorykit.Actor{
	"tok-alice-0123456789": {Kind: memorykit.ActorUser, ID: adaptertest.UserID},
}

// resolver is a Host's authentication: bearer token → caller, project from
// the path, write intent from the Host's own rule (here: a query flag the
// Host trusts only because it is a test; a real Host reads its grants).
func resolver(writeIntent bool) mkmcp.Resolver {
	return func(r *http.Request) (mkruntime.Request, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		actor, known := tokens[tok]
		if !ok || !known {
			return mkruntime.Request{}, mkmcp.ErrUnauthenticated
		}
		scope, err := memorykit.ProjectScope(adaptertest.Tenant, r.PathValue("project"))
		if err != nil {
			return mkruntime.Request{}, err
		}
		return mkruntime.Request{
			Caller:  memorykit.Principal{TenantID: adaptertest.Tenant, Actor: actor},
			Scope:   scope,
			ModelID: adaptertest.ModelID, WriteIntent: writeIntent,
		}, nil
	}
}

func (b *bundle) httpServer(t *testing.T, writeIntent bool) *httptest.Server {
	t.Helper()
	h, err := mkmcp.NewHandler(b.cfg, resolver(writeIntent))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp/{project}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type bearer struct {
	token string
	extra http.Header
}

func (a bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	for k, v := range a.extra {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(ctx context.Context, t *testing.T, url, token string, extra http.Header) (*sdk.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, extra: extra}}
	t.Cleanup(hc.CloseIdleConnections)
	return sdk.NewClient(&sdk.Implementation{Name: "http-client", Version: "v0"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
}

func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

func TestHTTPAuthenticatesBeforeListing(t *testing.T) {
	b := setup(t)
	srv := b.httpServer(t, true)
	if code, body := post(t, srv.URL+"/mcp/apollo", "", listTools); code != http.StatusUnauthorized || strings.Contains(body, "search_memory") {
		t.Errorf("no token: %d %s", code, body)
	}
	if code, body := post(t, srv.URL+"/mcp/apollo", "tok-unknown-"+canary, listTools); code != http.StatusUnauthorized || strings.Contains(body, "search_memory") {
		t.Errorf("unknown token: %d %s", code, body)
	}
	if code, body := post(t, srv.URL+"/mcp/hermes", "tok-alice-0123456789", listTools); code != http.StatusForbidden || strings.Contains(body, "search_memory") {
		t.Errorf("ungranted project: %d %s", code, body)
	}
	if code, _ := post(t, srv.URL+"/mcp/apollo", "tok-alice-0123456789", strings.Repeat(" ", b.cfg.MaxRequestBytes+1)+listTools); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize body: %d", code)
	}
	for _, garbage := range []string{"{", "[]", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_memory","arguments":"` + canary + `"}}`, "\x00\xff"} {
		code, _ := post(t, srv.URL+"/mcp/apollo", "tok-alice-0123456789", garbage)
		if code == http.StatusOK || code >= 500 {
			// A tools/call with malformed arguments may legitimately be
			// answered 200 with a JSON-RPC error; anything 5xx is a bug.
			if code >= 500 {
				t.Errorf("malformed body %q: %d", garbage, code)
			}
		}
	}
	b.noCanary(t)
}

func TestHTTPToolsOverRealHTTP(t *testing.T) {
	b := setup(t)
	b.fx.Remember(t, "deploy region", "We deploy to eu-central-1.")
	ro := b.httpServer(t, false)
	cs, err := httpClient(ctxT(t), t, ro.URL+"/mcp/apollo", "tok-alice-0123456789", http.Header{"X-Tenant-Id": {"globex"}, "X-Write-Intent": {"true"}})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if got := toolNames(t, cs); strings.Join(got, ",") != "read_memory,search_memory" {
		t.Errorf("read-only tools over HTTP = %v", got)
	}
	res, err := call(t, cs, memorytools.SearchMemory, map[string]any{"query": "deploy region"})
	if err != nil || res.IsError || !strings.Contains(text(t, res), "eu-central-1") {
		t.Fatalf("search over HTTP: %v %+v", err, res)
	}
	if res, err := call(t, cs, memorytools.RememberProjectMemory, map[string]any{"kind": "fact", "key": "k", "content": "c"}); err == nil && !res.IsError {
		t.Fatal("a read-only HTTP client wrote memory")
	}
}

func TestHTTPDrainingIs503(t *testing.T) {
	b := setup(t)
	srv := b.httpServer(t, false)
	if err := b.fx.Runtime.Drain(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, srv.URL+"/mcp/apollo", strings.NewReader(listTools))
	req.Header.Set("Authorization", "Bearer tok-alice-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("draining: %d Retry-After=%q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestHTTPHundredConcurrentSessions(t *testing.T) {
	b := setup(t)
	b.fx.Remember(t, "deploy region", "We deploy to eu-central-1.")
	srv := b.httpServer(t, true)
	// A generous bound: 100 clients under -race on a loaded 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	const clients = 100
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cs, err := httpClient(ctx, t, srv.URL+"/mcp/apollo", "tok-alice-0123456789", nil)
			if err != nil {
				errs <- fmt.Errorf("client %d connect: %w", i, err)
				return
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: memorytools.SearchMemory, Arguments: map[string]any{"query": "deploy region " + canary}})
			switch {
			case rpcCode(err) == mkmcp.CodeOverloaded:
				// A typed refusal under load is an allowed answer.
			case err != nil:
				errs <- fmt.Errorf("client %d call: %w", i, err)
			case res.IsError:
				errs <- fmt.Errorf("client %d: error result", i)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b.noCanary(t)
}

// blockingSessions holds every Session open until the caller's context
// ends or release is closed, so a test can cut a client off mid-call.
type blockingSessions struct {
	inner   mkmcp.Sessions
	entered chan struct{}
	release chan struct{}
	calls   int
	mu      sync.Mutex
}

func (s *blockingSessions) Session(ctx context.Context, req mkruntime.Request) (*mkruntime.Session, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if n == 1 {
		// NewServer's own check passes at once.
		return s.inner.Session(ctx, req)
	}
	s.entered <- struct{}{}
	select {
	case <-ctx.Done():
		return nil, &memorykit.Error{Op: "test.session", Kind: memorykit.ErrDeadline, Reason: "canceled", Err: ctx.Err(), Retry: true}
	case <-s.release:
		return s.inner.Session(ctx, req)
	}
}

func TestClientDisconnectMidCallLeavesNothingRunning(t *testing.T) {
	b := setup(t)
	bs := &blockingSessions{inner: b.fx.Runtime, entered: make(chan struct{}, 1), release: make(chan struct{})}
	b.cfg.Runtime = bs
	cs := b.connect(t, b.request(false))
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: memorytools.SearchMemory, Arguments: map[string]any{"query": "q"}})
		done <- err
	}()
	select {
	case <-bs.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the server")
	}
	cancel()
	_ = cs.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled call succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	// goleak in TestMain checks that the server's handler ended too.
}

func TestServeOnATransportEndsWithTheClient(t *testing.T) {
	b := setup(t)
	ct, st := sdk.NewInMemoryTransports()
	served := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { served <- mkmcp.Serve(ctx, b.cfg, b.request(false), st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "stdio-like", Version: "v0"}, nil).Connect(ctxT(t), ct, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got := toolNames(t, cs); strings.Join(got, ",") != "read_memory,search_memory" {
		t.Errorf("tools = %v", got)
	}
	_ = cs.Close()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the client closed")
	}
	req := b.request(false)
	req.Scope.SubjectType = memorykit.SubjectUser
	if err := mkmcp.Serve(ctx, b.cfg, req, st); !errors.Is(err, memorykit.ErrInvalidScope) {
		t.Fatalf("Serve with a user Scope: %v, want ErrInvalidScope", err)
	}
}
