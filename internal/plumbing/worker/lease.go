package worker

import (
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// LeaseSettings are the settings every leasing worker (embedworker,
// extractworker) shares. Check validates them the same way for both.
type LeaseSettings struct {
	// NamePrefix is the prefix of the actor's name, such as "embed:";
	// with WorkerID it must fit storekit.MaxIDBytes.
	NamePrefix string
	WorkerID   string
	LeaseTTL   time.Duration
	// Deadline bounds the work on one leased batch or job and must be
	// shorter than LeaseTTL; DeadlineField is its configuration name,
	// such as "embed_deadline".
	Deadline      time.Duration
	DeadlineField string
	BatchSize     int
	PollInterval  time.Duration
	// HandBackTimeout bounds the store calls that must outlive a
	// cancelled context.
	HandBackTimeout time.Duration
	Retry           memorykit.Backoff
	StoreBackoff    memorykit.Backoff
}

// Check returns an ErrInvalidConfig *memorykit.Error naming the first
// invalid setting, or nil.
func (s LeaseSettings) Check(op string) error {
	if err := storekit.ValidateID(op, "worker_id", s.WorkerID); err != nil {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidConfig, Field: "worker_id", Reason: memorykit.ReasonCode(err), Err: err}
	}
	switch {
	case len(s.NamePrefix)+len(s.WorkerID) > storekit.MaxIDBytes:
		return memorykit.ConfigError(op, "worker_id", "too_long")
	case s.LeaseTTL < time.Microsecond:
		return memorykit.ConfigError(op, "lease_ttl", "not_positive")
	case s.Deadline <= 0:
		return memorykit.ConfigError(op, s.DeadlineField, "not_positive")
	case s.LeaseTTL <= s.Deadline:
		return memorykit.ConfigError(op, "lease_ttl", "not_above_"+s.DeadlineField)
	case s.BatchSize <= 0:
		return memorykit.ConfigError(op, "batch_size", "not_positive")
	case s.PollInterval <= 0:
		return memorykit.ConfigError(op, "poll_interval", "not_positive")
	case s.HandBackTimeout <= 0:
		return memorykit.ConfigError(op, "hand_back_timeout", "not_positive")
	}
	if err := storekit.PrefixField(op, "retry", s.Retry.Validate()); err != nil {
		return err
	}
	return storekit.PrefixField(op, "store_backoff", s.StoreBackoff.Validate())
}
