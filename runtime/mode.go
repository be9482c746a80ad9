package runtime

import (
	"context"

	"github.com/goagents/memorykit"
)

// Mode says which halves of a Runtime run in this process, so a Host can
// split request serving and background work across processes sharing one
// database.
type Mode string

const (
	// ModeAll runs the request paths and the workers (embedding,
	// extraction, lease reaper).
	ModeAll Mode = "all"
	// ModeRequestsOnly runs the request paths (sessions, writer, reviewer,
	// extraction enqueue and its outbox) and no workers: other processes
	// run them on the same stores.
	ModeRequestsOnly Mode = "requests_only"
	// ModeWorkersOnly runs the workers and no request paths: Session,
	// Writer and Reviewer calls answer ErrInvalidTransition (reason
	// "workers_only").
	ModeWorkersOnly Mode = "workers_only"
)

func (m Mode) validate() error {
	switch m {
	case ModeAll, ModeRequestsOnly, ModeWorkersOnly:
		return nil
	case "":
		return missing("mode")
	}
	return invalid("mode", "unknown")
}

// runsWorkers reports whether the Mode starts the workers.
func (m Mode) runsWorkers() bool { return m != ModeRequestsOnly }

// runsRequests reports whether the Mode serves request paths.
func (m Mode) runsRequests() bool { return m != ModeWorkersOnly }

// startWorkers starts the supervisor, or, without workers, applies the
// same lifecycle checks the supervisor would. r.mu is held.
func (r *Runtime) startWorkers(ctx context.Context) error {
	const op = "runtime.start"
	if r.cfg.Mode.runsWorkers() {
		return r.sup.Start(ctx)
	}
	switch {
	case ctx == nil:
		return memorykit.FieldError(op, "ctx", "nil")
	case r.gate.state.Load() == intakeStopped:
		return memorykit.NewError(op, memorykit.ErrStopped, "already_started")
	case r.started:
		return memorykit.NewError(op, memorykit.ErrInvalidTransition, "already_started")
	}
	if err := ctx.Err(); err != nil {
		return memorykit.WrapError(op, memorykit.ErrInvalidTransition, "context_done", err)
	}
	return nil
}

// openIntake is the gate state while the Runtime runs.
func (r *Runtime) openIntake() int32 {
	if r.cfg.Mode.runsRequests() {
		return intakeOpen
	}
	return intakeWorkersOnly
}

// endWorkers drains or stops the supervisor when the Mode runs workers.
// r.mu is held.
func (r *Runtime) endWorkers(ctx context.Context, stop bool) error {
	if !r.cfg.Mode.runsWorkers() {
		if !r.started {
			return memorykit.NewError("runtime.end", memorykit.ErrInvalidTransition, "not_started")
		}
		return nil
	}
	if stop {
		return r.sup.Stop(ctx)
	}
	return r.sup.Drain(ctx)
}
