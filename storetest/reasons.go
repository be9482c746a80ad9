package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// RunReasonPolicyConformance checks that the free-text reason of every
// call that stores one (Create, CreateBatch, CompleteJob candidates,
// Correct, Activate, Reject, Forget, Erase) goes through the Host's
// ContentValidator and Limits.MaxReasonBytes: a reason the validator
// refuses, or one longer than the Limits allow, is ErrInvalidInput with
// reason "content_rejected" (or "too_long"), its message carries no
// content, and the store's dump is unchanged. A clean reason is accepted
// on every path.
func RunReasonPolicyConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"Refused", testReasonRefused},
		{"Accepted", testReasonAccepted},
	})
}

// secretReason is what a Host's policy must refuse: a credential, plus
// the marker storetest's validator refuses.
const secretReason = "password=hunter2 " + RejectMarker

func testReasonRefused(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindFact, "cand", "candidate"))
	a := e.create(e.active(memorykit.KindFact, "act", "active"))
	in := e.create(e.active(memorykit.KindFact, "inact", "inactive"))
	e.must(actForget, tr(e.scope, in.ID, reviewer))
	j := e.enqueue("turn-1", 2)
	leased, err := e.s.LeaseJobs(e.ctx, storekit.JobLease{WorkerID: "worker-1", TTL: time.Minute, Max: 1})
	if err != nil || len(leased) != 1 {
		t.Fatalf("LeaseJobs: %+v, %v", leased, err)
	}
	long := strings.Repeat("r", Limits().MaxReasonBytes+1) // within the package ceiling, above the Limits

	paths := map[string]func(reason string) error{
		"Create": func(reason string) error {
			in := e.active(memorykit.KindFact, "new", "new content")
			in.Reason = reason
			_, err := e.s.Create(e.ctx, in)
			return err
		},
		"Create candidate": func(reason string) error {
			in := e.candidate(memorykit.KindFact, "new", "new content")
			in.Reason = reason
			_, err := e.s.Create(e.ctx, in)
			return err
		},
		"CompleteJob": func(reason string) error {
			cand := e.candidate(memorykit.KindFact, "extracted", "extracted content")
			cand.Reason = reason
			_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1", LeaseToken: leased[0].LeaseToken, Candidates: []memorykit.NewRecord{cand}})
			return err
		},
		"Correct": func(reason string) error {
			x := tr(e.scope, a.ID, reviewer)
			x.Reason = reason
			_, err := e.s.Correct(e.ctx, storekit.Correction{Transition: x, Content: "corrected"})
			return err
		},
	}
	if b, ok := e.s.(storekit.BatchCreator); ok {
		paths["CreateBatch"] = func(reason string) error {
			good := e.active(memorykit.KindFact, "b1", "first")
			bad := e.active(memorykit.KindFact, "b2", "second")
			bad.Reason = reason
			_, err := b.CreateBatch(e.ctx, []storekit.BatchItem{{Record: good}, {Record: bad}})
			return err
		}
	}
	targets := map[string]string{"Activate": c.ID, "Reject": c.ID, "Forget": a.ID, "Erase": in.ID}
	for _, act := range []action{actActivate, actReject, actForget, actErase} {
		paths[act.name] = func(reason string) error {
			x := tr(e.scope, targets[act.name], reviewer)
			x.Reason = reason
			_, err := act.do(e.ctx, e.s, x)
			return err
		}
	}
	for name, do := range paths {
		for _, r := range []struct{ what, reason, code string }{
			{"refused by the validator", secretReason, "content_rejected"},
			{"above Limits.MaxReasonBytes", long, "too_long"},
		} {
			t.Run(name+" "+r.what, func(t *testing.T) {
				var err error
				e.refused(t, name, errInput, func() error { err = do(r.reason); return err })
				var me *memorykit.Error
				if errors.As(err, &me); me.Reason != r.code {
					t.Fatalf("%s: reason code %q, want %q", name, me.Reason, r.code)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("%s: error %q repeats the reason", name, err)
				}
			})
		}
	}
}

// testReasonAccepted checks that the validator sees clean reasons on the
// lifecycle actions and lets them through.
func testReasonAccepted(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindFact, "cand", "candidate"))
	x := tr(e.scope, c.ID, reviewer)
	x.Reason = strings.Repeat("r", Limits().MaxReasonBytes)
	if _, err := e.s.Activate(e.ctx, x); err != nil {
		t.Fatalf("Activate with a reason at the limit: %v", err)
	}
	if _, err := e.s.Forget(context.Background(), tr(e.scope, c.ID, reviewer)); err != nil {
		t.Fatalf("Forget with a clean reason: %v", err)
	}
}
