package storekit

import "github.com/goagents/memorykit"

// The record lifecycle is a small state machine. A record is created active
// or candidate (NewRecord.Status); from then on only the actions below move
// it, each from a fixed set of statuses to a fixed status:
//
//	action     from                            to
//	activate   candidate                       active
//	reject     candidate                       rejected
//	supersede  active                          superseded
//	forget     active                          inactive
//	erase      inactive, rejected, superseded  erased
//	correct    active, candidate               (unchanged)
//
// Erased is final. Each row is a LifecycleRule value; stores move records
// only through these values, so they allow and refuse exactly the same
// transitions.

// LifecycleRule is one action of the record lifecycle: the statuses it may
// start from and the status it leads to. The rules are the Rule* values;
// the zero LifecycleRule allows nothing.
type LifecycleRule struct {
	action memorykit.Action
	from   []memorykit.Status
	// to is the status the action leads to; empty keeps the status.
	to memorykit.Status
}

var (
	// RuleActivate turns a candidate active (LifecycleStore.Activate). The
	// record holding the same Scope, kind and key is superseded in the
	// same step.
	RuleActivate = LifecycleRule{memorykit.ActionActivate, []memorykit.Status{memorykit.StatusCandidate}, memorykit.StatusActive}
	// RuleReject turns a candidate down (LifecycleStore.Reject).
	RuleReject = LifecycleRule{memorykit.ActionReject, []memorykit.Status{memorykit.StatusCandidate}, memorykit.StatusRejected}
	// RuleSupersede retires an active record replaced by a newer active
	// record with the same Scope, kind and key. Stores apply it inside an
	// active Create or an Activate, never on its own.
	RuleSupersede = LifecycleRule{memorykit.ActionSupersede, []memorykit.Status{memorykit.StatusActive}, memorykit.StatusSuperseded}
	// RuleForget takes an active record out of every recall path
	// (LifecycleStore.Forget).
	RuleForget = LifecycleRule{memorykit.ActionForget, []memorykit.Status{memorykit.StatusActive}, memorykit.StatusInactive}
	// RuleErase scrubs a record that can no longer be recalled down to a
	// tombstone (LifecycleStore.Erase).
	RuleErase = LifecycleRule{memorykit.ActionErase, []memorykit.Status{memorykit.StatusInactive, memorykit.StatusRejected, memorykit.StatusSuperseded}, memorykit.StatusErased}
	// RuleCorrect replaces the content of an active or candidate record and
	// keeps its status (LifecycleStore.Correct).
	RuleCorrect = LifecycleRule{memorykit.ActionCorrect, []memorykit.Status{memorykit.StatusActive, memorykit.StatusCandidate}, ""}
)

// Action returns the action the rule describes, as recorded in a Revision.
func (r LifecycleRule) Action() memorykit.Action { return r.action }

// From returns a copy of the statuses the action may start from.
func (r LifecycleRule) From() []memorykit.Status { return append([]memorykit.Status(nil), r.from...) }

// Allows reports whether the action may start from status s.
func (r LifecycleRule) Allows(s memorykit.Status) bool {
	for _, f := range r.from {
		if s == f {
			return true
		}
	}
	return false
}

// Target returns the status a record in status current has after the
// action: the rule's status, or current for an action that keeps it
// (correct).
func (r LifecycleRule) Target(current memorykit.Status) memorykit.Status {
	if r.to == "" {
		return current
	}
	return r.to
}

// Check reports whether t may apply the rule to rec, the record as it is
// now: a non-zero t.ExpectVersion other than rec.Version is
// ErrVersionConflict (reason "version_mismatch"), and a status the rule
// does not start from is ErrInvalidTransition (reason "from_" followed by
// the status). It does not validate t itself; see CheckTransition.
func (r LifecycleRule) Check(op string, t Transition, rec memorykit.Record) error {
	if t.ExpectVersion != 0 && t.ExpectVersion != rec.Version {
		return memorykit.NewError(op, memorykit.ErrVersionConflict, "version_mismatch")
	}
	if !r.Allows(rec.Status) {
		return memorykit.NewError(op, memorykit.ErrInvalidTransition, "from_"+string(rec.Status))
	}
	return nil
}
