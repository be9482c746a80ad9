package mcp_test

import (
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	mkmcp "github.com/goagents/memorykit/adapters/mcp"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// lookupMember stands for the Host's own authentication: a bearer token to
// an authenticated member of one tenant.
func lookupMember(token string) (memorykit.Principal, bool) {
	if token != "token-of-alice" {
		return memorykit.Principal{}, false
	}
	return memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}, true
}

// ExampleNewHandler mounts the memory tools over streamable HTTP, one
// endpoint per project. The Resolver is the only place the Scope comes
// from: the token names the caller, the path names the project.
func ExampleNewHandler() {
	var rt *mkruntime.Runtime // the Host's started Runtime
	handler, err := mkmcp.NewHandler(mkmcp.Config{
		Runtime: rt, Name: "my-host", Version: "v1", Logger: zap.NewNop(), MaxRequestBytes: 64 << 10,
	}, func(r *http.Request) (mkruntime.Request, error) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		caller, ok := lookupMember(token)
		if !ok {
			return mkruntime.Request{}, mkmcp.ErrUnauthenticated
		}
		scope, err := memorykit.ProjectScope(caller.TenantID, r.PathValue("project"))
		if err != nil {
			return mkruntime.Request{}, err
		}
		return mkruntime.Request{Caller: caller, Scope: scope, ModelID: "assistant", WriteIntent: false}, nil
	})
	if err != nil {
		panic(err) // a missing Config field: fix the wiring
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp/projects/{project}", handler)
	_ = http.ListenAndServe("127.0.0.1:8080", mux)
}
