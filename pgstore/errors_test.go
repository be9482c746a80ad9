package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/goagents/memorykit"
)

// secret is what a server message could quote from a stored row.
const secret = "the launch code is 0000"

func pgError(code string) *pgconn.PgError {
	return &pgconn.PgError{
		Severity: "ERROR", Code: code,
		Message: "duplicate value " + secret, Detail: "Key (content)=(" + secret + ")",
		Where: secret, ConstraintName: "records_pkey",
	}
}

func TestMapErr(t *testing.T) {
	cases := []struct {
		err    error
		kind   error
		retry  bool
		reason string
	}{
		{pgError("40001"), memorykit.ErrUnavailable, true, "sqlstate_40001"},
		{pgError("40P01"), memorykit.ErrUnavailable, true, "sqlstate_40p01"},
		{pgError("57P01"), memorykit.ErrUnavailable, true, "sqlstate_57p01"},
		{pgError("57P03"), memorykit.ErrUnavailable, true, "sqlstate_57p03"},
		{pgError("08006"), memorykit.ErrUnavailable, true, "sqlstate_08006"},
		{pgError("53300"), memorykit.ErrUnavailable, true, "sqlstate_53300"},
		{pgError("23505"), memorykit.ErrIntegrity, false, "sqlstate_23505"},
		{pgError("22P02"), memorykit.ErrInvalidInput, false, "sqlstate_22p02"},
		{pgError("42P01"), memorykit.ErrUnavailable, true, "sqlstate_42p01"},
		{pgError("3F000"), memorykit.ErrUnavailable, true, "sqlstate_3f000"},
		{pgError("42703"), memorykit.ErrUnavailable, false, "sqlstate_42703"},
		{fmt.Errorf("wrapped: %w", pgError("40001")), memorykit.ErrUnavailable, true, "sqlstate_40001"},
		{&pgconn.ConnectError{}, memorykit.ErrUnavailable, true, "connect_failed"},
		{io.ErrUnexpectedEOF, memorykit.ErrUnavailable, true, "connection_lost"},
		{puddle.ErrClosedPool, memorykit.ErrUnavailable, false, "pool_closed"},
		{context.Canceled, memorykit.ErrUnavailable, false, "context_done"},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), memorykit.ErrUnavailable, false, "context_done"},
		{errors.New("something odd " + secret), memorykit.ErrUnavailable, false, "database_error"},
	}
	for _, c := range cases {
		err := mapErr("pgstore.test", c.err)
		me := wantKind(t, err, c.kind)
		if me.Retry != c.retry || memorykit.IsRecoverable(err) != c.retry {
			t.Errorf("%v: retry %v, want %v", c.err, me.Retry, c.retry)
		}
		if me.Reason != c.reason {
			t.Errorf("%v: reason %q, want %q", c.err, me.Reason, c.reason)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "duplicate") {
			t.Errorf("the mapped error prints driver text: %q", err.Error())
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%v: the cause is not reachable with errors.Is", c.err)
		}
	}
	if mapErr("op", nil) != nil {
		t.Fatal("mapErr(nil) is not nil")
	}
	orig := memorykit.NewError("x", memorykit.ErrNotFound, "not_found")
	if got := mapErr("op", fmt.Errorf("w: %w", orig)); got != error(orig) {
		t.Fatalf("a memorykit error was rewrapped: %v", got)
	}
}

func TestExtensionErrorMapping(t *testing.T) {
	for _, code := range []string{"58P01", "0A000", "42501", "XX000"} {
		err := extensionErr("pgstore.migrate", pgError(code))
		me := wantKind(t, err, memorykit.ErrUnavailable)
		if me.Reason != ReasonPgvectorUnavailable || me.Retry {
			t.Errorf("%s: %v", code, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("leak: %v", err)
		}
	}
	// A lost connection during CREATE EXTENSION stays a retryable outage.
	err := extensionErr("pgstore.migrate", pgError("57P01"))
	if me := wantKind(t, err, memorykit.ErrUnavailable); !me.Retry || me.Reason == ReasonPgvectorUnavailable {
		t.Fatalf("shutdown during CREATE EXTENSION: %v", err)
	}
}

func TestIsUniqueViolation(t *testing.T) {
	e := pgError("23505")
	e.ConstraintName = "records_one_active"
	if !isUniqueViolation(fmt.Errorf("x: %w", e), "records_one_active") || isUniqueViolation(e, "other") {
		t.Fatal("constraint match")
	}
	if isUniqueViolation(pgError("23503"), "") {
		t.Fatal("a foreign key violation is not a unique violation")
	}
}

func TestLoadMigrations(t *testing.T) {
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) != SchemaVersion || migs[len(migs)-1].Version != SchemaVersion {
		t.Fatalf("embedded migrations end at %d, SchemaVersion is %d", migs[len(migs)-1].Version, SchemaVersion)
	}
	for _, m := range migs {
		rendered := renderSQL(m.Up, "s", "e")
		if strings.Contains(rendered, "{schema}") || strings.Contains(rendered, "{ext}") {
			t.Fatalf("migration %d keeps a placeholder", m.Version)
		}
		if strings.Contains(strings.ToLower(rendered), "now()") {
			t.Fatalf("migration %d reads the database clock", m.Version)
		}
	}
}
