package main

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/goagents/memorykit/pgstore"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// Overload handling of the example Host.
//
// The runtime admits a bounded number of concurrent store calls (see
// hostAdmission) and turns the excess away with memorykit.ErrOverloaded,
// which the Host answers 503 with Retry-After and the JSON error shape.
// The PostgreSQL pool has a connection for every admitted call and every
// worker, so an admitted call never waits for a connection. Every request
// runs under a per-route deadline on the Host's clock, and a recall that
// degraded says so in the X-Memory-Degraded header (its reason code), not
// only in the body.

// degradedHeader carries the reason code of a degraded recall.
const degradedHeader = "X-Memory-Degraded"

// retryAfterSeconds is the Retry-After of an overloaded answer.
const retryAfterSeconds = "1"

// hostAdmission bounds the runtime's concurrent request-path store calls.
func hostAdmission() mkruntime.Admission {
	return mkruntime.Admission{MaxReads: 16, MaxWrites: 8, MaxQueue: 32, MaxWait: 50 * time.Millisecond}
}

// admissionOr is the Admission the Host gives its runtime.
func (o Options) admissionOr() mkruntime.Admission {
	if o.admission != nil {
		return *o.admission
	}
	return hostAdmission()
}

// hostWorkerConns is how many background workers hold a connection at
// once: the embedding worker, the extraction worker and the lease reaper.
const hostWorkerConns = 3

// hostPoolSize gives the pool one connection per admitted call and per
// worker.
func hostPoolSize(a mkruntime.Admission) int32 {
	return int32(a.MaxReads + a.MaxWrites + hostWorkerConns)
}

// pgConfig completes the pgstore configuration with the pool size.
func pgConfig(c pgstore.Config) pgstore.Config {
	c.MaxConns = hostPoolSize(hostAdmission())
	c.Workers = hostWorkerConns
	return c
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

// overloaded reports whether the runtime is turning requests away now.
func (h *Host) overloaded() bool { return h.rt.Load().Saturated }
