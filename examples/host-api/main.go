// Command host-api is an example Host: a small HTTP service that embeds
// memorykit the way a production Host should. Callers authenticate with a
// bearer token that the Host maps to a tenant; the project comes only from
// the route; memorykit enforces everything else.
//
//	go -C examples/host-api run .                  # SQLite (and its tombstone.secret) in examples/host-api/memorykit-data, 127.0.0.1:8080
//	go -C examples/host-api run . -memory          # in process memory, lost on exit
//	go -C examples/host-api run . -dsn "$DSN"      # PostgreSQL + pgvector; needs $MEMORYKIT_TOMBSTONE_SECRET
//	go -C examples/host-api run . -demo            # scripted walk-through
//	go -C examples/host-api run -tags sdk . -model openai -model-url http://127.0.0.1:11434/v1/ -model-name llama3.2
//
// The Host is a module of its own (it imports memorykit's model adapters).
// The real-model path and its SDKs are compiled only with -tags sdk.
// See README.md for the API and for plugging in a real model.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"github.com/goagents/memorykit/extraction"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"
)

// shutdownTimeout bounds each shutdown step: finishing in-flight HTTP
// requests, then draining memorykit's workers.
const shutdownTimeout = 15 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses flags and runs the Host (or the demo) until ctx ends. It
// returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("host-api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	tokens := fs.String("tokens", "", "members and bearer tokens (JSON, see tokens.dev.json); empty uses the built-in development tokens")
	dsn := fs.String("dsn", "", "PostgreSQL DSN (default $MEMORYKIT_DSN); without one the embedded SQLite store in -data is used")
	data := fs.String("data", defaultDataDir, "directory of the embedded SQLite store (created when missing); memory survives restarts")
	memory := fs.Bool("memory", false, "keep memory in process memory only (memorystore): everything is lost on exit")
	schema := fs.String("schema", "", "PostgreSQL schema (default memorykit)")
	workerID := fs.String("worker-id", "", "worker identity on leases, unique per process sharing a database (default host-api-<random>)")
	demo := fs.Bool("demo", false, "run the scripted walk-through on the embedded store and exit")
	mcpStdio := fs.String("mcp-stdio", "", "serve MCP on standard input and output for this project, as the member whose token is in $"+envMCPToken+", instead of HTTP (for a local MCP client such as Claude Code)")
	var model modelConfig
	fs.StringVar(&model.kind, "model", modelScripted, modelUsage())
	fs.StringVar(&model.url, "model-url", "", "model server base URL (default: the provider's public API)")
	fs.StringVar(&model.name, "model-name", "", "model name, required with -model openai|anthropic")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "host-api: unexpected arguments")
		return 2
	}
	if *dsn != "" && *memory {
		fmt.Fprintln(stderr, "host-api: -memory and -dsn exclude each other")
		return 2
	}
	if *dsn == "" && !*memory { // read after parsing, so -help never prints a password
		*dsn = os.Getenv("MEMORYKIT_DSN")
	}
	dataDir := *data
	if *memory || *dsn != "" {
		dataDir = ""
	} else if dataDir == "" {
		fmt.Fprintln(stderr, "host-api: -data must name a directory (or use -memory)")
		return 2
	}
	runner, err := newTurnRunner(model, os.Getenv, nil)
	var extModel extraction.Model
	if err == nil {
		extModel, err = newExtractionModel(model, os.Getenv, nil)
	}
	if err != nil {
		fmt.Fprintln(stderr, "host-api:", err) // content-free: flag names and reason codes only
		return 2
	}
	if *demo {
		if err := runDemo(ctx, stdout); err != nil {
			fmt.Fprintln(stderr, "host-api: demo failed:", err)
			return 1
		}
		return 0
	}

	logger, err := zap.NewProduction()
	if err != nil {
		fmt.Fprintln(stderr, "host-api: logger:", err)
		return 1
	}
	defer func() { _ = logger.Sync() }()
	if *mcpStdio != "" {
		dir, err := LoadDirectory(*tokens)
		if err == nil {
			err = serveMCPStdio(ctx, logger, Options{
				Directory: dir, DSN: *dsn, Schema: *schema, DataDir: dataDir, Clock: clock.New(),
				Logger: logger, Model: ScriptedModel{}, Runner: runner, ExtractionModel: extModel, WorkerID: cmp.Or(*workerID, "host-api-"+randomHex(6)),
				TombstoneSecret: []byte(os.Getenv("MEMORYKIT_TOMBSTONE_SECRET")),
			}, *mcpStdio)
		}
		if err != nil {
			logger.Error("MCP stdio stopped with an error", zap.Error(err))
			return 1
		}
		return 0
	}
	if err := serveModel(ctx, logger, *addr, *tokens, *dsn, *schema, dataDir, *workerID, model.kind, runner, extModel); err != nil {
		logger.Error("host stopped with an error", zap.Error(err)) // memorykit errors are content-free
		return 1
	}
	return 0
}

// defaultDataDir is where the embedded SQLite store lives by default.
const defaultDataDir = "./memorykit-data"

// serve runs the Host until ctx ends, then shuts down in order: stop
// taking HTTP requests and finish the ones in flight, drain memorykit, stop
// it, and close the store (pool or file). The store is PostgreSQL with a
// dsn, else SQLite in dataDir, else (both empty) process memory.
func serve(ctx context.Context, log *zap.Logger, addr, tokens, dsn, schema, dataDir, workerID string) error {
	return serveModel(ctx, log, addr, tokens, dsn, schema, dataDir, workerID, modelScripted, nil, nil)
}

// serveModel is serve with the chat model chosen by -model: the scripted
// model when runner is nil.
func serveModel(ctx context.Context, log *zap.Logger, addr, tokens, dsn, schema, dataDir, workerID, modelKind string, runner TurnRunner, extModel extraction.Model) error {
	dir, err := LoadDirectory(tokens)
	if err != nil {
		return err
	}
	if tokens == "" {
		log.Warn("using the built-in development tokens (tokens.dev.json); never expose this Host")
	}
	if workerID == "" {
		workerID = "host-api-" + randomHex(6)
	}
	store := "memorystore"
	switch {
	case dsn != "":
		store = "pgstore"
	case dataDir != "":
		store = "sqlitestore"
	}
	secret, err := tombstoneSecret(log, os.Getenv, dsn, dataDir)
	if err != nil {
		return err
	}
	host, err := NewHost(ctx, Options{
		Directory: dir, DSN: dsn, Schema: schema, DataDir: dataDir, Clock: clock.New(),
		Logger: log, Model: ScriptedModel{}, Runner: runner, ExtractionModel: extModel, WorkerID: workerID,
		TombstoneSecret: secret,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = host.Close(ctx)
		return err
	}
	// One P for the HTTP server beside the admitted recalls (serverProcs),
	// unless the operator set GOMAXPROCS; restored when serve returns.
	if os.Getenv("GOMAXPROCS") == "" {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(host.procs))
	}
	srv := &http.Server{Handler: host.Handler(), ConnContext: host.ConnContext, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: serverReadTimeout, WriteTimeout: serverWriteTimeout, IdleTimeout: serverIdleTimeout}
	// Shutdown answers the held refusals at once instead of waiting for
	// their Retry-After.
	srv.RegisterOnShutdown(host.ReleaseRefusals)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("listening", zap.String("addr", ln.Addr().String()), zap.String("store", store), zap.String("worker_id", workerID), zap.String("model", modelKind), zap.Int("gomaxprocs", runtime.GOMAXPROCS(0)))

	var failed error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case failed = <-serveErr:
		log.Error("server failed", zap.Error(failed))
	}
	// 1. Stop intake: no new connections, wait for requests in flight.
	httpCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	httpErr := srv.Shutdown(httpCtx)
	cancel()
	// 2-4. Drain memorykit, stop it, close the pool.
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	closeErr := host.Close(drainCtx)
	log.Info("stopped")
	return errors.Join(failed, httpErr, closeErr)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
