package main

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorytools"
)

type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpClient connects an MCP client over streamable HTTP as token.
func (e *env) mcpClient(ctx context.Context, token, project string) (*sdk.ClientSession, error) {
	hc := &http.Client{Transport: bearerTransport(token)}
	e.t.Cleanup(hc.CloseIdleConnections)
	return sdk.NewClient(&sdk.Implementation{Name: "host-test", Version: "v0"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp/projects/" + project, HTTPClient: hc, MaxRetries: -1}, nil)
}

func mcpTools(ctx context.Context, t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func mcpText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

// testMCP: the memory tools over MCP's streamable HTTP, with the Host's
// tokens and project routes deciding everything.
func testMCP(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const secret = "MCP-CANARY-Lisbon-4411"

	e.must(http.StatusUnauthorized, "", "POST", "/mcp/projects/apollo", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	e.must(http.StatusUnauthorized, "dev-token-nobody-"+secret, "POST", "/mcp/projects/apollo", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	e.must(http.StatusForbidden, bobToken, "POST", "/mcp/projects/hermes", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)

	alice, err := e.mcpClient(ctx, aliceToken, "apollo")
	if err != nil {
		t.Fatalf("alice connect: %v", err)
	}
	defer alice.Close()
	if got := mcpTools(ctx, t, alice); got != "read_memory,remember_project_memory,search_memory" {
		t.Fatalf("alice's tools: %s", got)
	}
	res, err := alice.CallTool(ctx, &sdk.CallToolParams{Name: memorytools.RememberProjectMemory,
		Arguments: map[string]any{"kind": "fact", "key": "standup city", "content": "The team meets in " + secret + "."}})
	if err != nil || res.IsError {
		t.Fatalf("remember over MCP: %v %+v", err, res)
	}

	bob, err := e.mcpClient(ctx, bobToken, "apollo")
	if err != nil {
		t.Fatalf("bob connect: %v", err)
	}
	defer bob.Close()
	if got := mcpTools(ctx, t, bob); got != "read_memory,search_memory" {
		t.Fatalf("read-only bob's tools: %s", got)
	}
	res, err = bob.CallTool(ctx, &sdk.CallToolParams{Name: memorytools.SearchMemory, Arguments: map[string]any{"query": "standup city"}})
	if err != nil || res.IsError || !strings.Contains(mcpText(t, res), secret) {
		t.Fatalf("bob's search: %v %+v", err, res)
	}
	res, err = bob.CallTool(ctx, &sdk.CallToolParams{Name: memorytools.RememberProjectMemory,
		Arguments: map[string]any{"kind": "fact", "key": "k", "content": "c"}})
	if err == nil && !res.IsError {
		t.Fatal("read-only bob wrote memory over MCP")
	}

	carol, err := e.mcpClient(ctx, carolToken, "apollo")
	if err != nil {
		t.Fatalf("carol connect: %v", err)
	}
	defer carol.Close()
	res, err = carol.CallTool(ctx, &sdk.CallToolParams{Name: memorytools.SearchMemory, Arguments: map[string]any{"query": "standup city " + secret}})
	if err != nil {
		t.Fatalf("carol's search: %v", err)
	}
	if strings.Contains(mcpText(t, res), secret) {
		t.Fatal("another tenant's apollo saw acme's memory")
	}
	e.assertLogsFree(secret, aliceToken, bobToken, carolToken)
}

func TestMCPStdioRequest(t *testing.T) {
	e := newEnv(t, memoryBackend, nil)
	if _, err := e.host.stdioRequest("", "apollo"); !errors.Is(err, errNoMCPToken) {
		t.Errorf("no token: %v", err)
	}
	if _, err := e.host.stdioRequest("dev-token-nobody", "apollo"); !errors.Is(err, memorykit.ErrForbidden) {
		t.Errorf("unknown token: %v", err)
	}
	req, err := e.host.stdioRequest(bobToken, "apollo")
	if err != nil || req.WriteIntent || req.Scope.SubjectID != "apollo" || req.Scope.TenantID != "acme" {
		t.Errorf("bob: %+v %v", req, err)
	}
	req, err = e.host.stdioRequest(aliceToken, "apollo")
	if err != nil || !req.WriteIntent {
		t.Errorf("alice: %+v %v", req, err)
	}
}
