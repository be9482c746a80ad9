package supervisor

import (
	"context"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// ActorState is what an actor is doing, as Health reports it.
type ActorState string

// Actor states.
const (
	// ActorRunning: the actor runs and its last round (if any) succeeded.
	ActorRunning ActorState = "running"
	// ActorBackingOff: the actor failed and waits on the clock before it
	// tries again, either inside its own loop (a recoverable store error,
	// see Poll) or between restarts by the supervisor. It keeps trying: a
	// recoverable failure never makes the supervisor give up.
	ActorBackingOff ActorState = "backing_off"
	// ActorStopped: the actor is not running and will not run again in
	// this supervisor: not started yet, drained, stopped, asked not to be
	// restarted, or given up on after too many non-recoverable failures.
	ActorStopped ActorState = "stopped"
)

// ActorHealth is one actor's content-free health: its name, state, a reason
// code and counts.
type ActorHealth struct {
	// Name is the actor's name.
	Name string `json:"name"`
	// State is running, backing_off or stopped.
	State ActorState `json:"state"`
	// Reason is a content-free code: for backing_off, the last failure's
	// reason code (for example "sqlstate_42p01" or "panic"); for stopped,
	// why ("not_started", "drained", "stopped", "do_not_restart",
	// "gave_up", "goexit"). Empty while running.
	Reason string `json:"reason,omitempty"`
	// Since is when the actor entered State, on the supervisor's clock.
	// It is the zero time for an actor that was never started.
	Since time.Time `json:"since"`
	// Failures counts the consecutive failures behind backing_off (0
	// otherwise).
	Failures int `json:"failures"`
}

// status is a runner's health, guarded by Supervisor.hmu.
type status struct {
	state    ActorState
	reason   string
	since    time.Time
	failures int
}

// Health returns every actor's health, in the order the actors were given
// to New. It never blocks on an actor.
func (s *Supervisor) Health() []ActorHealth {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	out := make([]ActorHealth, len(s.runners))
	for i, r := range s.runners {
		out[i] = ActorHealth{Name: r.name, State: r.st.state, Reason: r.st.reason, Since: r.st.since, Failures: r.st.failures}
	}
	return out
}

// setRunning marks r running. Leaving backing_off emits one
// EventActorRecovered carrying the failure count.
func (s *Supervisor) setRunning(r *runner) {
	s.hmu.Lock()
	prev := r.st
	if prev.state == ActorRunning {
		s.hmu.Unlock()
		return
	}
	r.st = status{state: ActorRunning, since: s.clk.Now()}
	s.hmu.Unlock()
	if prev.state == ActorBackingOff {
		e := s.actorEvent(memorykit.EventActorRecovered, r.name, prev.failures, prev.reason)
		e.Count = prev.failures
		s.emit(e)
	}
}

// setBackingOff marks r backing off after its failures-th consecutive
// failure with reason. Entering backing_off emits one EventActorDegraded;
// staying in it only updates the reason and the count.
func (s *Supervisor) setBackingOff(r *runner, reason string, failures int) {
	if storekit.CheckReasonCode("", reason) != nil {
		reason = "error"
	}
	s.hmu.Lock()
	entering := r.st.state != ActorBackingOff
	if entering {
		r.st = status{state: ActorBackingOff, since: s.clk.Now()}
	}
	r.st.reason, r.st.failures = reason, failures
	s.hmu.Unlock()
	if entering {
		s.emit(s.actorEvent(memorykit.EventActorDegraded, r.name, failures, reason))
	}
}

// setStopped marks r stopped for good with reason.
func (s *Supervisor) setStopped(r *runner, reason string) {
	s.hmu.Lock()
	r.st = status{state: ActorStopped, reason: reason, since: s.clk.Now()}
	s.hmu.Unlock()
}

// reporter lets an actor's own loop (Poll) report into its runner's health.
type reporter struct {
	s *Supervisor
	r *runner
}

type reporterKey struct{}

// withReporter attaches r's reporter to ctx.
func withReporter(ctx context.Context, s *Supervisor, r *runner) context.Context {
	return context.WithValue(ctx, reporterKey{}, reporter{s: s, r: r})
}

// reporterFrom returns the reporter of the actor running under ctx, if a
// Supervisor runs it.
func reporterFrom(ctx context.Context) (reporter, bool) {
	if ctx == nil {
		return reporter{}, false
	}
	rep, ok := ctx.Value(reporterKey{}).(reporter)
	return rep, ok
}

// ReportBackingOff tells the Supervisor running the actor under ctx (its
// fetch or work context) that the actor failed recoverably for the
// failures-th time in a row and now waits before trying again; reason must
// be a content-free code. Health shows the actor backing_off, and entering
// that state emits one EventActorDegraded. Outside a Supervisor it does
// nothing. The workers' polling loop calls it; an actor with its own retry
// loop may too.
func ReportBackingOff(ctx context.Context, reason string, failures int) {
	if rep, ok := reporterFrom(ctx); ok {
		rep.s.setBackingOff(rep.r, reason, failures)
	}
}

// ReportRunning tells the Supervisor running the actor under ctx that the
// actor's last round succeeded. Leaving backing_off emits one
// EventActorRecovered. Outside a Supervisor it does nothing.
func ReportRunning(ctx context.Context) {
	if rep, ok := reporterFrom(ctx); ok {
		rep.s.setRunning(rep.r)
	}
}
