package embedder

import (
	"context"
	"errors"

	"github.com/goagents/memorykit"
)

// contextError reports that ctx ended before the work did. It is recoverable:
// the caller gave up or ran out of time, and trying again later is safe. The
// cause stays reachable, so errors.Is(err, context.Canceled) or
// context.DeadlineExceeded holds.
func contextError(op string, ctx context.Context) error {
	reason := "canceled"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = "context_deadline"
	}
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: reason, Err: context.Cause(ctx), Retry: true}
}

// unavailable is a recoverable provider failure.
func unavailable(op, reason string, cause error) error {
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: reason, Err: cause, Retry: true}
}

// integrity is a non-recoverable bad provider response.
func integrity(op, reason string) error {
	return &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: reason}
}

// configError is a bad constructor argument.
func configError(op, field, reason string) error {
	return memorykit.ConfigError(op, field, reason)
}
