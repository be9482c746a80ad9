package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// mapErr turns a driver error into a *memorykit.Error at the package
// boundary. The cause stays reachable through errors.As but its text, which
// may quote stored values, is never part of the message: the reason is a
// SQLSTATE code or a fixed word. An error that already is a
// *memorykit.Error is returned unchanged. It always returns a
// *memorykit.Error for a non-nil err.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var me *memorykit.Error
	if errors.As(err, &me) {
		return storekit.Contain(op, me)
	}
	unavailable := func(reason string, retry bool) *memorykit.Error {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: reason, Err: err, Retry: retry}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// The caller's context ended; whoever set its deadline decides
		// whether to degrade (errors.Is still finds the context error).
		return unavailable("context_done", false)
	case errors.Is(err, puddle.ErrClosedPool):
		return unavailable("pool_closed", false)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pgErr(op, pe, err)
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	switch {
	case errors.As(err, &ce):
		return unavailable("connect_failed", true)
	case pgconn.Timeout(err):
		return unavailable("timeout", true)
	case pgconn.SafeToRetry(err), errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return unavailable("connection_lost", true)
	}
	return unavailable("database_error", false)
}

// pgErr classifies a server error by its SQLSTATE alone.
func pgErr(op string, pe *pgconn.PgError, cause error) *memorykit.Error {
	code := pe.Code
	reason := "sqlstate_" + strings.ToLower(code)
	e := &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: reason, Err: cause}
	switch {
	case retryableState(code):
		e.Retry = true
	case strings.HasPrefix(code, "22"): // data exception: the input was unusable
		e.Kind = memorykit.ErrInvalidInput
	case strings.HasPrefix(code, "23"): // integrity constraint violation
		e.Kind = memorykit.ErrIntegrity
	}
	return e
}

// retryableState reports SQLSTATEs after which trying again is safe:
// connection exceptions, serialization failures and deadlocks, lock and
// statement timeouts, resource exhaustion and server shutdown, and a schema
// or table that is missing for now (an operator renamed the schema away, a
// restore or migration is under way): the background workers wait those
// out instead of giving up, and recall degrades as for a lost connection.
func retryableState(code string) bool {
	switch code {
	case "3F000", // invalid_schema_name
		"42P01": // undefined_table
		return true
	case "40001", // serialization_failure
		"40P01", // deadlock_detected
		"55P03", // lock_not_available
		"57014", // query_canceled (statement timeout)
		"57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now
		"57P05", // idle_session_timeout
		"25P03", // idle_in_transaction_session_timeout
		"53000", // insufficient_resources
		"53100", // disk_full
		"53200", // out_of_memory
		"53300", // too_many_connections
		"58000": // system_error
		return true
	}
	return strings.HasPrefix(code, "08") // connection_exception class
}

// connectErr maps a failure to open a connection.
func connectErr(op string, err error) error {
	me := mapErr(op, err).(*memorykit.Error)
	if me.Reason == "database_error" {
		me.Reason, me.Retry = "connect_failed", true
	}
	return me
}

// extensionErr maps a failure of CREATE EXTENSION vector. Anything but a
// lost connection means pgvector cannot be used: the package is not
// installed on the server (58P01 undefined_file, 0A000) or the role may not
// install it (42501).
func extensionErr(op string, err error) error {
	me := mapErr(op, err).(*memorykit.Error)
	if me.Retry {
		return me
	}
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Field: "extension", Reason: ReasonPgvectorUnavailable, Err: err}
}

// isUniqueViolation reports a 23505 on the named constraint (any when
// constraint is empty).
func isUniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		return false
	}
	if constraint == "" || pe.ConstraintName == constraint {
		return true
	}
	// Citus reports the constraint of a shard: the name, "_", the shard id.
	rest, ok := strings.CutPrefix(pe.ConstraintName, constraint+"_")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}
