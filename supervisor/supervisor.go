// Package supervisor runs memorykit's background actors (the embedding
// worker, the extraction worker, the lease reaper) and keeps them running.
//
// A Supervisor starts one goroutine per Actor. An actor that fails (returns
// an error, returns nil, or panics) while the supervisor is running is
// restarted after an exponential backoff measured on the injected clock.
// An actor whose failures are recoverable (memorykit.IsRecoverable: a store
// that is down, a schema that is missing for a while) is never given up on:
// it keeps retrying at the backoff's maximum and Health reports it
// backing_off until it runs again. Only an actor that keeps failing for a
// non-recoverable reason (or panicking) is given up on, after
// Config.MaxRestarts restarts in a row, while the others keep
// running.
//
// Shutdown has two steps. Drain stops intake: every actor's fetch context is
// cancelled, so no new work is claimed, while work already claimed finishes
// under the still-live work context. Stop cancels the work context too, so
// in-flight work is abandoned and its leases are handed back. A Supervisor
// runs once: New, Start, then Drain and/or Stop.
//
// Errors, logs and events name actors and carry counts, durations and reason
// codes only; a panic is reported by the type of its value, never its text.
package supervisor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Actor is a long-lived goroutine with one job, such as embedding records or
// reaping expired leases.
type Actor interface {
	// Name identifies the actor in logs, events and errors. It must be a
	// valid memorykit identifier (see storekit.ValidateID), unique within
	// one Supervisor, and must not change.
	Name() string
	// Run does the actor's job until told to stop.
	//
	// It claims new work only while fetchCtx is live, and runs claimed work
	// under workCtx. When fetchCtx ends (Drain), Run claims nothing more,
	// lets in-flight work finish, and returns nil. When workCtx ends (Stop,
	// or a Drain whose context expired), Run abandons in-flight work, hands
	// its leases back, and returns promptly. workCtx never ends before
	// fetchCtx. context.Cause tells which: memorykit.ErrDraining or
	// memorykit.ErrStopped.
	//
	// Returning while fetchCtx is live counts as a failure and the actor is
	// restarted after a backoff, unless the error wraps ErrDoNotRestart.
	Run(fetchCtx, workCtx context.Context) error
}

// Config holds what a Supervisor needs. Clock, Logger, Events, Backoff and
// MaxRestarts are required; New rejects a Config that lacks any of them. The hooks are
// optional and exist for tests and diagnostics.
type Config struct {
	// Clock measures every backoff and run time.
	Clock clock.Clock
	// Logger receives the supervisor's logs, named "supervisor".
	Logger *zap.Logger
	// Events receives content-free actor and lifecycle events.
	Events memorykit.EventSink
	// Backoff sets the restart waits: consecutive restart number n waits
	// Backoff.Delay(n) on Clock. Backoff.Max is also the healthy run time
	// after which an actor's consecutive-failure count starts again from
	// zero.
	Backoff memorykit.Backoff
	// MaxRestarts is how many consecutive restarts an actor gets after
	// non-recoverable failures or panics. The failure that would need
	// restart number MaxRestarts+1 makes the supervisor give up on that
	// actor instead. It must be positive.
	MaxRestarts int

	// OnBackoffArmed, if set, is called on the actor's goroutine right
	// after the restart timer for restart number attempt has been armed on
	// Clock with delay d. A test that advances a mock clock only after this
	// call knows the timer will see the advance. It must return quickly.
	OnBackoffArmed func(name string, attempt int, d time.Duration)
	// OnActorExit, if set, is called as the very last step of an actor's
	// goroutine, after Drain and Stop already count the actor as returned.
	// reason is one of "drained", "stopped", "do_not_restart", "gave_up"
	// or "goexit". It must return quickly.
	OnActorExit func(name, reason string)
}

// State is where a Supervisor is in its one-way lifecycle.
type State int

// States, in lifecycle order. A supervisor moves only forward:
// New → Running → Draining → Drained → Stopping → Stopped, possibly
// skipping the draining states.
const (
	// StateNew: built, not started.
	StateNew State = iota
	// StateRunning: actors run and are restarted when they fail.
	StateRunning
	// StateDraining: Drain was called; actors finish in-flight work.
	StateDraining
	// StateDrained: every actor returned after Drain.
	StateDrained
	// StateStopping: Stop was called; some actors have not returned yet.
	StateStopping
	// StateStopped: Stop was called and every actor returned.
	StateStopped
)

// String returns the state's lower-case name.
func (s State) String() string {
	switch s {
	case StateNew:
		return "new"
	case StateRunning:
		return "running"
	case StateDraining:
		return "draining"
	case StateDrained:
		return "drained"
	case StateStopping:
		return "stopping"
	case StateStopped:
		return "stopped"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Supervisor runs a fixed set of actors. Its methods are safe for concurrent
// use.
type Supervisor struct {
	clk         clock.Clock
	log         *zap.Logger
	events      memorykit.EventSink
	backoff     memorykit.Backoff
	maxRestarts int
	onArmed     func(string, int, time.Duration)
	onExit      func(string, string)
	runners     []*runner

	hmu sync.Mutex // guards every runner's st

	mu          sync.Mutex
	state       State
	alive       int // actor goroutines that have not finished
	cancelFetch context.CancelCauseFunc
	cancelWork  context.CancelCauseFunc
}

// runner is one supervised actor.
type runner struct {
	actor Actor
	name  string
	done  chan struct{} // closed when the actor's goroutine has finished
	st    status        // guarded by Supervisor.hmu
}

// New validates cfg and the actors and returns a Supervisor in StateNew. A
// missing clock, logger or event sink, an invalid backoff, no actors, a nil
// actor, or an invalid or duplicate actor name is an ErrInvalidConfig
// *memorykit.Error naming the field.
func New(cfg Config, actors ...Actor) (*Supervisor, error) {
	const op = "supervisor.new"
	bad := func(field, reason string, cause error) error {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidConfig, Field: field, Reason: reason, Err: cause}
	}
	switch {
	case cfg.Clock == nil:
		return nil, bad("clock", "missing", nil)
	case cfg.Logger == nil:
		return nil, bad("logger", "missing", nil)
	case cfg.Events == nil:
		return nil, bad("events", "missing", nil)
	}
	if err := storekit.PrefixField(op, "backoff", cfg.Backoff.Validate()); err != nil {
		return nil, err
	}
	if cfg.MaxRestarts <= 0 {
		return nil, bad("max_restarts", "not_positive", nil)
	}
	if len(actors) == 0 {
		return nil, bad("actors", "no_actors", nil)
	}
	runners := make([]*runner, 0, len(actors))
	seen := make(map[string]bool, len(actors))
	for _, a := range actors {
		if a == nil {
			return nil, bad("actors", "nil_actor", nil)
		}
		name, ok := actorName(a)
		if !ok {
			return nil, bad("actors", "bad_actor", nil)
		}
		if err := storekit.ValidateID(op, "actor_name", name); err != nil {
			return nil, bad("actors", "bad_name", err)
		}
		if seen[name] {
			return nil, bad("actors", "duplicate_name", nil)
		}
		seen[name] = true
		runners = append(runners, &runner{actor: a, name: name, done: make(chan struct{}),
			st: status{state: ActorStopped, reason: "not_started"}})
	}
	return &Supervisor{
		clk:         cfg.Clock,
		log:         cfg.Logger.Named("supervisor"),
		events:      cfg.Events,
		backoff:     cfg.Backoff,
		maxRestarts: cfg.MaxRestarts,
		onArmed:     cfg.OnBackoffArmed,
		onExit:      cfg.OnActorExit,
		runners:     runners,
		state:       StateNew,
	}, nil
}

// actorName reads a.Name(), treating a panic (say, a typed nil pointer) as
// an unusable actor.
func actorName(a Actor) (name string, ok bool) {
	defer func() {
		if recover() != nil {
			name, ok = "", false
		}
	}()
	return a.Name(), true
}

// Start launches every actor and returns once each actor's goroutine is
// running. ctx supplies values to the actors' contexts and must not be done;
// its cancellation does not stop the actors (use Drain or Stop).
//
// Start on a supervisor that was started before returns an error wrapping
// ErrAlreadyStarted, whose Kind is memorykit.ErrInvalidTransition while
// running, memorykit.ErrDraining after Drain and memorykit.ErrStopped after
// Stop.
func (s *Supervisor) Start(ctx context.Context) error {
	const op = "supervisor.start"
	if ctx == nil {
		return memorykit.FieldError(op, "ctx", "nil")
	}
	s.mu.Lock()
	switch s.state {
	case StateNew:
	case StateRunning:
		s.mu.Unlock()
		return lifecycleError(op, memorykit.ErrInvalidTransition, "already_started", ErrAlreadyStarted)
	case StateDraining, StateDrained:
		s.mu.Unlock()
		return lifecycleError(op, memorykit.ErrDraining, "already_started", ErrAlreadyStarted)
	default:
		s.mu.Unlock()
		return lifecycleError(op, memorykit.ErrStopped, "already_started", ErrAlreadyStarted)
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return contextDone(op, err)
	}
	base := context.WithoutCancel(ctx)
	workCtx, cancelWork := context.WithCancelCause(base)
	fetchCtx, cancelFetch := context.WithCancelCause(workCtx)
	s.cancelWork, s.cancelFetch = cancelWork, cancelFetch
	s.state = StateRunning
	s.alive = len(s.runners)
	s.mu.Unlock()

	// The state is already Running, so a concurrent Drain or Stop cancels
	// these contexts and waits for the goroutines launched below.
	s.log.Info("supervisor starting", zap.Int("actors", len(s.runners)))
	s.emit(s.lifecycle("started"))
	var started sync.WaitGroup
	started.Add(len(s.runners))
	for _, r := range s.runners {
		go s.supervise(r, fetchCtx, workCtx, &started)
	}
	started.Wait()
	return nil
}

// Drain stops intake and waits for every actor to return. It cancels the
// actors' fetch context with cause memorykit.ErrDraining, so they claim no
// new work but finish what they hold.
//
// If ctx ends first, Drain cancels the work context as well (in-flight work
// is abandoned and its leases handed back), waits for the actors to return,
// and then reports ctx's error inside a memorykit.ErrUnavailable
// *memorykit.Error (errors.Is matches context.Canceled or
// context.DeadlineExceeded). That wait relies on the Actor contract of
// returning promptly once the work context ends; a Host that needs a hard
// bound calls Stop with its own deadline.
//
// Drain is idempotent: a second call waits again and returns nil once every
// actor has returned. Drain before Start returns an error wrapping
// ErrNotStarted; Drain after Stop returns a memorykit.ErrStopped error.
func (s *Supervisor) Drain(ctx context.Context) error {
	const op = "supervisor.drain"
	if ctx == nil {
		return memorykit.FieldError(op, "ctx", "nil")
	}
	var evs []memorykit.Event
	s.mu.Lock()
	switch s.state {
	case StateNew:
		s.mu.Unlock()
		return lifecycleError(op, memorykit.ErrInvalidTransition, "not_started", ErrNotStarted)
	case StateStopping, StateStopped:
		s.mu.Unlock()
		return lifecycleError(op, memorykit.ErrStopped, "stopped", nil)
	case StateRunning:
		s.state = StateDraining
		evs = append(evs, s.lifecycle("draining"))
		// Logged before settling, which logs "drained" when no actor is
		// left, so the log reads in the order things happened.
		s.log.Info("supervisor draining", zap.Int("actors", len(s.runners)))
		evs = append(evs, s.settleLocked()...)
	}
	cancelFetch, cancelWork := s.cancelFetch, s.cancelWork
	s.mu.Unlock()
	// Announce first, then cancel, so the sink sees "draining" before any
	// actor's stop. Cancelling is idempotent and the first cause wins, so a
	// Stop racing in between keeps its ErrStopped.
	s.emit(evs...)
	cancelFetch(memorykit.ErrDraining)

	pending := s.await(ctx)
	if len(pending) == 0 {
		return nil
	}
	s.log.Warn("drain context ended; abandoning in-flight work",
		zap.Strings("actors", pending), zap.String("reason", memorykit.KindCode(ctx.Err())))
	cancelWork(memorykit.ErrDraining)
	s.await(context.Background())
	return contextDone(op, ctx.Err())
}

// Stop cancels both the fetch and the work contexts (cause
// memorykit.ErrStopped) and waits until every actor's goroutine has
// finished, including actors waiting out a restart backoff. After a nil
// return nothing the supervisor started is running.
//
// If ctx ends first, Stop returns a *NotStoppedError (errors.Is
// ErrNotStopped and memorykit.ErrUnavailable) naming the actors still
// running; calling Stop again waits for them again. Stop is idempotent.
// Stop before Start returns an error wrapping ErrNotStarted.
func (s *Supervisor) Stop(ctx context.Context) error {
	const op = "supervisor.stop"
	if ctx == nil {
		return memorykit.FieldError(op, "ctx", "nil")
	}
	var evs []memorykit.Event
	s.mu.Lock()
	switch s.state {
	case StateNew:
		s.mu.Unlock()
		return lifecycleError(op, memorykit.ErrInvalidTransition, "not_started", ErrNotStarted)
	case StateRunning, StateDraining, StateDrained:
		s.state = StateStopping
		evs = append(evs, s.lifecycle("stopping"))
		// Logged before settling: after a finished Drain no actor is
		// left and settling logs "stopped" at once.
		s.log.Info("supervisor stopping", zap.Int("actors", len(s.runners)))
		evs = append(evs, s.settleLocked()...)
	}
	cancelFetch, cancelWork := s.cancelFetch, s.cancelWork
	s.mu.Unlock()
	s.emit(evs...)
	cancelFetch(memorykit.ErrStopped)
	cancelWork(memorykit.ErrStopped)

	pending := s.await(ctx)
	if len(pending) == 0 {
		return nil
	}
	s.log.Error("actors did not stop in time",
		zap.Strings("actors", pending), zap.Int("count", len(pending)),
		zap.String("reason", memorykit.KindCode(ctx.Err())))
	return &NotStoppedError{
		Actors: pending,
		Err:    &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "actors_not_stopped", Err: ctx.Err()},
	}
}

// State returns the supervisor's current lifecycle state.
func (s *Supervisor) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// await waits for every actor's goroutine to finish or ctx to end. It
// returns the names of the actors still running when ctx ended, or nil.
func (s *Supervisor) await(ctx context.Context) []string {
	for i, r := range s.runners {
		select {
		case <-r.done:
			continue
		case <-ctx.Done():
		}
		var pending []string
		for _, r := range s.runners[i:] {
			select {
			case <-r.done:
			default:
				pending = append(pending, r.name)
			}
		}
		return pending
	}
	return nil
}

// settleLocked moves a draining or stopping supervisor to its final state
// once no actor goroutine is left. s.mu must be held.
func (s *Supervisor) settleLocked() []memorykit.Event {
	if s.alive > 0 {
		return nil
	}
	switch s.state {
	case StateDraining:
		s.state = StateDrained
		s.log.Info("supervisor drained")
		return []memorykit.Event{s.lifecycle("drained")}
	case StateStopping:
		s.state = StateStopped
		s.log.Info("supervisor stopped")
		return []memorykit.Event{s.lifecycle("stopped")}
	}
	return nil
}

func (s *Supervisor) lifecycle(reason string) memorykit.Event {
	return memorykit.Event{Kind: memorykit.EventLifecycle, At: s.clk.Now(), Count: len(s.runners), Reason: reason}
}

// emit hands events to the sink. It is never called with s.mu held, so a
// sink may call State.
func (s *Supervisor) emit(evs ...memorykit.Event) {
	for _, e := range evs {
		s.events.Emit(e)
	}
}
