package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/pgstore"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// Overload handling of the example Host, in two layers.
//
// The edge: every project route belongs to a class (reads, writes, chats),
// and each class has a bound on the requests the Host works on at once. A
// request past it is answered 503 at once, after the cheap checks
// (authentication, headers, query string) and before its body is read, its
// query embedded or anything queued: an overloaded Host spends almost
// nothing on the requests it turns away, so their answers stay fast.
//
// The runtime behind it admits a bounded number of concurrent store calls
// (mkruntime.Admission) and refuses the excess with memorykit.ErrOverloaded,
// which the Host answers the same way. The edge bound is the runtime's
// slots, so the edge, not the runtime's queue, turns away the surplus of
// searches, reads and writes (see hostLimits).
//
// An admitted read then runs on the work pool, at a lower CPU priority
// than the goroutines that read requests and write the refusals, so that
// a refusal does not wait for a core behind the admitted work
// (workpool.go).
//
// Both answers are 503 with Retry-After and the JSON error shape
// ({"error":"overloaded","reason":...,"field":<class>}). The PostgreSQL pool
// has a connection for every admitted call and every worker, so an
// admitted call never waits for a connection. Every request runs under a
// per-route deadline on the Host's clock, and a recall that degraded says
// so in the X-Memory-Degraded header (its reason code), not only in the
// body.

// degradedHeader carries the reason code of a degraded recall.
const degradedHeader = "X-Memory-Degraded"

// retryAfterSeconds is the Retry-After of an overloaded answer.
const retryAfterSeconds = "1"

// reasonInFlight is the reason code of a request the edge turned away.
const reasonInFlight = "in_flight_limit"

// overloadLimits are the Host's overload bounds: the runtime's admission
// and the edge's bound per request class.
type overloadLimits struct {
	Admission mkruntime.Admission
	// EdgeReads, EdgeWrites and EdgeChats bound the requests of each
	// class the Host works on at once.
	EdgeReads, EdgeWrites, EdgeChats int
}

// hostLimits derives every bound from the CPUs the Host runs on, where a
// recall does its work and the recall deadline, so that admitted work
// finishes inside the deadline and the surplus is refused fast:
//
//   - Recalls at once: one per CPU (at least two, so that one request's
//     HTTP and JSON work overlaps another's recall) when recall ranks in
//     this process: memorystore and sqlitestore, and pgstore with its
//     recall cache (the default; see recallInProcess). A recall is then
//     CPU work here, so one per core keeps the cores busy and more only
//     wait for a core, which also delays the HTTP server's reading of new
//     requests. Measured on 2 cores with pgstore, same minute: with eight
//     recalls at once instead of two, goodput was no higher at 4-64
//     clients and the p99 of a success was 13-77 ms instead of 6-9 ms.
//     Four per CPU when every recall ranks in PostgreSQL (the work is then
//     split between this process, round trips and the database). Writes
//     get four per CPU either way. The PostgreSQL pool has a connection
//     for each (hostPoolSize).
//   - The edge lets in as many reads and writes as the runtime has slots:
//     the surplus is turned away before any work (no body read, no query
//     embedded), which is what keeps a refusal fast, and an admitted
//     request never waits for a slot, so it keeps its whole deadline. It
//     lets in a chat per two read slots (chats mostly wait for the model).
//   - The runtime's queue is then only for the store calls the edge does
//     not count one by one (a chat's recall and writes): one waiter per
//     slot, for at most a hundredth of the deadline (5 ms of 500 ms), and
//     not at all once the queue has stood that long (CongestedWait zero),
//     so a refusal out of the queue is still fast.
func hostLimits(cpus int, inProcess bool, deadline time.Duration) overloadLimits {
	cpus = max(1, cpus)
	reads, writes := 4*cpus, 4*cpus
	if inProcess {
		reads = max(2, cpus)
	}
	// The runtime has a slot for every request the edge may let in: the
	// class's slots and its reserve (see edgeClass).
	return overloadLimits{
		Admission: mkruntime.Admission{MaxReads: edgeCeiling(reads), MaxWrites: edgeCeiling(writes), MaxQueue: reads, MaxWait: deadline / 100},
		EdgeReads: reads, EdgeWrites: writes, EdgeChats: 2 * reads,
	}
}

// limitsOr are the limits the Host runs with: hostLimits, unless a test
// set its own.
func (o Options) limitsOr(deadline time.Duration) overloadLimits {
	if o.limits != nil {
		return *o.limits
	}
	return hostLimits(runtime.GOMAXPROCS(0), o.recallInProcess(), deadline)
}

// hostSQLRecall is the Host's pgstore.Config.SQLRecall: false, so pgstore
// recalls rank in its in-process recall cache, as the other stores do.
const hostSQLRecall = false

// recallInProcess reports whether a recall ranks in this process: always
// with memorystore and sqlitestore, and with pgstore unless its recall
// cache is off.
func (o Options) recallInProcess() bool {
	return o.DSN == "" || !hostSQLRecall
}

// serverProcs is the GOMAXPROCS the Host serves with, given the CPUs its
// limits were derived from. With the store in this process (memorystore,
// sqlitestore) a recall is CPU work on one of the Go scheduler's Ps, and
// with as many admitted recalls as Ps every P is busy: a request that
// arrives then is not even read (its connection's goroutine waits for a
// P, and the network poller is polled only when a P looks for work) until
// a recall ends or is preempted, so a refusal that takes 0.1 ms in the
// handler reached the client after tens of milliseconds. One P more than
// the admitted recalls keeps a P for the HTTP server; the operating system
// then shares the cores between the threads, and the recalls still have
// every core (less the HTTP server's share: some recall throughput is the
// price of fast refusals). When every recall ranks in PostgreSQL the work
// is in the database and the Host's goroutines mostly wait on the network,
// so its Ps are not the bottleneck and it keeps one per CPU.
func serverProcs(cpus int, l overloadLimits, inProcess bool) int {
	cpus = max(1, cpus)
	if !inProcess {
		return cpus
	}
	return max(cpus, edgeCeiling(l.EdgeReads)) + 1
}

// hostWorkerNice is how much the work pool lowers its threads' CPU
// priority (added to the process's nice value, at most 19): the reads it
// runs get a small share of a core that the front end also wants, and all
// of an idle one.
const hostWorkerNice = 10

// hostWorkerConns is how many background workers hold a connection at
// once: the embedding worker, the extraction worker and the lease reaper.
const hostWorkerConns = 3

// hostPoolSize gives the pool one connection per admitted call and per
// worker.
func hostPoolSize(a mkruntime.Admission) int32 {
	return int32(a.MaxReads + a.MaxWrites + hostWorkerConns)
}

// pgConfig completes the pgstore configuration with the pool size.
func pgConfig(c pgstore.Config, a mkruntime.Admission) pgstore.Config {
	c.MaxConns = hostPoolSize(a)
	c.SQLRecall = hostSQLRecall
	c.Workers = hostWorkerConns
	return c
}

// Request classes at the edge.
const (
	classReads  = "reads"
	classWrites = "writes"
	classChats  = "chats"
)

// classOf is a route pattern's class: chat, reads (GET and search) or
// writes (every other POST).
func classOf(pattern string) string {
	switch {
	case strings.HasSuffix(pattern, "/chat"):
		return classChats
	case strings.HasPrefix(pattern, "GET "), strings.HasSuffix(pattern, "/search"):
		return classReads
	}
	return classWrites
}

// edgeClass bounds the requests of one class in flight, and shares the
// bound fairly between the tenants that use it. It never waits: a request
// that finds no slot it may take is turned away.
//
// Fair share: a tenant is active while it has sent a request of the class
// within fairWindow (on the Host's clock). A tenant's share is what it may
// hold at once: every slot while one or two tenants are active, and
// max(1, 2·slots/n) while n > 2 are. Beyond the slots the class has a
// reserve as large (edgeCeiling), and a tenant under its share is let in
// as long as the slots and the reserve are not all taken; a tenant at or
// over its share only while a slot is free. So a lone tenant uses every
// slot and no more, and when one tenant (a retry storm that ignores
// Retry-After) holds every slot, another tenant's requests, up to its own
// share, still get in at once, on the reserve, instead of being refused
// and told to wait a second. The storm keeps its share too: it has no
// reason to be refused more than a well-behaved tenant is, it only sends
// more. While both are busy the class runs up to twice its slots, so each
// tenant's requests get about half of the cores; the bound on the total
// stays slots + reserve. Refusing costs only the checks before this one
// (authentication, headers, query); nothing is read, embedded or queued.
type edgeClass struct {
	name  string
	limit int
	// ceiling is limit plus the reserve that only tenants under their
	// share may use (edgeCeiling).
	ceiling int
	clk     clock.Clock
	// refusal is the pre-rendered body of this class's refusal.
	refusal []byte
	refused atomic.Int64
	// unfair counts the refusals of a tenant over its fair share (also
	// counted in refused).
	unfair atomic.Int64

	mu      sync.Mutex
	running int
	tenants map[string]*tenantUse
}

// tenantUse is one tenant's use of an edge class.
type tenantUse struct {
	held     int
	lastSeen time.Time
}

// fairWindow is how long a tenant counts as active after its last request.
const fairWindow = time.Second

// maxEdgeTenants bounds the tenants an edge class tracks; past it, idle
// entries are dropped first, and only authenticated tenants get one.
const maxEdgeTenants = 4096

// edge holds the Host's classes.
type edge map[string]*edgeClass

func newEdge(l overloadLimits, clk clock.Clock) edge {
	e := edge{}
	for name, n := range map[string]int{classReads: l.EdgeReads, classWrites: l.EdgeWrites, classChats: l.EdgeChats} {
		n = max(1, n)
		e[name] = &edgeClass{name: name, limit: n, ceiling: edgeCeiling(n), clk: clk, refusal: refusalBody(name), tenants: map[string]*tenantUse{}}
	}
	return e
}

// edgeCeiling is the most requests of a class with the given slots that
// the edge lets in at once: the slots and a reserve as large, which only
// tenants under their fair share may use.
func edgeCeiling(slots int) int { return 2 * max(1, slots) }

// enter takes a slot of the class for tenant, or reports that there is
// none it may take: the tenant holds its fair share and every slot is
// taken, or it is under its share and the reserve is taken too.
func (c *edgeClass) enter(tenant string) bool {
	now := c.clk.Now()
	c.mu.Lock()
	u := c.tenants[tenant]
	if u == nil {
		if len(c.tenants) >= maxEdgeTenants {
			c.pruneLocked(now)
		}
		u = &tenantUse{}
		c.tenants[tenant] = u
	}
	u.lastSeen = now
	share := max(1, min(c.limit, c.ceiling/c.activeLocked(now)))
	under := u.held < share
	ok := c.running < c.limit || (under && c.running < c.ceiling)
	// unfair: refused although a tenant under its share would have got in.
	unfair := !ok && !under && c.running < c.ceiling
	if ok {
		c.running++
		u.held++
	}
	c.mu.Unlock()
	if !ok {
		c.refused.Add(1)
		if unfair {
			c.unfair.Add(1)
		}
	}
	return ok
}

// activeLocked counts the tenants active at now (at least one: the
// caller's). c.mu is held.
func (c *edgeClass) activeLocked(now time.Time) int {
	n := 0
	for _, u := range c.tenants {
		if u.held > 0 || now.Sub(u.lastSeen) < fairWindow {
			n++
		}
	}
	return max(1, n)
}

// pruneLocked drops the tenants that hold nothing and are no longer
// active. c.mu is held.
func (c *edgeClass) pruneLocked(now time.Time) {
	for t, u := range c.tenants {
		if u.held == 0 && now.Sub(u.lastSeen) >= fairWindow {
			delete(c.tenants, t)
		}
	}
}

// leave frees tenant's slot.
func (c *edgeClass) leave(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
	if u := c.tenants[tenant]; u != nil {
		u.held--
	}
}

// full reports a class whose next request is turned away whoever sends
// it: every slot and the reserve are taken.
func (c *edgeClass) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running >= c.ceiling
}

// A connection that is refused again before the Retry-After it was last
// given has passed (a client that retries at once) has that refusal held
// until the Retry-After has passed, on the Host's clock (see tarpit). A
// closed-loop client sends its next request only after it has an answer,
// so holding the answer slows a retry storm to one request per Retry-After
// per connection, at the cost of a parked goroutine instead of a core. A
// client that waits as Retry-After says is answered at once.
//
// Only when the tarpit is full is a refusal answered at once, and a
// connection refused connRefusalLimit times within connRefusalWindow that
// way has it closed after the answer. Closing is the last resort: a new
// connection costs the Host more than a held answer, and it loses the
// connection's history.
const (
	connRefusalLimit  = 16
	connRefusalWindow = time.Second
	// retryAfter is retryAfterSeconds as a duration.
	retryAfter = time.Second
	// maxParkedRefusals bounds the refusals held at once; past it a
	// refusal is answered at once.
	maxParkedRefusals = 4096
)

// connKey keys a connection's connState in its requests' contexts.
type connKey struct{}

// connState is one connection's refusal history.
type connState struct {
	mu       sync.Mutex
	since    time.Time // start of the current window
	refusals int       // refusals answered at once since then
	retryAt  time.Time // when the last refusal's Retry-After passes
}

// early reports how long before the Retry-After of the connection's last
// refusal a new refusal at now comes (zero or less: not early).
func (s *connState) early(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retryAt.IsZero() {
		return 0
	}
	return s.retryAt.Sub(now)
}

// answered records that a refusal was answered at now with Retry-After.
func (s *connState) answered(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retryAt = now.Add(retryAfter)
}

// refused counts a refusal answered at once at now and reports whether
// the connection has now been refused so connRefusalLimit times within
// connRefusalWindow.
func (s *connState) refused(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refusals == 0 || now.Sub(s.since) >= connRefusalWindow {
		s.since, s.refusals = now, 0
	}
	s.refusals++
	return s.refusals >= connRefusalLimit
}

// ConnContext is the Host's http.Server.ConnContext: it gives each
// connection the refusal history behind holding an early retry's refusal
// and closing a hammering client's connection (see refuse). Without it
// the Host still refuses, but answers every refusal at once and never
// closes a connection for it.
func (h *Host) ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connState{})
}

// tarpit holds refusals: at most cap(slots) at once, each until its timer
// on the Host's clock fires, its request ends or the tarpit is released
// (the Host shuts down).
type tarpit struct {
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
	// parked is the number of refusals held now; held counts every
	// refusal ever held; full counts those answered at once because
	// every slot was taken.
	parked, held, full atomic.Int64
}

func newTarpit(n int) *tarpit {
	return &tarpit{slots: make(chan struct{}, max(0, n)), done: make(chan struct{})}
}

// hold parks the caller for d on clk, or less if ctx ends or the tarpit is
// released. It reports false, at once, when every slot is taken or the
// tarpit is already released.
func (t *tarpit) hold(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	select {
	case <-t.done:
		return false
	default:
	}
	select {
	case t.slots <- struct{}{}:
	default:
		t.full.Add(1)
		return false
	}
	defer func() { <-t.slots }()
	timer := clk.Timer(d)
	defer timer.Stop()
	t.held.Add(1)
	t.parked.Add(1)
	defer t.parked.Add(-1)
	select {
	case <-timer.C:
	case <-ctx.Done():
	case <-t.done:
	}
	return true
}

// release answers every held refusal at once, and every later one too.
// It is safe to call more than once.
func (t *tarpit) release() {
	t.once.Do(func() { close(t.done) })
}

// refusalBody renders a class's refusal once: the JSON error shape that
// writeErr would write for overloadedAt(class).
func refusalBody(class string) []byte {
	_, body := errorResponse(overloadedAt(class))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
	return b.Bytes()
}

// writeRefusal writes a class's pre-rendered refusal: the same status,
// headers and body as writeErr(w, overloadedAt(class)), without encoding
// anything per refusal.
func (c *edgeClass) writeRefusal(w http.ResponseWriter) {
	hd := w.Header()
	hd["Retry-After"] = retryAfterValue
	hd["Content-Type"] = jsonContentType
	hd["Cache-Control"] = noStoreValue
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(c.refusal)
}

// Header values of a refusal, shared (never modified).
var (
	retryAfterValue = []string{retryAfterSeconds}
	jsonContentType = []string{"application/json; charset=utf-8"}
	noStoreValue    = []string{"no-store"}
)

// overloadedAt is the error of a request the edge turned away.
func overloadedAt(class string) error {
	return &memorykit.Error{Op: "host.edge", Kind: memorykit.ErrOverloaded, Field: class, Reason: reasonInFlight, Retry: true}
}

// Per-route deadlines: chat waits for the model, everything else only for
// memorykit.
const (
	requestTimeout = 5 * time.Second
	chatTimeout    = 60 * time.Second
)

// Server timeouts (main.go): reading a whole request, writing a response
// (longer than the slowest route's deadline) and idle keep-alives.
const (
	serverReadTimeout  = 15 * time.Second
	serverWriteTimeout = chatTimeout + 5*time.Second
	serverIdleTimeout  = 2 * time.Minute
)

// withDeadline gives the request its route's deadline on the Host's
// clock. The returned cancel must be called when the request ends.
func (h *Host) withDeadline(r *http.Request) (*http.Request, context.CancelFunc) {
	d := requestTimeout
	if strings.HasSuffix(r.URL.Path, "/chat") {
		d = chatTimeout
	}
	ctx, cancel := h.clock.WithTimeout(r.Context(), d)
	return r.WithContext(ctx), cancel
}

// markDegraded sets X-Memory-Degraded when recall degraded.
func markDegraded(w http.ResponseWriter, degraded bool, reason string) {
	if !degraded {
		return
	}
	if reason == "" {
		reason = "degraded"
	}
	w.Header().Set(degradedHeader, reason)
}

// overloaded reports whether the Host is turning requests away now: an
// edge class is full or a runtime admission class is saturated.
func (h *Host) overloaded() bool {
	for _, c := range h.edge {
		if c.full() {
			return true
		}
	}
	return h.rt.Load().Saturated
}

// ReleaseRefusals answers every refusal the Host holds (see refuse) at
// once, and every later one too. Close calls it; main.go also registers it
// with http.Server.RegisterOnShutdown, so that Shutdown does not wait out
// the held refusals.
func (h *Host) ReleaseRefusals() { h.tarpit.release() }
