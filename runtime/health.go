package runtime

import "github.com/goagents/memorykit/supervisor"

// Health is the Runtime's content-free health report: a lifecycle state,
// one entry per background actor, and whether all is well. It holds codes,
// names, counts and times only, so a Host may serve it as JSON as is.
type Health struct {
	// OK is true only while the Runtime runs (started, not draining or
	// stopped) and every actor is running.
	OK bool `json:"ok"`
	// State is the Runtime's lifecycle: "new" (before Start), "running",
	// "draining" (after Drain) or "stopped" (after Stop).
	State string `json:"state"`
	// Actors are the embedding worker ("embed:" + WorkerID + ":embed"),
	// the extraction worker ("extract:" + WorkerID + ":extract") and the
	// lease reaper ("lease_reaper"), in that order (no embedding worker
	// with a LexicalOnly policy); see
	// supervisor.ActorHealth.
	Actors []supervisor.ActorHealth `json:"actors"`
}

// Health reports the Runtime's state and every actor's: running,
// backing_off (with the last failure's reason code, since when, and the
// consecutive failure count) or stopped (with why). An actor backs off on a
// recoverable store failure for as long as it lasts, and never gives up on
// one; the moment a round succeeds again it reports running. Health is safe
// to call at any time and from any goroutine, and never blocks on an actor.
func (r *Runtime) Health() Health {
	h := Health{Actors: []supervisor.ActorHealth{}}
	if r.sup != nil { // a Runtime without background workers has no supervisor
		h.Actors = r.sup.Health()
	}
	switch r.gate.state.Load() {
	case intakeClosed:
		h.State = "new"
	case intakeOpen:
		h.State = "running"
	case intakeDraining:
		h.State = "draining"
	default:
		h.State = "stopped"
	}
	h.OK = h.State == "running"
	for _, a := range h.Actors {
		h.OK = h.OK && a.State == supervisor.ActorRunning
	}
	return h
}
