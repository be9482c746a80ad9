package main

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// The work pool separates the Host's front end from the work it admitted.
//
// Under overload the Host must answer the requests it turns away at once,
// but a refusal can only be written once the goroutine reading that
// connection gets a core, and the cores are busy with the admitted recalls
// (CPU work in this process with memorystore, sqlitestore and pgstore's
// recall cache). Go's scheduler has no priorities, and the operating
// system sees only threads. So the handler of an admitted read runs on a
// small pool of goroutines, each locked to an OS thread of its own whose
// CPU priority the worker lowers (a higher nice value on Linux; see
// lowerThreadPriority). The threads that accept connections, read and
// authenticate requests and write 503s and /healthz keep the default
// priority and win a contended core.
//
// The pool has exactly as many workers as the edge admits reads at once
// (the class's slots and its reserve; see edgeClass), so it adds no queue: an admitted request always finds a worker (at worst one
// that is a few instructions from taking its next job). Lowering a
// thread's priority is one-way for an unprivileged process, so a worker
// never unlocks its thread: the thread serves the pool until the worker
// ends, and then the Go runtime discards it instead of reusing it for
// other goroutines.
//
// What the caller keeps: the request's context and its per-route deadline
// (the work reads them as before), and its panics (a panic in the work is
// raised again in the caller's goroutine, with the same value, so
// net/http's recovery, http.ErrAbortHandler included, behaves as without
// the pool). The caller waits until the work has returned, so the work
// may use the http.ResponseWriter.

// errPoolStopped is run's error once the pool has stopped.
var errPoolStopped = errors.New("host: work pool stopped")

// errWorkExited is raised in the caller when the work ended its goroutine
// (runtime.Goexit) instead of returning.
var errWorkExited = errors.New("host: pooled work called runtime.Goexit")

// workPool runs work on a fixed set of lower-priority, thread-locked
// goroutines. Create it with newWorkPool; stop it with stop.
type workPool struct {
	jobs     chan *poolJob
	quit     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	// lower lowers the priority of the calling thread (locked by then).
	lower func() error
	// lowered and lowerFailed count the workers whose thread got a lower
	// priority and those where that failed (the worker then runs at the
	// default priority: only the separation is lost).
	lowered, lowerFailed atomic.Int64
}

// poolJob is one call of run.
type poolJob struct {
	fn   func()
	done chan struct{}
	// panicked and value record a panic in fn; exited a Goexit.
	panicked, exited bool
	value            any
}

// newWorkPool starts n workers (at least one) and returns once each has
// run lower on its locked thread.
func newWorkPool(n int, lower func() error) *workPool {
	p := &workPool{jobs: make(chan *poolJob), quit: make(chan struct{}), lower: lower}
	n = max(1, n)
	var ready sync.WaitGroup
	ready.Add(n)
	p.wg.Add(n)
	for range n {
		go p.worker(ready.Done)
	}
	ready.Wait()
	return p
}

// worker serves jobs until the pool stops; ready, if set, is called once
// its thread is set up.
func (p *workPool) worker(ready func()) {
	defer p.wg.Done()
	// Never unlocked: a thread whose priority was lowered stays with the
	// pool, and the runtime ends it when this goroutine returns.
	runtime.LockOSThread()
	if p.lower != nil {
		if err := p.lower(); err != nil {
			p.lowerFailed.Add(1)
		} else {
			p.lowered.Add(1)
		}
	}
	if ready != nil {
		ready()
	}
	for {
		select {
		case j := <-p.jobs:
			p.exec(j)
		case <-p.quit:
			return
		}
	}
}

// exec runs one job, recording a panic in it. If fn calls
// runtime.Goexit, this goroutine ends after exec's deferred call, which
// starts a replacement worker so that the pool keeps its size.
func (p *workPool) exec(j *poolJob) {
	returned := false
	defer func() {
		if !returned {
			if v := recover(); v != nil {
				j.panicked, j.value = true, v
			} else {
				j.exited = true
				p.wg.Add(1)
				go p.worker(nil)
			}
		}
		close(j.done)
	}()
	j.fn()
	returned = true
}

// run runs fn on a worker and returns once fn has returned. It returns
// ctx's error, without running fn, when ctx ends before a worker takes
// it, and errPoolStopped once the pool has stopped; after a worker took
// fn it waits for fn however ctx ends (fn must watch ctx itself). A panic
// in fn is raised again here with the same value.
func (p *workPool) run(ctx context.Context, fn func()) error {
	j := &poolJob{fn: fn, done: make(chan struct{})}
	select {
	case <-p.quit:
		return errPoolStopped
	default:
	}
	select {
	case p.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.quit:
		return errPoolStopped
	}
	<-j.done
	switch {
	case j.panicked:
		panic(j.value)
	case j.exited:
		panic(errWorkExited)
	}
	return nil
}

// stop ends the workers once their current work has returned and waits
// for them. Calling it again does nothing.
func (p *workPool) stop() {
	p.stopOnce.Do(func() { close(p.quit) })
	p.wg.Wait()
}
