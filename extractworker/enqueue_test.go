package extractworker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

func (e *env) enqueuer(store storekit.JobStore, az memorykit.Authorizer) *extractworker.Enqueuer {
	e.T.Helper()
	q, err := extractworker.NewEnqueuer(extractworker.EnqueuerConfig{
		Store: store, Authorizer: az, Clock: e.Clock, Logger: e.Log, Events: e.Sink, MaxAttempts: 3, MaxReaps: 3,
	})
	if err != nil {
		e.T.Fatalf("NewEnqueuer: %v", err)
	}
	return q
}

// TestEnqueue: an authorized turn becomes one durable job with a
// deterministic identity; enqueuing it again is a duplicate, not a second
// job; the worker then completes it.
func TestEnqueue(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		p := testkit.Principal("tenant-a", memorykit.ActorUser, "user-1")
		az := testkit.NewAuthorizer().Grant("user-1", e.Scope, memorykit.PermExtract)
		q := e.enqueuer(e.store, az)
		turn := extractworker.Turn{Principal: p, Scope: e.Scope, RunRef: "run-42/turn-3", Payload: "we chose blue-green deploys"}

		res := q.Enqueue(e.Ctx, turn)
		wantID := storekit.ExtractionJobID(e.Scope, "run-42/turn-3")
		if res.Status != extractworker.EnqueueQueued || res.JobID != wantID || res.Err != nil {
			t.Fatalf("Enqueue = %+v", res)
		}
		job := e.job(wantID)
		if job.State != storekit.JobQueued || job.MaxAttempts != 3 || job.Payload != turn.Payload {
			t.Fatalf("job = %+v", job)
		}
		if evs := e.Sink.OfKind(memorykit.EventExtractionEnqueued); len(evs) != 1 || evs[0].JobID != wantID || evs[0].SubjectID != "project-1" {
			t.Fatalf("enqueued events = %+v", evs)
		}
		if res := q.Enqueue(e.Ctx, turn); res.Status != extractworker.EnqueueDuplicate || res.JobID != wantID {
			t.Fatalf("second Enqueue = %+v", res)
		}
		if c := e.counts(); c.Queued != 1 {
			t.Fatalf("counts = %+v", c)
		}
		w := e.worker(e.config("worker-a", newExtractor(e.Clock)))
		if r := runOnce(t, w); r.Completed != 1 {
			t.Fatalf("round = %+v", r)
		}
		if res := q.Enqueue(e.Ctx, turn); res.Status != extractworker.EnqueueDuplicate {
			t.Fatalf("Enqueue after completion = %+v", res)
		}
	})
}

// TestEnqueueFailureDoesNotFailTheTurn: every failure comes back as a
// content-free EnqueueFailed status with an EventExtractionEnqueueFailed, never as
// an error or a panic, and stores nothing.
func TestEnqueueFailureDoesNotFailTheTurn(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const canary = "CANARY-enqueue-8d1"
		p := testkit.Principal("tenant-a", memorykit.ActorUser, "user-1")
		az := testkit.NewAuthorizer().Grant("user-1", e.Scope, memorykit.PermExtract)
		other := testkit.Scope(t, "tenant-a", "project-2")
		fs := newFaultStore(e.store)
		q := e.enqueuer(fs, az)
		ok := extractworker.Turn{Principal: p, Scope: e.Scope, RunRef: "run-1/turn-1", Payload: "payload " + canary}
		cases := []struct {
			name   string
			turn   func() extractworker.Turn
			before func()
			kind   error
			reason string
		}{
			{"not_granted", func() extractworker.Turn { t := ok; t.Scope = other; return t }, nil, memorykit.ErrForbidden, "denied"},
			{"wrong_permission_only", func() extractworker.Turn {
				t := ok
				t.Principal = testkit.Principal("tenant-a", memorykit.ActorUser, "reader")
				return t
			}, func() { az.Grant("reader", e.Scope, memorykit.PermRead, memorykit.PermWrite) }, memorykit.ErrForbidden, "denied"},
			{"tenant_mismatch", func() extractworker.Turn {
				t := ok
				t.Principal = testkit.Principal("tenant-b", memorykit.ActorUser, "user-1")
				return t
			}, nil, memorykit.ErrForbidden, "tenant_mismatch"},
			{"user_scope", func() extractworker.Turn {
				t := ok
				t.Scope = memorykit.Scope{TenantID: "tenant-a", SubjectType: memorykit.SubjectUser, SubjectID: "u1"}
				return t
			}, nil, memorykit.ErrInvalidScope, "user_scope_not_supported"},
			{"empty_run_ref", func() extractworker.Turn { t := ok; t.RunRef = ""; return t }, nil, memorykit.ErrInvalidInput, "empty"},
			{"run_ref_with_text", func() extractworker.Turn { t := ok; t.RunRef = "run 1 " + canary; return t }, nil, memorykit.ErrInvalidInput, "bad_character"},
			{"payload_too_long", func() extractworker.Turn {
				t := ok
				t.Payload = strings.Repeat("y", storetest.Limits().MaxJobPayloadBytes+1)
				return t
			}, nil, memorykit.ErrInvalidInput, "too_long"},
			{"empty_payload", func() extractworker.Turn { t := ok; t.Payload = ""; return t }, nil, memorykit.ErrInvalidInput, "empty"},
			{"store_down", func() extractworker.Turn { return ok }, func() { fs.FailCalls("EnqueueJob", 1, testkit.DBDown) }, memorykit.ErrUnavailable, "connection_lost"},
		}
		for _, c := range cases {
			if c.before != nil {
				c.before()
			}
			before := len(e.Sink.OfKind(memorykit.EventExtractionEnqueueFailed))
			res := q.Enqueue(e.Ctx, c.turn())
			if res.Status != extractworker.EnqueueFailed || res.Reason != c.reason {
				t.Fatalf("%s: Enqueue = status %s reason %q, want failed %q", c.name, res.Status, res.Reason, c.reason)
			}
			testkit.WantKind(t, res.Err, c.kind)
			if strings.Contains(res.Err.Error(), canary) {
				t.Fatalf("%s: error text carries content", c.name)
			}
			evs := e.Sink.OfKind(memorykit.EventExtractionEnqueueFailed)
			if len(evs) != before+1 || evs[len(evs)-1].Reason != c.reason {
				t.Fatalf("%s: enqueue_failed events = %+v", c.name, evs[before:])
			}
		}
		if c := e.counts(); c.Queued != 0 {
			t.Fatalf("a failed enqueue stored a job: %+v", c)
		}
		// A cancelled context is a failure too, not a panic.
		ctx, cancel := context.WithCancel(e.Ctx)
		cancel()
		if res := q.Enqueue(ctx, ok); res.Status != extractworker.EnqueueFailed {
			t.Fatalf("cancelled Enqueue = %+v", res)
		}
		e.NoContent(canary)
		// Once the store is back, the same turn enqueues.
		if res := q.Enqueue(e.Ctx, ok); res.Status != extractworker.EnqueueQueued {
			t.Fatalf("Enqueue after recovery = %+v", res)
		}
	})
}
