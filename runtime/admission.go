package runtime

import (
	"container/list"
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Admission bounds the request-path store calls one Runtime runs at once,
// so an overloaded Host answers some requests quickly with ErrOverloaded
// instead of answering every request late (or not at all, once deadlines
// pass while the calls queue inside the database pool).
//
// Calls are admitted per store call in two classes: reads (recall, get,
// list, find-active, revisions) and writes (create, every transition,
// correction and job enqueue). Past its class's bound a call waits in a
// queue bounded in length (MaxQueue) and time (MaxWait, measured on the
// Runtime's Clock); a call that finds the queue full, or waits its bound
// without getting a slot, fails with a recoverable ErrOverloaded (reason
// ReasonQueueFull or ReasonQueueWait) having done nothing. Background
// workers are not admitted here: their concurrency is their own batch
// size and schedule.
//
// A queue that has not once been empty for MaxWait is a standing queue:
// the slots are not keeping up, and a call joining it would most likely
// wait MaxWait only to be refused. So while a class's queue has stood
// that long, a call that cannot take a slot at once waits at most
// CongestedWait (with zero, it is refused at once, reason
// ReasonCongested). Refusals then come back fast instead of MaxWait late,
// and the queue still absorbs a short burst once it has drained. (This is
// the adaptive timeout of CoDel-style queue management: the long wait is
// for bursts, the short one for sustained overload.)
type Admission struct {
	// MaxReads bounds the concurrent read calls (recalls included).
	MaxReads int
	// MaxWrites bounds the concurrent write calls.
	MaxWrites int
	// MaxQueue bounds how many calls of each class may wait for a slot.
	// Zero means none waits: past the bound a call fails at once.
	MaxQueue int
	// MaxWait bounds how long a queued call waits. It must be positive
	// when MaxQueue is.
	MaxWait time.Duration
	// CongestedWait bounds the wait instead of MaxWait while the class's
	// queue has not been empty for MaxWait (see above). Zero refuses such
	// a call at once; it must not exceed MaxWait.
	CongestedWait time.Duration
}

// Reason codes of ErrOverloaded.
const (
	// ReasonQueueFull: the class was at its bound and its queue full.
	ReasonQueueFull = "queue_full"
	// ReasonQueueWait: the call waited its bound (MaxWait, or
	// CongestedWait in a standing queue) without a slot.
	ReasonQueueWait = "queue_wait"
	// ReasonCongested: the class's queue has not been empty for MaxWait
	// and CongestedWait is zero, so the call was refused without waiting.
	ReasonCongested = "congested"
)

// admissionLimit caps every Admission bound: larger is a mistake.
const admissionLimit = 1 << 20

// DefaultAdmission is the preset a zero Config.Admission stands for:
// 4×GOMAXPROCS concurrent reads and as many writes (at least 8 each),
// 64 queued calls per class, a 100 ms wait and 10 ms in a standing queue.
// A Host that sizes its database pool should set Admission explicitly and
// give the pool at least MaxReads + MaxWrites connections plus one per
// worker.
func DefaultAdmission() Admission {
	n := max(8, 4*runtime.GOMAXPROCS(0))
	return Admission{MaxReads: n, MaxWrites: n, MaxQueue: 64, MaxWait: 100 * time.Millisecond,
		CongestedWait: 10 * time.Millisecond}
}

func (a Admission) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"admission.max_reads", a.MaxReads},
		{"admission.max_writes", a.MaxWrites},
	} {
		if f.v <= 0 {
			return invalid(f.name, "must_be_positive")
		}
		if f.v > admissionLimit {
			return invalid(f.name, "too_large")
		}
	}
	switch {
	case a.MaxQueue < 0:
		return invalid("admission.max_queue", "negative")
	case a.MaxQueue > admissionLimit:
		return invalid("admission.max_queue", "too_large")
	case a.MaxWait < 0:
		return invalid("admission.max_wait", "negative")
	case a.MaxQueue > 0 && a.MaxWait == 0:
		return invalid("admission.max_wait", "must_be_positive")
	case a.CongestedWait < 0:
		return invalid("admission.congested_wait", "negative")
	case a.CongestedWait > a.MaxWait:
		return invalid("admission.congested_wait", "exceeds_max_wait")
	}
	return nil
}

// effective is the Admission a Config uses: its own, or the preset.
func (a Admission) effective() Admission {
	if a == (Admission{}) {
		return DefaultAdmission()
	}
	return a
}

// class is one admission class: a counting semaphore with a bounded FIFO
// queue. A freed slot passes straight to the oldest waiter under the lock,
// so the counts never show a call as both waiting and running, and a call
// arriving just as a slot frees never finds a queue still full of callers
// that already have their slots.
type class struct {
	name    string
	limit   int
	queue   int
	wait    time.Duration
	short   time.Duration // the wait in a standing queue
	clk     clock.Clock
	refused atomic.Int64 // calls turned away since New

	mu        sync.Mutex
	running   int       // calls holding a slot
	waiters   list.List // of chan struct{}, closed when given a slot
	busySince time.Time // when the queue last stopped being empty
}

func newClass(name string, a Admission, limit int, clk clock.Clock) *class {
	return &class{name: name, limit: limit, queue: a.MaxQueue, wait: a.MaxWait, short: a.CongestedWait, clk: clk}
}

// acquire takes a slot, waiting in the queue if allowed. On success the
// caller must call release once. A ctx that ends while queued returns the
// context's error (wrapped as context_done), not ErrOverloaded.
func (c *class) acquire(ctx context.Context, op string) error {
	c.mu.Lock()
	if c.running < c.limit && c.waiters.Len() == 0 {
		c.running++
		c.mu.Unlock()
		return nil
	}
	wait, reason := c.joinLocked()
	if reason != "" {
		c.mu.Unlock()
		return c.refuse(op, reason)
	}
	ready := make(chan struct{})
	elem := c.waiters.PushBack(ready)
	// The timer is armed before the lock is released: the wait counts from
	// the moment the call shows as queued in Load, so whoever sees it
	// queued and then advances the clock also ends its wait.
	t := c.clk.Timer(wait)
	c.mu.Unlock()
	defer t.Stop()
	var err error
	select {
	case <-ready:
		return nil
	case <-t.C:
		err = c.refuse(op, ReasonQueueWait)
	case <-ctx.Done():
		err = memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", ctx.Err())
	}
	c.mu.Lock()
	select {
	case <-ready:
		// Given a slot while giving up: hand it on.
		c.mu.Unlock()
		c.release()
	default:
		c.waiters.Remove(elem)
		c.mu.Unlock()
	}
	return err
}

// joinLocked decides whether a call that found no free slot may queue, and
// for how long: the reason it may not, or its wait. c.mu is held.
func (c *class) joinLocked() (time.Duration, string) {
	n := c.waiters.Len()
	if n >= c.queue {
		return 0, ReasonQueueFull
	}
	now := c.clk.Now()
	switch {
	case n == 0:
		c.busySince = now
	case now.Sub(c.busySince) >= c.wait:
		if c.short == 0 {
			return 0, ReasonCongested
		}
		return c.short, ""
	}
	return c.wait, ""
}

// release frees a slot, giving it to the oldest waiter if there is one.
func (c *class) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if front := c.waiters.Front(); front != nil {
		close(c.waiters.Remove(front).(chan struct{}))
		return
	}
	c.running--
}

// classLoad is one class's share of a Load.
type classLoad struct {
	running, queued      int
	saturated, congested bool
}

func (c *class) load() classLoad {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.waiters.Len()
	return classLoad{
		running: c.running, queued: n,
		saturated: c.running >= c.limit && n >= c.queue,
		congested: n > 0 && c.clk.Now().Sub(c.busySince) >= c.wait,
	}
}

func (c *class) refuse(op, reason string) error {
	c.refused.Add(1)
	return &memorykit.Error{Op: op, Kind: memorykit.ErrOverloaded, Field: c.name, Reason: reason, Retry: true}
}

// admitter holds a Runtime's classes.
type admitter struct {
	reads, writes *class
}

func newAdmitter(a Admission, clk clock.Clock) *admitter {
	return &admitter{
		reads:  newClass("reads", a, a.MaxReads, clk),
		writes: newClass("writes", a, a.MaxWrites, clk),
	}
}

// Load is a snapshot of a Runtime's admission classes.
type Load struct {
	// ReadsRunning and WritesRunning are the calls holding a slot.
	ReadsRunning, WritesRunning int
	// ReadsQueued and WritesQueued are the calls waiting for one.
	ReadsQueued, WritesQueued int
	// Refused counts the calls turned away with ErrOverloaded since New.
	Refused int64
	// Saturated reports that a class has every slot taken and a full
	// queue: the next call of that class is refused at once.
	Saturated bool
	// Congested reports that a class's queue has not been empty for
	// MaxWait: its next queued call waits at most CongestedWait.
	Congested bool
}

func (a *admitter) load() Load {
	r, w := a.reads.load(), a.writes.load()
	return Load{
		ReadsRunning: r.running, WritesRunning: w.running,
		ReadsQueued: r.queued, WritesQueued: w.queued,
		Refused:   a.reads.refused.Load() + a.writes.refused.Load(),
		Saturated: r.saturated || w.saturated,
		Congested: r.congested || w.congested,
	}
}

// Load reports the Runtime's admission state, for a Host's health check
// and metrics.
func (r *Runtime) Load() Load { return r.admit.load() }

// admittedLifecycle admits each request-path lifecycle call. It sits
// under the intake gate, so a draining Runtime refuses before queueing.
type admittedLifecycle struct {
	storekit.LifecycleStore
	a *admitter
}

// run admits one call of class c and runs fn in its slot.
func run[T any](ctx context.Context, c *class, op string, fn func() (T, error)) (T, error) {
	if err := c.acquire(ctx, op); err != nil {
		var zero T
		return zero, err
	}
	defer c.release()
	return fn()
}

func (s admittedLifecycle) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	return run(ctx, s.a.writes, "runtime.create", func() (memorykit.Record, error) { return s.LifecycleStore.Create(ctx, in) })
}

func (s admittedLifecycle) Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error) {
	return run(ctx, s.a.reads, "runtime.get", func() (memorykit.Record, error) { return s.LifecycleStore.Get(ctx, scope, id) })
}

func (s admittedLifecycle) FindActive(ctx context.Context, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, error) {
	return run(ctx, s.a.reads, "runtime.find_active", func() (memorykit.Record, error) {
		return s.LifecycleStore.FindActive(ctx, scope, kind, key)
	})
}

func (s admittedLifecycle) List(ctx context.Context, f storekit.ListFilter) ([]memorykit.Record, error) {
	return run(ctx, s.a.reads, "runtime.list", func() ([]memorykit.Record, error) { return s.LifecycleStore.List(ctx, f) })
}

func (s admittedLifecycle) Activate(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return run(ctx, s.a.writes, "runtime.activate", func() (memorykit.Record, error) { return s.LifecycleStore.Activate(ctx, t) })
}

func (s admittedLifecycle) Reject(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return run(ctx, s.a.writes, "runtime.reject", func() (memorykit.Record, error) { return s.LifecycleStore.Reject(ctx, t) })
}

func (s admittedLifecycle) Correct(ctx context.Context, c storekit.Correction) (memorykit.Record, error) {
	return run(ctx, s.a.writes, "runtime.correct", func() (memorykit.Record, error) { return s.LifecycleStore.Correct(ctx, c) })
}

func (s admittedLifecycle) Forget(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return run(ctx, s.a.writes, "runtime.forget", func() (memorykit.Record, error) { return s.LifecycleStore.Forget(ctx, t) })
}

func (s admittedLifecycle) Erase(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return run(ctx, s.a.writes, "runtime.erase", func() (memorykit.Record, error) { return s.LifecycleStore.Erase(ctx, t) })
}

func (s admittedLifecycle) Revisions(ctx context.Context, scope memorykit.Scope, id string) ([]storekit.Revision, error) {
	return run(ctx, s.a.reads, "runtime.revisions", func() ([]storekit.Revision, error) {
		return s.LifecycleStore.Revisions(ctx, scope, id)
	})
}

// admittedRecall admits each recall as a read.
type admittedRecall struct {
	storekit.RecallStore
	a *admitter
}

func (s admittedRecall) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	return run(ctx, s.a.reads, "runtime.recall", func() (storekit.RecallResult, error) { return s.RecallStore.Recall(ctx, q) })
}

// admittedJobs admits each enqueue as a write; workers use the store
// directly.
type admittedJobs struct {
	storekit.JobStore
	a *admitter
}

func (s admittedJobs) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	return run(ctx, s.a.writes, "runtime.enqueue", func() (storekit.Job, error) { return s.JobStore.EnqueueJob(ctx, j) })
}

// Purge admits a purge as a write and passes it to the store when it is a
// storekit.Purger.
func (s admittedLifecycle) Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error) {
	p, ok := s.LifecycleStore.(storekit.Purger)
	if !ok {
		return memorykit.PurgeReport{}, memorykit.NewError("runtime.purge", memorykit.ErrInvalidConfig, "purge_unsupported")
	}
	return run(ctx, s.a.writes, "runtime.purge", func() (memorykit.PurgeReport, error) { return p.Purge(ctx, scope, actor, reason) })
}
