package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkPoolRunsWorkAndWaitsForIt: run hands fn to a worker, returns
// only after fn has returned, and every worker set up its thread (lower
// ran once per worker) before the pool was returned.
func TestWorkPoolRunsWorkAndWaitsForIt(t *testing.T) {
	var lowered atomic.Int64
	p := newWorkPool(3, func() error { lowered.Add(1); return nil })
	defer p.stop()
	if lowered.Load() != 3 || p.lowered.Load() != 3 || p.lowerFailed.Load() != 0 {
		t.Fatalf("lower ran %d times, counted %d lowered, %d failed", lowered.Load(), p.lowered.Load(), p.lowerFailed.Load())
	}
	release := make(chan struct{})
	var done atomic.Bool
	ret := make(chan error, 1)
	go func() {
		ret <- p.run(context.Background(), func() {
			<-release
			done.Store(true)
		})
	}()
	// The three workers serve three calls at once: the blocked one above
	// does not hold up the others.
	for range 2 {
		if err := p.run(context.Background(), func() {}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := <-ret; err != nil || !done.Load() {
		t.Fatalf("run returned %v before its work finished (done %v)", err, done.Load())
	}
}

// TestWorkPoolRaisesPanicsInCaller: a panic in the work is raised again
// in run's caller with the same value (http.ErrAbortHandler stays itself,
// so net/http treats it as usual), and the worker survives it.
func TestWorkPoolRaisesPanicsInCaller(t *testing.T) {
	p := newWorkPool(1, nil)
	defer p.stop()
	for _, v := range []any{http.ErrAbortHandler, "boom"} {
		got := func() (r any) {
			defer func() { r = recover() }()
			_ = p.run(context.Background(), func() { panic(v) })
			return nil
		}()
		if got != v {
			t.Fatalf("recovered %v, want %v", got, v)
		}
	}
	ran := false
	if err := p.run(context.Background(), func() { ran = true }); err != nil || !ran {
		t.Fatalf("after panics: %v, ran %v", err, ran)
	}
}

// TestWorkPoolSurvivesGoexit: work that ends its goroutine is reported
// to the caller as a panic, and the pool replaces the worker, so it keeps
// its size.
func TestWorkPoolSurvivesGoexit(t *testing.T) {
	var lowered atomic.Int64
	p := newWorkPool(1, func() error { lowered.Add(1); return nil })
	defer p.stop()
	got := func() (r any) {
		defer func() { r = recover() }()
		_ = p.run(context.Background(), runtime.Goexit)
		return nil
	}()
	if got != errWorkExited {
		t.Fatalf("recovered %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ran := false
	if err := p.run(ctx, func() { ran = true }); err != nil || !ran {
		t.Fatalf("after Goexit: %v, ran %v", err, ran)
	}
	if lowered.Load() != 2 {
		t.Fatalf("replacement thread not set up: lower ran %d times", lowered.Load())
	}
}

// TestWorkPoolHonoursCancellation: a call whose context ends before a
// worker is free returns the context's error and its work never runs.
func TestWorkPoolHonoursCancellation(t *testing.T) {
	p := newWorkPool(1, nil)
	defer p.stop()
	busy, release := make(chan struct{}), make(chan struct{})
	ret := make(chan error, 1)
	go func() { ret <- p.run(context.Background(), func() { close(busy); <-release }) }()
	<-busy
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := p.run(ctx, func() { ran = true }); !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("cancelled call: %v, ran %v", err, ran)
	}
	close(release)
	if err := <-ret; err != nil {
		t.Fatal(err)
	}
}

// TestWorkPoolStop: stop waits for the work in flight, ends every worker
// (goleak in TestMain checks that their goroutines are gone), is safe to
// call twice, and later calls are refused without running.
func TestWorkPoolStop(t *testing.T) {
	p := newWorkPool(2, nil)
	busy, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	go func() {
		_ = p.run(context.Background(), func() { close(busy); <-release; finished.Store(true) })
	}()
	<-busy
	stopped := make(chan struct{})
	go func() { p.stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stop returned with work in flight")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-stopped
	if !finished.Load() {
		t.Fatal("stop returned before the work finished")
	}
	p.stop()
	ran := false
	if err := p.run(context.Background(), func() { ran = true }); !errors.Is(err, errPoolStopped) || ran {
		t.Fatalf("after stop: %v, ran %v", err, ran)
	}
}

// TestWorkPoolToleratesLowerFailure: a thread whose priority cannot be
// lowered still serves the pool; the failure is only counted.
func TestWorkPoolToleratesLowerFailure(t *testing.T) {
	p := newWorkPool(2, func() error { return errors.New("setpriority: not permitted") })
	defer p.stop()
	if p.lowerFailed.Load() != 2 || p.lowered.Load() != 0 {
		t.Fatalf("failed %d, lowered %d", p.lowerFailed.Load(), p.lowered.Load())
	}
	ran := false
	if err := p.run(context.Background(), func() { ran = true }); err != nil || !ran {
		t.Fatalf("%v, ran %v", err, ran)
	}
}

// TestHostPoolHasAWorkerPerReadSlot: the Host's work pool has exactly as
// many workers as the edge lets reads in at once (its slots and reserve),
// so an admitted read never queues for a worker and the pool adds no
// queue of its own.
func TestHostPoolHasAWorkerPerReadSlot(t *testing.T) {
	lim := hostLimits(2, true, 500*time.Millisecond)
	lim.EdgeReads = 3
	e := newEnv(t, memoryBackend, nil, func(o *Options) { o.limits = &lim })
	p := e.host.pool
	c := e.host.edge[classReads]
	if n := p.lowered.Load() + p.lowerFailed.Load(); n != 6 || c.limit != 3 || c.ceiling != 6 {
		t.Fatalf("%d workers for %d read slots and a ceiling of %d", n, c.limit, c.ceiling)
	}
}

// TestPoolRefusalsAre503: a read the pool did not run is answered 503:
// draining once the pool has stopped, deadline when the request ended
// before a worker took it.
func TestPoolRefusalsAre503(t *testing.T) {
	for err, want := range map[error]string{errPoolStopped: "draining", context.DeadlineExceeded: "deadline"} {
		rec := httptest.NewRecorder()
		writePoolErr(rec, err)
		var body errorBody
		if jerr := json.Unmarshal(rec.Body.Bytes(), &body); jerr != nil {
			t.Fatal(jerr)
		}
		if rec.Code != http.StatusServiceUnavailable || body.Error != want {
			t.Errorf("%v: %d %+v", err, rec.Code, body)
		}
	}
}
