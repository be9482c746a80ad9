package memorykit

import "time"

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
// Erased is final. Each row is a LifecycleRule value; both stores move
// records only through these values, so they allow and refuse exactly the
// same transitions.

// LifecycleRule is one action of the record lifecycle: the statuses it may
// start from and the status it leads to. The rules are the Rule* values;
// the zero LifecycleRule allows nothing.
type LifecycleRule struct {
	action Action
	from   []Status
	// to is the status the action leads to; empty keeps the status.
	to Status
}

var (
	// RuleActivate turns a candidate active (LifecycleStore.Activate). The
	// record holding the same Scope, kind and key is superseded in the
	// same step.
	RuleActivate = LifecycleRule{ActionActivate, []Status{StatusCandidate}, StatusActive}
	// RuleReject turns a candidate down (LifecycleStore.Reject).
	RuleReject = LifecycleRule{ActionReject, []Status{StatusCandidate}, StatusRejected}
	// RuleSupersede retires an active record replaced by a newer active
	// record with the same Scope, kind and key. Stores apply it inside an
	// active Create or an Activate, never on its own.
	RuleSupersede = LifecycleRule{ActionSupersede, []Status{StatusActive}, StatusSuperseded}
	// RuleForget takes an active record out of every recall path
	// (LifecycleStore.Forget).
	RuleForget = LifecycleRule{ActionForget, []Status{StatusActive}, StatusInactive}
	// RuleErase scrubs a record that can no longer be recalled down to a
	// tombstone (LifecycleStore.Erase).
	RuleErase = LifecycleRule{ActionErase, []Status{StatusInactive, StatusRejected, StatusSuperseded}, StatusErased}
	// RuleCorrect replaces the content of an active or candidate record and
	// keeps its status (LifecycleStore.Correct).
	RuleCorrect = LifecycleRule{ActionCorrect, []Status{StatusActive, StatusCandidate}, ""}
)

// Action returns the action the rule describes, as recorded in a Revision.
func (r LifecycleRule) Action() Action { return r.action }

// From returns a copy of the statuses the action may start from.
func (r LifecycleRule) From() []Status { return append([]Status(nil), r.from...) }

// Allows reports whether the action may start from status s.
func (r LifecycleRule) Allows(s Status) bool {
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
func (r LifecycleRule) Target(current Status) Status {
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
func (r LifecycleRule) Check(op string, t Transition, rec Record) error {
	if t.ExpectVersion != 0 && t.ExpectVersion != rec.Version {
		return NewError(op, ErrVersionConflict, "version_mismatch")
	}
	if !r.Allows(rec.Status) {
		return NewError(op, ErrInvalidTransition, "from_"+string(rec.Status))
	}
	return nil
}

// Check tests the expectation against the active record holding the
// Scope, kind and key now, given by its ID and version (holderID empty
// when no record holds it). A failed expectation is ErrVersionConflict
// with reason "active_record_changed".
func (x ActiveExpectation) Check(op, holderID string, holderVersion int64) error {
	held := holderID != ""
	if x.None && !held || !x.None && held && holderID == x.ID && holderVersion == x.Version {
		return nil
	}
	return NewError(op, ErrVersionConflict, "active_record_changed")
}

// ReasonLeaseExpired is the LastError of a job whose lease expired and was
// reaped (JobStore.ReapJobLeases).
const ReasonLeaseExpired = "lease_expired"

// ReasonHandBackLimit is the LastError of a job that failed because its
// leases were handed back (or reaped) MaxReaps times (JobStore.ReleaseJob).
const ReasonHandBackLimit = "hand_back_limit"

// Retries reports whether a job whose lease just ended without a result
// (reaped or handed back, already counted in Reaps or HandBacks) may be
// leased again.
func (j Job) Retries() bool { return j.Reaps+j.HandBacks < j.MaxReaps }

// HeldBy reports whether workerID holds an unexpired lease on the job at
// now. CompleteJob, FailJob and ReleaseJob act only for the holder; a lease
// is expired once now reaches LeaseExpiresAt.
func (j Job) HeldBy(workerID string, now time.Time) bool {
	return j.State == JobLeased && j.LeasedBy == workerID && now.Before(j.LeaseExpiresAt)
}

// Reason codes of ErrLeaseLost.
const (
	// ReasonNotLeaseHolder: the lease is held by another worker, has
	// expired, or the job or record is no longer leased.
	ReasonNotLeaseHolder = "not_lease_holder"
	// ReasonStaleLeaseToken: the caller's lease was taken back and the job
	// or record leased again (possibly to the same worker ID).
	ReasonStaleLeaseToken = "stale_lease_token"
)

// CheckLease returns nil when workerID holds the job's unexpired lease
// under token at now, and else an ErrLeaseLost *Error: reason
// ReasonStaleLeaseToken when the job was leased again since token was
// issued, ReasonNotLeaseHolder otherwise. CompleteJob, FailJob and
// ReleaseJob act only when it passes.
func (j Job) CheckLease(op, workerID string, token int64, now time.Time) error {
	if token != j.LeaseToken {
		return NewError(op, ErrLeaseLost, ReasonStaleLeaseToken)
	}
	if !j.HeldBy(workerID, now) {
		return NewError(op, ErrLeaseLost, ReasonNotLeaseHolder)
	}
	return nil
}
