package memorykit

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/goagents/memorykit/internal/plumbing/textrule"
)

// Sentinel errors. Every error memorykit returns matches exactly one of these
// with errors.Is, so callers can branch on the kind of failure.
var (
	// ErrForbidden means the principal may not perform the action on the Scope.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalidScope means the Scope is malformed or not allowed in V1
	// (for example SubjectType user).
	ErrInvalidScope = errors.New("invalid scope")
	// ErrInvalidInput means a write, query or parameter failed validation.
	ErrInvalidInput = errors.New("invalid input")
	// ErrInvalidPolicy means a Limits or RecallPolicy value is zero, partial or
	// out of range.
	ErrInvalidPolicy = errors.New("invalid policy")
	// ErrInvalidConfig means a composition is missing a required part.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrNotFound means no record, job or revision with that identity exists in
	// the given Scope.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists means an idempotent create found its identity taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrVersionConflict means an optimistic expectation (version, current
	// active record) did not hold.
	ErrVersionConflict = errors.New("version conflict")
	// ErrInvalidTransition means the lifecycle action is not allowed from the
	// record's current status.
	ErrInvalidTransition = errors.New("invalid transition")
	// ErrLeaseLost means the worker no longer holds the lease it acts on.
	ErrLeaseLost = errors.New("lease lost")
	// ErrStale means the write was computed from content that has since changed.
	ErrStale = errors.New("stale")
	// ErrDraining means the runtime is draining and takes no new work.
	ErrDraining = errors.New("draining")
	// ErrStopped means the runtime or actor has stopped.
	ErrStopped = errors.New("stopped")
	// ErrIntegrity means stored data or a store response broke an invariant.
	ErrIntegrity = errors.New("integrity violation")
	// ErrUnavailable means a dependency (database, provider) could not be
	// reached. It is usually recoverable.
	ErrUnavailable = errors.New("unavailable")
	// ErrDeadline means memorykit's own deadline passed.
	ErrDeadline = errors.New("deadline exceeded")
	// ErrOverloaded means the Runtime turned the call away because it is
	// at its concurrency bound and its wait queue is full or the wait ran
	// out: nothing was done, and the call may be retried later.
	ErrOverloaded = errors.New("overloaded")
	// ErrPurging is the kind of a write refused because a purge of its
	// Scope is running or was interrupted and not yet finished. It is
	// always recoverable: the write may be tried again once the purge is
	// done.
	ErrPurging = errors.New("purging")
)

// Error is the typed error memorykit returns. Its message is built only from
// the operation, the kind, the field name and a reason code; the wrapped
// cause is reachable through errors.Is / errors.As but never printed, because
// a driver or provider message may quote content.
type Error struct {
	// Op is the operation, such as "memorystore.create".
	Op string
	// Kind is one of the sentinel errors above.
	Kind error
	// Field names the offending input field, if any.
	Field string
	// Reason is a short machine-readable code, such as "too_long".
	Reason string
	// Err is the underlying cause, if any. It is not printed.
	Err error
	// Retry marks the failure as recoverable: trying again later, or
	// degrading, is safe.
	Retry bool
	// RetryAfter, when positive on a recoverable error, is the least time
	// to wait before trying again, such as a model provider's Retry-After.
	// A worker that retries the failed job waits at least this long.
	RetryAfter time.Duration
}

// Error returns a content-free message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("memorykit")
	if e.Op != "" {
		b.WriteString(": ")
		b.WriteString(e.Op)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Retry {
		b.WriteString(" (recoverable)")
	}
	return b.String()
}

// Unwrap exposes the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, 2)
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Recoverable reports whether the failure is safe to retry or degrade on.
func (e *Error) Recoverable() bool { return e.Retry }

// NewError builds an *Error of the given kind.
func NewError(op string, kind error, reason string) *Error {
	return &Error{Op: op, Kind: kind, Reason: reason}
}

// FieldError builds an ErrInvalidInput *Error for one field.
func FieldError(op, field, reason string) *Error {
	return &Error{Op: op, Kind: ErrInvalidInput, Field: field, Reason: reason}
}

// ConfigError builds an ErrInvalidConfig *Error for a missing or invalid
// part of a component's configuration.
func ConfigError(op, field, reason string) *Error {
	return &Error{Op: op, Kind: ErrInvalidConfig, Field: field, Reason: reason}
}

// WrapError builds an *Error of the given kind around a cause that stays
// unprinted.
func WrapError(op string, kind error, reason string, cause error) *Error {
	return &Error{Op: op, Kind: kind, Reason: reason, Err: cause}
}

// Recoverable returns err marked as recoverable. A nil err stays nil.
func Recoverable(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && e.Retry {
		return err
	}
	return &recoverableError{err: err}
}

type recoverableError struct{ err error }

func (r *recoverableError) Error() string     { return r.err.Error() + " (recoverable)" }
func (r *recoverableError) Unwrap() error     { return r.err }
func (r *recoverableError) Recoverable() bool { return true }

// IsRecoverable reports whether any error in err's chain says it is
// recoverable. Recall degrades on recoverable failures and fails closed on
// everything else.
func IsRecoverable(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range chain(err) {
		if r, ok := e.(interface{ Recoverable() bool }); ok && r.Recoverable() {
			return true
		}
	}
	return false
}

// chain flattens err's tree so IsRecoverable sees every branch.
func chain(err error) []error {
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, chain(e)...)
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			out = append(out, chain(e)...)
		}
	}
	return out
}

// ReasonCode returns a content-free reason code for err, safe for logs and
// events: the *Error's Reason when it is a valid code, else a code for its
// sentinel kind, "canceled" / "deadline" for context errors, or "error".
func ReasonCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Reason != "" && textrule.ReasonCodeProblem(e.Reason) == "" {
		return e.Reason
	}
	return KindCode(err)
}

// KindCode returns a code naming err's sentinel kind ("forbidden",
// "not_found", ...), or "error" when it has none.
func KindCode(err error) string {
	kinds := []struct {
		err  error
		code string
	}{
		{ErrForbidden, "forbidden"},
		{ErrInvalidScope, "invalid_scope"},
		{ErrInvalidInput, "invalid_input"},
		{ErrInvalidPolicy, "invalid_policy"},
		{ErrInvalidConfig, "invalid_config"},
		{ErrNotFound, "not_found"},
		{ErrAlreadyExists, "already_exists"},
		{ErrVersionConflict, "version_conflict"},
		{ErrInvalidTransition, "invalid_transition"},
		{ErrLeaseLost, "lease_lost"},
		{ErrStale, "stale"},
		{ErrDraining, "draining"},
		{ErrStopped, "stopped"},
		{ErrIntegrity, "integrity"},
		{ErrUnavailable, "unavailable"},
		{ErrDeadline, "deadline"},
		{ErrPurging, "purging"},
		{ErrOverloaded, "overloaded"},
		{context.DeadlineExceeded, "deadline"},
		{context.Canceled, "canceled"},
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.code
		}
	}
	return "error"
}
