package storekit

import (
	"errors"

	"github.com/goagents/memorykit"
)

// PrefixField reports err, an error about one field of a nested value, as
// an error of op about that field under prefix: field "initial" of a
// Backoff validated under prefix "outbox.retry" becomes
// "outbox.retry.initial", and an error naming no field gets prefix alone.
// An empty op keeps err's Op. A nil err, or one that is not an *Error, is
// returned unchanged. It lets every value type keep the one shape
// Validate() error while its container names the field.
func PrefixField(op, prefix string, err error) error {
	var e *memorykit.Error
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
	return ContainAs(op, memorykit.ErrUnavailable, "dependency_failed", err)
}

// ContainAs is Contain with the kind and reason code to use when err's
// chain names no sentinel kind or reason code of its own.
func ContainAs(op string, kind error, reason string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*memorykit.Error); ok && codeShaped(e) {
		return e
	}
	for _, k := range sentinels {
		if errors.Is(err, k) {
			kind = k
			break
		}
	}
	if code := memorykit.ReasonCode(err); code != "error" {
		reason = code
	}
	return &memorykit.Error{Op: op, Kind: kind, Reason: reason, Err: err, Retry: memorykit.IsRecoverable(err)}
}

// sentinels lists every kind an *Error may carry: the root package's
// sentinel errors but ErrPurging (TestSentinelsMatchTheRootPackage keeps
// the two lists in step).
var sentinels = []error{
	memorykit.ErrForbidden, memorykit.ErrInvalidScope, memorykit.ErrInvalidInput, memorykit.ErrInvalidPolicy, memorykit.ErrInvalidConfig,
	memorykit.ErrNotFound, memorykit.ErrAlreadyExists, memorykit.ErrVersionConflict, memorykit.ErrInvalidTransition, memorykit.ErrLeaseLost,
	memorykit.ErrStale, memorykit.ErrDraining, memorykit.ErrStopped, memorykit.ErrIntegrity, memorykit.ErrUnavailable, memorykit.ErrDeadline,
	memorykit.ErrOverloaded,
}

// codeShaped reports whether everything e prints is a memorykit code:
// a sentinel kind and code-shaped op, field and reason.
func codeShaped(e *memorykit.Error) bool {
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
