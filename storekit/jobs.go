package storekit

import (
	"time"

	"github.com/goagents/memorykit"
)

// The record lifecycle (which action may move a record from which status
// to which) is data in package storekit (storekit.LifecycleRule), which
// every store applies.

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
		return memorykit.NewError(op, memorykit.ErrLeaseLost, ReasonStaleLeaseToken)
	}
	if !j.HeldBy(workerID, now) {
		return memorykit.NewError(op, memorykit.ErrLeaseLost, ReasonNotLeaseHolder)
	}
	return nil
}
