package supervisor

import "time"

// Wait reasons actors report to their OnWait hooks.
const (
	// WaitIdle: the last round found no work; the actor polls again after
	// its poll interval.
	WaitIdle = "idle"
	// WaitStoreBackoff: claiming work failed with a recoverable store
	// error; the actor tries again after a backoff.
	WaitStoreBackoff = "store_backoff"
	// WaitStoreRetry: recording the outcome of leased work failed with a
	// recoverable store error; the actor, still holding the lease, tries
	// again after a backoff.
	WaitStoreRetry = "store_retry"
)

// Wait describes a wait an actor is about to make on its clock. Actors hand
// it to their OnWait test hooks.
type Wait struct {
	// Reason is WaitIdle, WaitStoreBackoff or WaitStoreRetry.
	Reason string
	// Delay is how long the actor waits on its clock.
	Delay time.Duration
}
