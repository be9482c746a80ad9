package supervisor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
)

// Reason codes for an actor's run ending while the supervisor is running.
const (
	reasonError  = "error"  // Run returned an error
	reasonPanic  = "panic"  // Run panicked
	reasonExited = "exited" // Run returned nil
)

// Reason codes for an actor's goroutine finishing for good.
const (
	exitDrained      = "drained"
	exitStopped      = "stopped"
	exitDoNotRestart = "do_not_restart"
	exitGaveUp       = "gave_up"
	exitGoexit       = "goexit"
)

// outcome is how one call of Run ended. It holds no error text.
type outcome struct {
	reason    string // reasonError, reasonPanic or reasonExited
	err       error  // Run's error, for errors.Is and code extraction only
	panicType string // the dynamic type of a panic value
}

// supervise runs one actor until the supervisor drains or stops, the actor
// asks not to be restarted, or it fails for a non-recoverable reason more
// often in a row than MaxRestarts allows. Recoverable failures are
// retried for as long as they last.
func (s *Supervisor) supervise(r *runner, fetchCtx, workCtx context.Context, started *sync.WaitGroup) {
	exit := exitGoexit // kept only if Run calls runtime.Goexit
	defer func() { s.finish(r, exit) }()
	s.setRunning(r) // before Start returns, so Health never shows a started actor as not started
	started.Done()

	log := s.log.With(zap.String("actor", r.name))
	// The actor's own loop (Poll) reports its health through these.
	fctx, wctx := withReporter(fetchCtx, s, r), withReporter(workCtx, s, r)
	failures := 0 // consecutive failed runs, recoverable or not
	hard := 0     // consecutive non-recoverable failures; these alone give up
	for {
		began := s.clk.Now()
		out := invoke(r.actor, fctx, wctx)
		ran := s.clk.Since(began)

		if fetchCtx.Err() != nil {
			exit = shutdownReason(fetchCtx)
			s.setStopped(r, exit)
			logShutdown(log, out, exit, ran)
			s.emit(s.actorEvent(memorykit.EventActorStopped, r.name, failures, exit))
			return
		}
		if out.reason == reasonError && errors.Is(out.err, ErrDoNotRestart) {
			exit = exitDoNotRestart
			s.setStopped(r, exit)
			log.Warn("actor asked not to be restarted", outcomeFields(out, ran)...)
			s.emit(s.actorEvent(memorykit.EventActorStopped, r.name, failures, exit))
			return
		}

		if ran >= s.backoff.Max {
			failures, hard = 0, 0
		}
		if failures < maxCountedFailures {
			failures++
		}
		// A recoverable failure (the store is down, the schema is gone for
		// a while) is waited out at the backoff's maximum for as long as it
		// lasts; only non-recoverable failures and panics count towards
		// giving up.
		if out.reason == reasonError && memorykit.IsRecoverable(out.err) {
			hard = 0
		} else {
			hard++
		}
		if hard > s.maxRestarts {
			exit = exitGaveUp
			s.setStopped(r, exit)
			log.Error("actor failed too often; giving up",
				append(outcomeFields(out, ran), zap.Int("consecutive_failures", failures))...)
			e := s.actorEvent(memorykit.EventActorGaveUp, r.name, failures-1, out.reason)
			e.Count = failures
			s.emit(e)
			return
		}

		d := s.backoff.Delay(failures)
		log.Warn("actor failed; restarting after backoff",
			append(outcomeFields(out, ran), zap.Int("attempt", failures), zap.Duration("backoff", d))...)
		s.setBackingOff(r, failureCode(out), failures)
		if !s.wait(fetchCtx, r.name, failures, d) {
			exit = shutdownReason(fetchCtx)
			s.setStopped(r, exit)
			log.Info("actor not restarted: supervisor shutting down", zap.String("reason", exit))
			s.emit(s.actorEvent(memorykit.EventActorStopped, r.name, failures, exit))
			return
		}
		log.Info("actor restarted", zap.Int("attempt", failures), zap.String("reason", out.reason))
		s.emit(s.actorEvent(memorykit.EventActorRestarted, r.name, failures, out.reason))
		s.setRunning(r)
	}
}

// maxCountedFailures caps the consecutive-failure count of an actor that
// fails recoverably for a very long time; its wait is long at Max by then.
const maxCountedFailures = 1 << 20

// failureCode is the content-free code Health shows for a failed run: the
// error's reason code, or "panic" / "exited".
func failureCode(out outcome) string {
	if out.reason == reasonError {
		return memorykit.ReasonCode(out.err)
	}
	return out.reason
}

// invoke calls Run once and turns a panic into an outcome.
func invoke(a Actor, fetchCtx, workCtx context.Context) (out outcome) {
	defer func() {
		if v := recover(); v != nil {
			out = outcome{reason: reasonPanic, panicType: fmt.Sprintf("%T", v)}
		}
	}()
	if err := a.Run(fetchCtx, workCtx); err != nil {
		return outcome{reason: reasonError, err: err}
	}
	return outcome{reason: reasonExited}
}

// wait waits out a restart backoff of d on the clock. It reports false if
// ctx (the fetch context) ended first.
func (s *Supervisor) wait(ctx context.Context, name string, attempt int, d time.Duration) bool {
	t := s.clk.Timer(d)
	defer t.Stop()
	if s.onArmed != nil {
		s.onArmed(name, attempt, d)
	}
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// finish records that r's goroutine is done: it settles the lifecycle
// state, closes r.done, and then calls the exit hook.
func (s *Supervisor) finish(r *runner, exit string) {
	if exit == exitGoexit {
		s.setStopped(r, exit)
		s.log.Error("actor goroutine exited without returning", zap.String("actor", r.name))
		s.emit(s.actorEvent(memorykit.EventActorStopped, r.name, 0, exit))
	}
	s.mu.Lock()
	s.alive--
	evs := s.settleLocked()
	s.mu.Unlock()
	s.emit(evs...)
	close(r.done)
	if s.onExit != nil {
		s.onExit(r.name, exit)
	}
}

func (s *Supervisor) actorEvent(kind memorykit.EventKind, name string, attempt int, reason string) memorykit.Event {
	return memorykit.Event{
		Kind:    kind,
		At:      s.clk.Now(),
		Actor:   string(memorykit.ActorWorker) + ":" + name,
		Attempt: attempt,
		Reason:  reason,
	}
}

// shutdownReason tells a Stop from a Drain by the fetch context's cause.
func shutdownReason(fetchCtx context.Context) string {
	if errors.Is(context.Cause(fetchCtx), memorykit.ErrStopped) {
		return exitStopped
	}
	return exitDrained
}

// logShutdown logs how an actor's last run ended once the supervisor was
// draining or stopping. A clean return is routine; an error or a panic is
// worth a warning, but nothing is restarted.
func logShutdown(log *zap.Logger, out outcome, exit string, ran time.Duration) {
	fields := append(outcomeFields(out, ran), zap.String("exit", exit))
	switch out.reason {
	case reasonExited:
		log.Info("actor returned", fields...)
	case reasonPanic:
		log.Error("actor panicked while shutting down", fields...)
	default:
		if errors.Is(out.err, context.Canceled) || errors.Is(out.err, memorykit.ErrDraining) || errors.Is(out.err, memorykit.ErrStopped) {
			log.Info("actor returned", fields...)
			return
		}
		log.Warn("actor returned an error while shutting down", fields...)
	}
}

// outcomeFields are the content-free log fields for one run: codes and
// types, never the error's or the panic value's text.
func outcomeFields(out outcome, ran time.Duration) []zap.Field {
	fields := []zap.Field{zap.String("reason", out.reason), zap.Duration("ran", ran)}
	switch out.reason {
	case reasonError:
		fields = append(fields,
			zap.String("error_kind", memorykit.KindCode(out.err)),
			zap.String("error_reason", memorykit.ReasonCode(out.err)),
			zap.String("error_type", fmt.Sprintf("%T", out.err)))
	case reasonPanic:
		fields = append(fields, zap.String("panic_type", out.panicType))
	}
	return fields
}
