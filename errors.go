package memorykit

import (
	"context"
	"errors"
	"strings"
	"time"
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

// PrefixField reports err, an error about one field of a nested value, as
// an error of op about that field under prefix: field "initial" of a
// Backoff validated under prefix "outbox.retry" becomes
// "outbox.retry.initial", and an error naming no field gets prefix alone.
// An empty op keeps err's Op. A nil err, or one that is not an *Error, is
// returned unchanged. It lets every value type keep the one shape
// Validate() error while its container names the field.
func PrefixField(op, prefix string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	out := *e
	if op != "" {
		out.Op = op
	}
	if out.Field == "" {
		out.Field = prefix
	} else {
		out.Field = prefix + "." + out.Field
	}
	return &out
}

// WrapError builds an *Error of the given kind around a cause that stays
// unprinted.
func WrapError(op string, kind error, reason string, cause error) *Error {
	return &Error{Op: op, Kind: kind, Reason: reason, Err: cause}
}

// Contain returns err fit to leave a public entry point: a *Error whose
// message carries no caller content. It is what every memorykit entry
// point applies to an error from a part it does not own (a Host's Store,
// Embedder, Extractor or Authorizer), whose text may quote keys, content,
// queries or connection strings.
//
// A nil err stays nil. An err that is itself a *Error with a sentinel Kind
// (or none) and an Op, Field and Reason shaped like codes (see
// CheckReasonCode; Op and Field may also hold '.', '[' and ']') is returned
// as it is. Anything else (an untyped error, a wrapped *Error whose outer
// text is unknown, a *Error whose fields are not codes) becomes a new
// *Error with the given op, the first sentinel kind in err's chain
// (ErrUnavailable when there is none, and for a context error), the reason
// code ReasonCode gives ("dependency_failed" when that is only "error"),
// and the recoverable marker of err.
//
// The cause is kept in Err, so errors.Is and errors.As still reach the
// kind sentinel, context.Canceled or a Host's own error values, but it is
// never printed by Error. A caller that logs an unwrapped cause's own text
// takes on the risk that text carries; memorykit never does.
func Contain(op string, err error) error {
	return ContainAs(op, ErrUnavailable, "dependency_failed", err)
}

// ContainAs is Contain with the kind and reason code to use when err's
// chain names no sentinel kind or reason code of its own.
func ContainAs(op string, kind error, reason string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok && e.codeShaped() {
		return e
	}
	for _, k := range sentinels {
		if errors.Is(err, k) {
			kind = k
			break
		}
	}
	if code := ReasonCode(err); code != "error" {
		reason = code
	}
	return &Error{Op: op, Kind: kind, Reason: reason, Err: err, Retry: IsRecoverable(err)}
}

// sentinels lists every kind an *Error may carry.
var sentinels = []error{
	ErrForbidden, ErrInvalidScope, ErrInvalidInput, ErrInvalidPolicy, ErrInvalidConfig,
	ErrNotFound, ErrAlreadyExists, ErrVersionConflict, ErrInvalidTransition, ErrLeaseLost,
	ErrStale, ErrDraining, ErrStopped, ErrIntegrity, ErrUnavailable, ErrDeadline,
	ErrOverloaded,
}

// codeShaped reports whether everything Error prints is a memorykit code:
// a sentinel kind and code-shaped op, field and reason.
func (e *Error) codeShaped() bool {
	if e.Kind != nil {
		known := false
		for _, k := range sentinels {
			if e.Kind == k {
				known = true
				break
			}
		}
		if !known {
			return false
		}
	}
	if e.Reason != "" && CheckReasonCode("", e.Reason) != nil {
		return false
	}
	return opShaped(e.Op) && opShaped(e.Field)
}

// opShaped reports whether s is at most 128 bytes of [a-z0-9_.[]].
func opShaped(s string) bool {
	if len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '[' || c == ']') {
			return false
		}
	}
	return true
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
	if errors.As(err, &e) && e.Reason != "" && CheckReasonCode("", e.Reason) == nil {
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
