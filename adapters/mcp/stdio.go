package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mkruntime "github.com/goagents/memorykit/runtime"
)

// ServeStdio serves req's memory tools to one local MCP client over
// standard input and output (the client starts this process), until ctx
// ends or the client closes its end. The operator fixes req at start:
// the caller, the Scope and the write intent come from the command line or
// the Host's configuration, never from the client. Nothing but MCP
// messages may be written to standard output while it runs: log to
// standard error.
func ServeStdio(ctx context.Context, cfg Config, req mkruntime.Request) error {
	return Serve(ctx, cfg, req, &sdk.StdioTransport{})
}

// Serve is ServeStdio on any MCP transport, such as an in-memory one in
// tests or a pipe the Host owns.
func Serve(ctx context.Context, cfg Config, req mkruntime.Request, t sdk.Transport) error {
	srv, err := NewServer(ctx, cfg, req)
	if err != nil {
		return err
	}
	return srv.Run(ctx, t)
}
