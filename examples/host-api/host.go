package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
)

// Options configure a Host. Directory, Clock, Logger, Model and WorkerID
// are required; DSN chooses the store.
type Options struct {
	// Directory authenticates callers and authorizes every memory action.
	Directory *Directory
	// DSN selects PostgreSQL (pgstore). Without it, DataDir selects the
	// embedded SQLite store (sqlitestore), and with neither the Host runs
	// on memorystore, in process memory, lost on exit.
	DSN string
	// DataDir is the directory of the SQLite file (DataFile inside it),
	// created when missing. Used only without a DSN.
	DataDir string
	// Schema is the PostgreSQL schema (pgstore.DefaultSchema when empty).
	Schema string
	// Clock drives every timestamp, deadline, lease and retry.
	Clock clock.Clock
	// Logger receives content-free logs.
	Logger *zap.Logger
	// Model answers chat turns.
	Model Model
	// Runner, when set, runs chat turns on a real model through an
	// adapter instead of Model (see model_sdk.go).
	Runner TurnRunner
	// Extractor proposes candidate memories from finished turns. Nil
	// means memorykit's extraction engine on ExtractionModel when that is
	// set, else the offline extraction.Explicit (see policy.go).
	Extractor memorykit.Extractor
	// ExtractionModel, when set (-model openai|anthropic), is the model
	// the extraction engine (extraction.New) proposes memories with.
	ExtractionModel extraction.Model
	// WorkerID names this process's workers on every lease; it must be
	// unique among the Hosts sharing a database.
	WorkerID string
	// TombstoneSecret keys the digest an erased record keeps of its key
	// (memorykit.NewTombstoneKeyer): at least 32 bytes, required.
	TombstoneSecret []byte
	// ViewNonce is the source of the memory view's nonces; nil means
	// crypto/rand. Only the demo sets it, to print reproducible views.
	ViewNonce io.Reader

	// workerStores, if set, gives the runtime the stores its background
	// workers use, built around the Host's store: a test seam to make the
	// workers' store fail while the request path works.
	workerStores func(storekit.Store) mkruntime.Stores
	// limits, if set, replace hostLimits: a test seam to make overload
	// reachable with a few requests.
	limits *overloadLimits
	// workerNice, if set, replaces hostWorkerNice: a benchmark knob
	// (0 keeps the work pool at the default priority).
	workerNice *int
	// tarpitSlots, if set, replaces maxParkedRefusals: a test seam to
	// reach the tarpit's bound with a few connections.
	tarpitSlots *int
	// noWorkPool runs reads on the HTTP server's goroutines, as before
	// the work pool: a benchmark knob for A/B runs in one binary.
	noWorkPool bool
}

// DataFile is the name of the SQLite file in Options.DataDir.
const DataFile = "memorykit.db"

// Host is the example HTTP Host: memorykit's runtime behind a small JSON
// API.
type Host struct {
	dir        *Directory
	rt         *mkruntime.Runtime
	proj       *projector.Projector
	store      storekit.Store
	closeStore func() // closes the store (pgstore's pool, sqlitestore's file)
	clock      clock.Clock
	log        *zap.Logger
	model      Model
	runner     TurnRunner
	mux        *http.ServeMux
	// routes lists every route pattern, for the tests' coverage check.
	routes []string
	// closing is set once shutdown begins; new requests get 503.
	closing atomic.Bool
	// obs serves GET /metrics (see metrics.go).
	obs *observability
	// edge bounds the requests in flight per class (see overload.go).
	edge edge
	// procs is the GOMAXPROCS serve runs the Host with (serverProcs).
	procs int
	// pool runs admitted reads at a lower CPU priority (workpool.go);
	// nil only when Options.noWorkPool is set.
	pool *workPool
	// closedConns counts the connections closed for refusals (refuse).
	closedConns atomic.Int64
	// tarpit holds the refusals of clients that retry before Retry-After
	// (overload.go).
	tarpit *tarpit
	// purges runs and reports the background purges (purge.go).
	purges *purges
}

// NewHost opens the store, composes memorykit's runtime and starts it.
// Call Close to shut it down.
func NewHost(ctx context.Context, o Options) (*Host, error) {
	const op = "host.new"
	missing := func(field string) error {
		return memorykit.ConfigError(op, field, "missing")
	}
	switch {
	case o.Directory == nil:
		return nil, missing("directory")
	case o.Clock == nil:
		return nil, missing("clock")
	case o.Logger == nil:
		return nil, missing("logger")
	case o.Model == nil && o.Runner == nil:
		return nil, missing("model")
	}
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), secretPolicy{})
	if err != nil {
		return nil, err
	}
	tombstones, err := memorykit.NewTombstoneKeyer(o.TombstoneSecret)
	if err != nil {
		return nil, err
	}

	emb := embedder.NewLocalV2()
	limits := o.limitsOr(memorykit.RecallPolicyV1(emb.Profile(), emb.Dimension()).Deadline)
	var (
		store      storekit.Store
		closeStore = func() {}
	)
	switch {
	case o.DSN == "" && o.DataDir != "":
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return nil, memorykit.WrapError(op, memorykit.ErrInvalidConfig, "data_dir_unusable", err)
		}
		opened := o.Clock.Now()
		ss, err := sqlitestore.Open(ctx, filepath.Join(o.DataDir, DataFile), sqlitestore.Config{Clock: o.Clock, Guard: guard, Tombstones: tombstones})
		if err != nil {
			return nil, err
		}
		// Content-free: how long opening took and how many records the
		// file holds, so an operator sees the store grow.
		o.Logger.Info("store opened", zap.String("store", "sqlite"), zap.Duration("open", o.Clock.Since(opened)), zap.Int64("records", ss.Records()))
		store, closeStore = ss, func() { _ = ss.Close() }
	case o.DSN == "":
		ms, err := memorystore.New(memorystore.Config{Clock: o.Clock, Guard: guard, Tombstones: tombstones})
		if err != nil {
			return nil, err
		}
		store = ms
	default:
		ps, err := pgstore.Open(ctx, o.DSN, pgConfig(pgstore.Config{Clock: o.Clock, Guard: guard, Tombstones: tombstones, Schema: o.Schema}, limits.Admission))
		if err != nil {
			return nil, err
		}
		store, closeStore = ps, ps.Close
	}

	obs, err := newObservability(logEvents{log: o.Logger.Named("events")})
	if err != nil {
		closeStore()
		return nil, err
	}
	extractor, err := hostExtractor(o, guard, logEvents{log: o.Logger.Named("events")})
	if err != nil {
		closeStore()
		return nil, err
	}
	cfg := mkruntime.Preset(mkruntime.Essentials{
		Guard: guard, Store: store, Authorizer: o.Directory, Embedder: emb,
		Extractor: extractor, Clock: o.Clock, WorkerID: o.WorkerID,
		Logger: o.Logger.Named("memorykit"), Events: logEvents{log: o.Logger.Named("events")},
	})
	if o.workerStores != nil {
		cfg.Stores = o.workerStores(store)
	}
	cfg.Admission = limits.Admission
	obs.instrument(&cfg, o.Clock) // metrics from events, spans around the parts (metrics.go)
	rt, err := mkruntime.New(cfg)
	if err == nil {
		err = obs.observe(rt, store, cfg.Policy.EmbeddingProfile)
	}
	if err != nil {
		_ = obs.close(ctx)
		closeStore()
		return nil, err
	}
	// The projector is Session.Project's: the same recall engine, here
	// built by the Host only so that the demo can fix the view's nonce.
	proj, err := projector.New(projector.Config{Engine: rt.Engine(), Logger: o.Logger.Named("projector"), Random: o.ViewNonce})
	if err != nil {
		_ = obs.close(ctx)
		closeStore()
		return nil, err
	}
	// The runtime lives until Close, not until ctx ends: a signal must not
	// stop the workers before the HTTP server has finished its requests.
	if err := rt.Start(context.WithoutCancel(ctx)); err != nil {
		_ = obs.close(ctx)
		closeStore()
		return nil, err
	}
	nice := hostWorkerNice
	if o.workerNice != nil {
		nice = *o.workerNice
	}
	var pool *workPool
	if !o.noWorkPool {
		pool = newWorkPool(edgeCeiling(limits.EdgeReads), func() error { return lowerThreadPriority(nice) })
		if n := pool.lowerFailed.Load(); n > 0 {
			// Tolerated: the reads then compete with the front end as equals.
			o.Logger.Warn("work pool threads keep the default priority", zap.Int64("threads", n))
		}
	}
	h := &Host{
		dir: o.Directory, rt: rt, proj: proj, store: store, closeStore: closeStore,
		clock: o.Clock, log: o.Logger, model: o.Model, runner: o.Runner, mux: http.NewServeMux(), obs: obs,
		edge:   newEdge(limits, o.Clock),
		procs:  serverProcs(runtime.GOMAXPROCS(0), limits, o.recallInProcess()),
		pool:   pool,
		purges: newPurges(),
		tarpit: newTarpit(maxParkedRefusals),
	}
	if o.tarpitSlots != nil {
		h.tarpit = newTarpit(*o.tarpitSlots)
	}
	h.registerRoutes()
	if err := h.registerMCP(); err != nil {
		_ = h.Close(ctx)
		return nil, err
	}
	return h, nil
}

// Handler returns the Host's HTTP handler, with request logging. Requests
// that match no route get the JSON error shape too (see unrouted).
func (h *Host) Handler() http.Handler {
	return h.logRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canonicalPath(r.URL.Path) {
			// The mux would answer with an HTML redirect to the cleaned
			// path; the Host follows no path a request rewrites.
			writeError(w, http.StatusBadRequest, "invalid_path", "unclean_path", "")
			return
		}
		if _, pattern := h.mux.Handler(r); pattern == "" {
			unrouted(w, r, h.mux)
			return
		}
		rd, cancel := h.withDeadline(r)
		defer cancel()
		h.mux.ServeHTTP(w, rd)
		r.Pattern = rd.Pattern // for the request log
	}))
}

// unrouted answers a request that matches no route with the JSON error
// shape instead of the mux's plain text: 404 not_found (no such route),
// 405 method_not_allowed (keeping the Allow header), and 400 invalid_path
// for anything else the mux would say (a redirect).
func unrouted(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	probe := &probeWriter{header: http.Header{}}
	mux.ServeHTTP(probe, r)
	switch probe.status {
	case http.StatusMethodNotAllowed:
		if allow := probe.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "", "")
	case http.StatusNotFound, 0:
		writeError(w, http.StatusNotFound, "not_found", "no_route", "")
	default:
		writeError(w, http.StatusBadRequest, "invalid_path", "unclean_path", "")
	}
}

// canonicalPath reports a path that is already in the mux's clean form:
// rooted, with no ".", ".." or empty segment.
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

// probeWriter records what the mux would answer and discards the body.
type probeWriter struct {
	header http.Header
	status int
}

func (p *probeWriter) Header() http.Header { return p.header }

func (p *probeWriter) WriteHeader(code int) {
	if p.status == 0 {
		p.status = code
	}
}

func (p *probeWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}

// Close shuts memorykit down in order, after the HTTP server has stopped
// taking requests: refuse anything that still arrives, Drain (workers stop
// leasing, in-flight work finishes or hands its lease back when ctx ends),
// Stop, and finally close the store's pool. It returns the first error.
func (h *Host) Close(ctx context.Context) error {
	h.closing.Store(true)
	// Held refusals are answered now.
	h.tarpit.release()
	// A running purge finishes first, while ctx lasts; then it is cut
	// short, and the next purge of its project resumes it.
	h.purges.wait(ctx)
	drainErr := h.rt.Drain(ctx)
	// Stop gets its own context: it must run even when Drain ran out of
	// time, because only after Stop may the pool close.
	stopErr := h.rt.Stop(context.WithoutCancel(ctx))
	// The pool's workers end once their reads have returned (the runtime
	// has stopped, so they return at once), before the store closes.
	if h.pool != nil {
		h.pool.stop()
	}
	h.closeStore()
	obsErr := h.obs.close(context.WithoutCancel(ctx))
	return errors.Join(drainErr, stopErr, obsErr)
}

// logEvents writes memorykit's content-free events to the log.
type logEvents struct{ log *zap.Logger }

// Emit implements memorykit.EventSink.
func (l logEvents) Emit(e memorykit.Event) {
	l.log.Debug(string(e.Kind),
		zap.String("tenant_id", e.TenantID), zap.String("subject_id", e.SubjectID),
		zap.Strings("record_ids", e.RecordIDs), zap.String("job_id", e.JobID),
		zap.String("action", string(e.Action)), zap.Int("count", e.Count), zap.String("reason", e.Reason))
}
