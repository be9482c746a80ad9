package supervisor

import (
	"errors"
	"strings"

	"github.com/goagents/memorykit"
)

// Sentinel errors of the supervisor. They never come back bare: each is the
// cause inside a *memorykit.Error (or a *NotStoppedError) whose Kind is one
// of memorykit's sentinels, so callers can match either with errors.Is.
var (
	// ErrNotStarted means Drain or Stop was called before Start.
	ErrNotStarted = errors.New("supervisor not started")
	// ErrAlreadyStarted means Start was called on a supervisor that has
	// been started before. A Supervisor runs once; build a new one to run
	// again. The Kind says where the lifecycle is: ErrInvalidTransition
	// while running, memorykit.ErrDraining after Drain, memorykit.ErrStopped
	// after Stop.
	ErrAlreadyStarted = errors.New("supervisor already started")
	// ErrNotStopped means Stop's context ended while some actors were still
	// running. The *NotStoppedError carrying it names them.
	ErrNotStopped = errors.New("actors did not stop")
)

// ErrDoNotRestart is what an actor wraps into the error it returns from Run
// when it must not be restarted, for example after a permanent
// misconfiguration. The supervisor ends that actor and keeps the others
// running.
var ErrDoNotRestart = errors.New("do not restart")

// NotStoppedError is returned by Stop when its context ended before every
// actor returned. It names the actors still running, and nothing else.
type NotStoppedError struct {
	// Actors are the names of the actors still running, in the order they
	// were given to New.
	Actors []string
	// Err is the content-free *memorykit.Error (Kind ErrUnavailable,
	// Reason "actors_not_stopped") wrapping the context's error.
	Err error
}

// Error names the operation and the actors that did not stop.
func (e *NotStoppedError) Error() string {
	var b strings.Builder
	b.WriteString("memorykit: supervisor.stop: actors did not stop: ")
	b.WriteString(strings.Join(e.Actors, ", "))
	return b.String()
}

// Unwrap exposes ErrNotStopped and the wrapped *memorykit.Error (and through
// it memorykit.ErrUnavailable and the context's error).
func (e *NotStoppedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrNotStopped}
	}
	return []error{ErrNotStopped, e.Err}
}

func lifecycleError(op string, kind error, reason string, cause error) error {
	return &memorykit.Error{Op: op, Kind: kind, Reason: reason, Err: cause}
}

func contextDone(op string, ctxErr error) error {
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "context_done", Err: ctxErr}
}
