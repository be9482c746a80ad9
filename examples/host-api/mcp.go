package main

import (
	"context"
	"errors"
	"net/http"
	"os"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	mkmcp "github.com/goagents/memorykit/adapters/mcp"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// mcpRoute serves the memory tools over MCP's streamable HTTP transport,
// one endpoint per project: the bearer token names the caller, the path
// names the project, exactly as for the HTTP API.
const mcpRoute = "/mcp/projects/{project}"

// envMCPToken names the variable that holds the member token of the
// stdio MCP mode (a token on the command line would show in ps).
const envMCPToken = "MEMORYKIT_MCP_TOKEN"

// maxMCPBytes bounds one MCP request body, and a tool call's arguments.
const maxMCPBytes = 64 << 10

func (h *Host) mcpConfig() mkmcp.Config {
	return mkmcp.Config{Runtime: h.rt, Name: "memorykit-host-api", Version: "v1", Logger: h.log, MaxRequestBytes: maxMCPBytes}
}

// agentRequest is the runtime.Request of an agent acting for member m on
// project: the tenant's model, and write intent only when m may write and
// let the model write there. The chat route and MCP share it.
func (h *Host) agentRequest(m *member, project string) (mkruntime.Request, error) {
	scope, err := memorykit.ProjectScope(m.principal.TenantID, project)
	if err != nil {
		return mkruntime.Request{}, err
	}
	modelID, ok := h.dir.ModelFor(scope.TenantID)
	if !ok {
		return mkruntime.Request{}, &memorykit.Error{Op: "host.agent", Kind: memorykit.ErrForbidden, Reason: "no_model_for_tenant"}
	}
	return mkruntime.Request{
		Caller:      m.principal,
		Scope:       scope,
		ModelID:     modelID,
		WriteIntent: m.can(project, memorykit.PermWrite) && m.can(project, memorykit.PermModelWrite),
	}, nil
}

// registerMCP mounts the MCP endpoint. The adapter authorizes every
// request (401, 403, 503) before the MCP SDK reads it; the Runtime's
// admission bounds its store calls like any other request's.
func (h *Host) registerMCP() error {
	mh, err := mkmcp.NewHandler(h.mcpConfig(), func(r *http.Request) (mkruntime.Request, error) {
		m, ok := h.dir.Authenticate(r)
		if !ok {
			return mkruntime.Request{}, mkmcp.ErrUnauthenticated
		}
		return h.agentRequest(m, r.PathValue("project"))
	})
	if err != nil {
		return err
	}
	h.routes = append(h.routes, mcpRoute)
	h.mux.Handle(mcpRoute, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.closing.Load() {
			writeError(w, http.StatusServiceUnavailable, "draining", "shutting_down", "")
			return
		}
		mh.ServeHTTP(w, r)
	}))
	return nil
}

// serveMCPStdio serves one member's memory tools on one project to a local
// MCP client over standard input and output, until the client closes its
// end or ctx ends; then it shuts the Host down. The member is the one
// whose token is in $MEMORYKIT_MCP_TOKEN; the project is the operator's
// -mcp-stdio flag. Logs go to standard error.
func serveMCPStdio(ctx context.Context, log *zap.Logger, o Options, project string) error {
	host, err := NewHost(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := host.Close(drainCtx); err != nil {
			log.Warn("close", zap.Error(err))
		}
	}()
	req, err := host.stdioRequest(os.Getenv(envMCPToken), project)
	if err != nil {
		return err
	}
	log.Info("serving MCP on stdio", zap.String("tenant", req.Scope.TenantID), zap.String("project", project), zap.Bool("write_intent", req.WriteIntent))
	return mkmcp.ServeStdio(ctx, host.mcpConfig(), req)
}

// errNoMCPToken: the stdio mode needs a member token.
var errNoMCPToken = errors.New("host-api: -mcp-stdio needs a member token in $" + envMCPToken)

// stdioRequest authenticates token as the Directory does for HTTP.
func (h *Host) stdioRequest(token, project string) (mkruntime.Request, error) {
	if token == "" {
		return mkruntime.Request{}, errNoMCPToken
	}
	r, err := http.NewRequest(http.MethodPost, "/", nil)
	if err != nil {
		return mkruntime.Request{}, err
	}
	r.Header.Set("Authorization", "Bearer "+token)
	m, ok := h.dir.Authenticate(r)
	if !ok {
		return mkruntime.Request{}, &memorykit.Error{Op: "host.mcp_stdio", Kind: memorykit.ErrForbidden, Reason: "unknown_token"}
	}
	return h.agentRequest(m, project)
}
