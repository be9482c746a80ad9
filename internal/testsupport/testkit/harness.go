package testkit

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

// Harness is what a test of a background component needs besides its
// store: a context, a mock clock at storetest.Epoch, a WriteGuard, one project
// scope, a recording Sink and a logger whose entries the test can read.
type Harness struct {
	T     *testing.T
	Ctx   context.Context
	Clock *clock.Mock
	Guard *memorykit.WriteGuard
	Scope memorykit.Scope
	Sink  *Sink
	Logs  *observer.ObservedLogs
	Log   *zap.Logger
}

// NewHarness returns a fresh Harness for t, scoped to project-1 of
// tenant-a, logging at debug level.
func NewHarness(t *testing.T) *Harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	return &Harness{
		T: t, Ctx: context.Background(), Clock: NewClock(), Guard: NewGuard(t),
		Scope: Scope(t, "tenant-a", "project-1"), Sink: &Sink{}, Logs: logs, Log: zap.New(core),
	}
}

// NoContent fails the test if canary appears in any log entry or event.
func (h *Harness) NoContent(canary string) {
	h.T.Helper()
	NoContent(h.T, h.Logs, h.Sink, canary)
}

// Supervisor builds a supervisor of actors on h's clock, logger and sink
// (see NewSupervisor); with d non-nil its restart backoffs are reported
// to d. It is stopped when the test ends.
func (h *Harness) Supervisor(d *Driver, actors ...supervisor.Actor) *supervisor.Supervisor {
	h.T.Helper()
	return NewSupervisor(h.T, h.Clock, h.Log, h.Sink, d, actors...)
}
