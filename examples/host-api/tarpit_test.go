package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// guard bounds, in real time, every wait of these tests on the Host.
const guard = 5 * time.Second

// refusalEnv starts a Host whose only read slot is taken, so that every
// search is refused, with room for slots held refusals.
func refusalEnv(t *testing.T, slots int) *env {
	t.Helper()
	lim := hostLimits(2, true, time.Second)
	lim.EdgeReads = 1
	e := newEnv(t, memoryBackend, nil, func(o *Options) { o.limits, o.tarpitSlots = &lim, &slots })
	reads := e.host.edge[classReads]
	if !reads.enter("acme") {
		t.Fatal("slot not taken")
	}
	t.Cleanup(func() { reads.leave("acme") })
	return e
}

// conn is one client connection (the transport keeps at most one).
type conn struct {
	t      *testing.T
	e      *env
	client *http.Client
}

func newConn(t *testing.T, e *env) *conn {
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	return &conn{t: t, e: e, client: &http.Client{Transport: tr}}
}

// answer is one response or the error of its request.
type answer struct {
	status     int
	retryAfter string
	body       string
	closed     bool
	err        error
}

// send starts a search on the connection and returns where its answer
// will arrive.
func (c *conn) send(ctx context.Context) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, "POST", c.e.srv.URL+apollo+"/search", strings.NewReader(`{"query":"x"}`))
		if err != nil {
			out <- answer{err: err}
			return
		}
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := c.client.Do(req)
		if err != nil {
			out <- answer{err: err}
			return
		}
		b, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		out <- answer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), body: string(b), closed: res.Close, err: err}
	}()
	return out
}

// await returns the answer, failing the test if none comes within guard.
func await(t *testing.T, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("request: %v", a.err)
		}
		return a
	case <-time.After(guard):
		t.Fatal("no answer within the guard")
		return answer{}
	}
}

// refusal asserts a 503 with Retry-After and the pre-rendered body.
func refusal(t *testing.T, a answer) {
	t.Helper()
	if a.status != http.StatusServiceUnavailable || a.retryAfter != retryAfterSeconds {
		t.Fatalf("answer %d, Retry-After %q", a.status, a.retryAfter)
	}
	if !strings.Contains(a.body, `"error":"overloaded"`) || !strings.Contains(a.body, reasonInFlight) {
		t.Fatalf("body %q", a.body)
	}
}

// parkedIs waits, bounded by guard, until the tarpit holds n refusals.
func parkedIs(t *testing.T, tp *tarpit, n int64) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for tp.parked.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("tarpit holds %d refusals, want %d", tp.parked.Load(), n)
		}
		runtime.Gosched()
	}
}

// TestRefusalHeldUntilRetryAfter: a connection that retries at once after
// a 503 gets its next 503 only once the Retry-After it was given has
// passed on the Host's clock; one that waited as told is answered at once.
func TestRefusalHeldUntilRetryAfter(t *testing.T) {
	e := refusalEnv(t, 8)
	c := newConn(t, e)
	ctx := context.Background()
	refusal(t, await(t, c.send(ctx)))
	if e.host.tarpit.held.Load() != 0 {
		t.Fatal("first refusal held")
	}
	// At once again: held.
	e.clk.Add(100 * time.Millisecond)
	next := c.send(ctx)
	parkedIs(t, e.host.tarpit, 1)
	// Still held a moment before the Retry-After passes.
	e.clk.Add(retryAfter - 100*time.Millisecond - time.Millisecond)
	select {
	case a := <-next:
		t.Fatalf("answered %d before Retry-After", a.status)
	default:
	}
	if e.host.tarpit.parked.Load() != 1 {
		t.Fatal("released before Retry-After")
	}
	e.clk.Add(time.Millisecond)
	a := await(t, next)
	refusal(t, a)
	if a.closed {
		t.Fatal("held refusal closed the connection")
	}
	parkedIs(t, e.host.tarpit, 0)
	// A client that waits the Retry-After is answered at once: the mock
	// clock does not move while it waits for the answer.
	e.clk.Add(retryAfter)
	refusal(t, await(t, c.send(ctx)))
	if n := e.host.tarpit.held.Load(); n != 1 {
		t.Fatalf("held %d refusals, want 1", n)
	}
	// Another connection is not delayed by this one's history.
	refusal(t, await(t, newConn(t, e).send(ctx)))
	if n := e.host.tarpit.held.Load(); n != 1 {
		t.Fatalf("held %d refusals, want 1", n)
	}
}

// TestHeldRefusalsReleasedOnClose: the Host's shutdown (ReleaseRefusals,
// also called by Close) answers a held refusal at once, and later early
// retries are no longer held.
func TestHeldRefusalsReleasedOnClose(t *testing.T) {
	e := refusalEnv(t, 8)
	c := newConn(t, e)
	ctx := context.Background()
	refusal(t, await(t, c.send(ctx)))
	next := c.send(ctx)
	parkedIs(t, e.host.tarpit, 1)
	e.host.ReleaseRefusals()
	refusal(t, await(t, next))
	parkedIs(t, e.host.tarpit, 0)
	refusal(t, await(t, c.send(ctx)))
	if n := e.host.tarpit.held.Load(); n != 1 {
		t.Fatalf("held %d refusals, want 1", n)
	}
	// Close releases too: a second call is harmless.
	e.close()
}

// TestHeldRefusalEndsWithItsRequest: a held refusal ends when its
// request's context does, and gives its slot back. (The HTTP server
// cancels a request's context on a client's disconnect only once the
// body has been read, and a refusal reads none: a client that gives up is
// then held at most until its Retry-After, shown below.)
func TestHeldRefusalEndsWithItsRequest(t *testing.T) {
	tp := newTarpit(1)
	clk := clock.NewMock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() { done <- tp.hold(ctx, clk, time.Hour) }()
	parkedIs(t, tp, 1)
	cancel()
	select {
	case held := <-done:
		if !held {
			t.Fatal("not held")
		}
	case <-time.After(guard):
		t.Fatal("hold outlived its context")
	}
	if len(tp.slots) != 0 || tp.parked.Load() != 0 {
		t.Fatal("slot not given back")
	}

	e := refusalEnv(t, 8)
	c := newConn(t, e)
	refusal(t, await(t, c.send(context.Background())))
	rctx, rcancel := context.WithCancel(context.Background())
	next := c.send(rctx)
	parkedIs(t, e.host.tarpit, 1)
	rcancel()
	select {
	case a := <-next:
		if !errors.Is(a.err, context.Canceled) {
			t.Fatalf("cancelled request: %+v", a)
		}
	case <-time.After(guard):
		t.Fatal("cancelled request not ended")
	}
	e.clk.Add(retryAfter)
	parkedIs(t, e.host.tarpit, 0)
}

// TestTarpitBound: the tarpit holds at most its bound of refusals; an
// early retry past it is answered at once.
func TestTarpitBound(t *testing.T) {
	e := refusalEnv(t, 1)
	a, b := newConn(t, e), newConn(t, e)
	ctx := context.Background()
	refusal(t, await(t, a.send(ctx)))
	refusal(t, await(t, b.send(ctx)))
	heldA := a.send(ctx)
	parkedIs(t, e.host.tarpit, 1)
	// The bound is reached: b's early retry is answered without the
	// clock moving.
	refusal(t, await(t, b.send(ctx)))
	if full := e.host.tarpit.full.Load(); full != 1 {
		t.Fatalf("answered %d refusals at once for a full tarpit, want 1", full)
	}
	e.clk.Add(retryAfter)
	refusal(t, await(t, heldA))
	parkedIs(t, e.host.tarpit, 0)
}

// TestRefusalPrerenderedMatchesWriteErr: the pre-rendered refusal is the
// same answer writeErr gives for the edge's error, for every class.
func TestRefusalPrerenderedMatchesWriteErr(t *testing.T) {
	e := newEdge(hostLimits(2, true, time.Second), nil)
	for name, c := range e {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		writeErr(want, overloadedAt(name))
		c.writeRefusal(got)
		if got.Code != want.Code || got.Body.String() != want.Body.String() {
			t.Errorf("%s: %d %q, want %d %q", name, got.Code, got.Body, want.Code, want.Body)
		}
		for _, k := range []string{"Retry-After", "Content-Type", "Cache-Control"} {
			if got.Header().Get(k) != want.Header().Get(k) {
				t.Errorf("%s: %s %q, want %q", name, k, got.Header().Get(k), want.Header().Get(k))
			}
		}
	}
}
