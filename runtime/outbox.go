package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
)

// ActorOutbox is the name Hooks.OnWait gets for the outbox's retry waits.
const ActorOutbox = "outbox"

// Reason codes of FinishTurn results the outbox decides.
const (
	// ReasonOutboxFull: the turn failed to enqueue recoverably and the
	// outbox had no room (MaxTurns or MaxBytes); it was dropped.
	ReasonOutboxFull = "outbox_full"
	// ReasonOutboxClosed: the turn failed to enqueue recoverably after the
	// outbox was closed by Drain or Stop; it was dropped.
	ReasonOutboxClosed = "outbox_closed"
)

// Outbox bounds the in-process outbox. A finished turn whose extraction
// job could not be stored because of a recoverable failure (the database
// restarting, say) is held there and stored again with backoff on the
// Clock until it lands or the Runtime drains. What is still held then is
// reported (content-free) and handed to OnDrain.
type Outbox struct {
	// MaxTurns bounds how many turns the outbox holds; it must be positive.
	MaxTurns int
	// MaxBytes bounds the payload bytes the outbox holds; it must be
	// positive.
	MaxBytes int
	// Retry sets the waits between attempts to store a held turn.
	Retry memorykit.Backoff
	// OnDrain, if set, receives the turns still held when Drain or Stop
	// closes the outbox, with the content-free report, so a Host can
	// persist them. It is called at most once, on the goroutine of that
	// Drain or Stop call, and only when turns are left.
	OnDrain func(OutboxReport, []extractworker.Turn)
}

func (o Outbox) validate() error {
	switch {
	case o.MaxTurns <= 0:
		return invalid("outbox.max_turns", "must_be_positive")
	case o.MaxBytes <= 0:
		return invalid("outbox.max_bytes", "must_be_positive")
	}
	return storekit.PrefixField("runtime.new", "outbox.retry", o.Retry.Validate())
}

// OutboxReport is the outbox's content-free account.
type OutboxReport struct {
	// Held is how many turns the outbox holds now (after it closed: how
	// many were left and handed to OnDrain).
	Held int
	// Bytes is the payload bytes of the held turns.
	Bytes int
	// JobIDs are the held turns' job identities, oldest first.
	JobIDs []string
	// Deferred counts turns taken into the outbox.
	Deferred int
	// Landed counts held turns stored by a retry (or found stored).
	Landed int
	// Discarded counts held turns whose retry failed for good (the
	// principal lost PermExtract, say).
	Discarded int
	// Dropped counts turns refused because the outbox was full or closed.
	Dropped int
	// Closed reports whether Drain or Stop closed the outbox.
	Closed bool
}

// outbox is the Runtime's bounded retry queue for failed enqueues.
type outbox struct {
	cfg  Outbox
	clk  clock.Clock
	log  *zap.Logger
	enq  *extractworker.Enqueuer // not gated: it runs on during Drain
	hook func(supervisor.Wait)

	mu       sync.Mutex
	items    []*heldTurn
	byID     map[string]*heldTurn
	bytes    int
	closed   bool
	running  bool
	cancel   context.CancelFunc
	done     chan struct{}
	wake     chan struct{}
	deferred int
	landed   int
	discard  int
	dropped  int
	left     OutboxReport // the report at close
}

type heldTurn struct {
	turn    extractworker.Turn
	jobID   string
	attempt int // failed enqueues so far
	due     time.Time
}

// newRuntimeOutbox builds the outbox with its own enqueuer on the ungated
// job store, so held turns can still be stored while the Runtime drains.
func newRuntimeOutbox(cfg Config) (*outbox, error) {
	log := cfg.Logger.Named("outbox")
	enq, err := extractworker.NewEnqueuer(extractworker.EnqueuerConfig{
		Store: cfg.Stores.Jobs, Authorizer: cfg.Authorizer, Clock: cfg.Clock,
		Logger: log, Events: cfg.Events, MaxAttempts: cfg.Workers.JobMaxAttempts,
		MaxReaps: cfg.Workers.JobMaxReaps,
	})
	if err != nil {
		return nil, err
	}
	var hook func(supervisor.Wait)
	if cfg.hooks.OnWait != nil {
		hook = func(w supervisor.Wait) { cfg.hooks.OnWait(ActorOutbox, w) }
	}
	return newOutbox(cfg.Outbox, cfg.Clock, log, enq, hook), nil
}

func newOutbox(cfg Outbox, clk clock.Clock, log *zap.Logger, enq *extractworker.Enqueuer, hook func(supervisor.Wait)) *outbox {
	return &outbox{
		cfg: cfg, clk: clk, log: log, enq: enq, hook: hook,
		byID: make(map[string]*heldTurn), wake: make(chan struct{}, 1),
	}
}

// finishTurn enqueues the turn and, on a recoverable failure, holds it in
// the outbox. It never fails the turn.
func (r *Runtime) finishTurn(ctx context.Context, t extractworker.Turn) extractworker.EnqueueResult {
	res := r.enqueuer.Enqueue(ctx, t)
	if res.Status != extractworker.EnqueueFailed || !memorykit.IsRecoverable(res.Err) || res.JobID == "" {
		return res
	}
	return r.outbox.hold(t, res)
}

// hold takes a turn whose enqueue failed recoverably.
func (o *outbox) hold(t extractworker.Turn, res extractworker.EnqueueResult) extractworker.EnqueueResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := extractworker.EnqueueResult{JobID: res.JobID, Reason: res.Reason, Err: res.Err}
	if _, ok := o.byID[res.JobID]; ok {
		out.Status = extractworker.EnqueueDeferred
		return out
	}
	switch {
	case o.closed:
		out.Status, out.Reason = extractworker.EnqueueDropped, ReasonOutboxClosed
	case len(o.items) >= o.cfg.MaxTurns || o.bytes+len(t.Payload) > o.cfg.MaxBytes:
		out.Status, out.Reason = extractworker.EnqueueDropped, ReasonOutboxFull
	}
	if out.Status == extractworker.EnqueueDropped {
		o.dropped++
		o.log.Warn("extraction turn dropped", zap.String("job_id", res.JobID), zap.String("reason", out.Reason),
			zap.Int("held", len(o.items)), zap.Int("held_bytes", o.bytes), zap.Int("dropped_total", o.dropped))
		return out
	}
	h := &heldTurn{turn: t, jobID: res.JobID, attempt: 1, due: o.clk.Now().Add(o.cfg.Retry.Delay(1))}
	o.items = append(o.items, h)
	o.byID[h.jobID] = h
	o.bytes += len(t.Payload)
	o.deferred++
	o.log.Warn("extraction turn deferred to the outbox", zap.String("job_id", h.jobID),
		zap.String("reason", res.Reason), zap.Int("held", len(o.items)), zap.Int("deferred_total", o.deferred))
	select {
	case o.wake <- struct{}{}:
	default:
	}
	out.Status = extractworker.EnqueueDeferred
	return out
}

// start runs the retry loop until close.
func (o *outbox) start() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.running || o.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.running, o.cancel, o.done = true, cancel, make(chan struct{})
	go o.run(ctx)
}

func (o *outbox) run(ctx context.Context) {
	defer close(o.done)
	// announced is the deadline the hook last heard of: a wake-up that
	// leaves the earliest deadline where it was re-arms the timer quietly.
	var announced time.Time
	for {
		o.mu.Lock()
		var next time.Time
		for _, h := range o.items {
			if next.IsZero() || h.due.Before(next) {
				next = h.due
			}
		}
		o.mu.Unlock()
		if next.IsZero() {
			select {
			case <-o.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		if d := next.Sub(o.clk.Now()); d > 0 {
			timer := o.clk.Timer(d)
			if o.hook != nil && !next.Equal(announced) {
				o.hook(supervisor.Wait{Reason: supervisor.WaitStoreRetry, Delay: d})
			}
			announced = next
			select {
			case <-timer.C:
			case <-o.wake:
				timer.Stop()
				continue
			case <-ctx.Done():
				timer.Stop()
				return
			}
		}
		o.retry(ctx, false)
		if ctx.Err() != nil {
			return
		}
	}
}

// retry tries to store the held turns that are due (all of them when all
// is set), oldest first.
func (o *outbox) retry(ctx context.Context, all bool) {
	o.mu.Lock()
	now := o.clk.Now()
	var due []*heldTurn
	for _, h := range o.items {
		if all || !h.due.After(now) {
			due = append(due, h)
		}
	}
	o.mu.Unlock()
	for _, h := range due {
		if ctx.Err() != nil {
			return
		}
		res := o.enq.Enqueue(ctx, h.turn)
		o.mu.Lock()
		switch {
		case res.Status == extractworker.EnqueueQueued || res.Status == extractworker.EnqueueDuplicate:
			o.removeLocked(h)
			o.landed++
			o.log.Info("outbox turn stored", zap.String("job_id", h.jobID), zap.Int("attempt", h.attempt+1),
				zap.String("status", string(res.Status)), zap.Int("held", len(o.items)))
		case ctx.Err() != nil:
			// Closing interrupted the attempt: the turn stays held.
		case memorykit.IsRecoverable(res.Err):
			h.attempt++
			h.due = o.clk.Now().Add(o.cfg.Retry.Delay(h.attempt))
		default:
			o.removeLocked(h)
			o.discard++
			o.log.Warn("outbox turn discarded", zap.String("job_id", h.jobID), zap.String("reason", res.Reason),
				zap.Int("discarded_total", o.discard))
		}
		o.mu.Unlock()
	}
}

func (o *outbox) removeLocked(h *heldTurn) {
	if o.byID[h.jobID] != h {
		return
	}
	delete(o.byID, h.jobID)
	o.bytes -= len(h.turn.Payload)
	for i, x := range o.items {
		if x == h {
			o.items = append(o.items[:i], o.items[i+1:]...)
			break
		}
	}
}

// close stops the retry loop, makes one last attempt for every held turn
// when flush is set and while ctx lives, and hands what is left to
// OnDrain. Later calls return the same report.
func (o *outbox) close(ctx context.Context, flush bool) OutboxReport {
	o.mu.Lock()
	if o.closed {
		defer o.mu.Unlock()
		return o.left
	}
	o.closed = true
	cancel, done := o.cancel, o.done
	o.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if flush && ctx.Err() == nil {
		o.retry(ctx, true)
	}
	o.mu.Lock()
	rep := o.reportLocked()
	turns := make([]extractworker.Turn, len(o.items))
	for i, h := range o.items {
		turns[i] = h.turn
	}
	o.items, o.byID, o.bytes = nil, map[string]*heldTurn{}, 0
	o.left = rep
	o.mu.Unlock()
	if rep.Held > 0 {
		o.log.Warn("outbox closed with turns left", zap.Int("held", rep.Held), zap.Int("held_bytes", rep.Bytes),
			zap.Bool("handed_to_host", o.cfg.OnDrain != nil))
		if o.cfg.OnDrain != nil {
			o.cfg.OnDrain(rep, turns)
		}
	}
	return rep
}

func (o *outbox) reportLocked() OutboxReport {
	rep := OutboxReport{
		Held: len(o.items), Bytes: o.bytes, Deferred: o.deferred, Landed: o.landed,
		Discarded: o.discard, Dropped: o.dropped, Closed: o.closed,
	}
	for _, h := range o.items {
		rep.JobIDs = append(rep.JobIDs, h.jobID)
	}
	return rep
}

// OutboxReport returns the outbox's content-free account: while running,
// what it holds now; after Drain or Stop closed it, what was left then.
func (r *Runtime) OutboxReport() OutboxReport {
	o := r.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		rep := o.left
		rep.Dropped = o.dropped
		return rep
	}
	return o.reportLocked()
}
