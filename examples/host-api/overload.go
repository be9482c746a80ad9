package main

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

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
	return overloadLimits{
		Admission: mkruntime.Admission{MaxReads: reads, MaxWrites: writes, MaxQueue: reads, MaxWait: deadline / 100},
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
	return max(cpus, l.Admission.MaxReads) + 1
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

// edgeClass bounds the requests of one class in flight. It never waits:
// a request that finds every slot taken is turned away.
type edgeClass struct {
	name    string
	slots   chan struct{}
	refused atomic.Int64
}

// edge holds the Host's classes.
type edge map[string]*edgeClass

func newEdge(l overloadLimits) edge {
	e := edge{}
	for name, n := range map[string]int{classReads: l.EdgeReads, classWrites: l.EdgeWrites, classChats: l.EdgeChats} {
		e[name] = &edgeClass{name: name, slots: make(chan struct{}, max(1, n))}
	}
	return e
}

// enter takes a slot of the class, or reports that there is none.
func (c *edgeClass) enter() bool {
	select {
	case c.slots <- struct{}{}:
		return true
	default:
		c.refused.Add(1)
		return false
	}
}

func (c *edgeClass) leave() { <-c.slots }

// full reports a class whose next request is turned away.
func (c *edgeClass) full() bool { return len(c.slots) == cap(c.slots) }

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
