package memorykit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// wantError fails unless err is an *Error of kind with the given field and
// reason, reported for op "test".
func wantError(t *testing.T, err error, kind error, field, reason string) {
	t.Helper()
	var e *memorykit.Error
	if !errors.As(err, &e) || !errors.Is(err, kind) {
		t.Fatalf("error = %v, want a *memorykit.Error of kind %v", err, kind)
	}
	if e.Field != field || e.Reason != reason {
		t.Fatalf("error = %v, want field %q reason %q", err, field, reason)
	}
	if kind != memorykit.ErrInvalidScope && e.Op != "test" {
		t.Fatalf("error = %v, want op %q", err, "test")
	}
}

func TestActiveExpectationCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		x       memorykit.ActiveExpectation
		id      string
		version int64
		ok      bool
	}{
		{"none, no holder", memorykit.ActiveExpectation{None: true}, "", 0, true},
		{"none, held", memorykit.ActiveExpectation{None: true}, "r1", 1, false},
		{"id, no holder", memorykit.ActiveExpectation{ID: "r1", Version: 1}, "", 0, false},
		{"id, same holder", memorykit.ActiveExpectation{ID: "r1", Version: 2}, "r1", 2, true},
		{"id, other holder", memorykit.ActiveExpectation{ID: "r1", Version: 2}, "r2", 2, false},
		{"id, other version", memorykit.ActiveExpectation{ID: "r1", Version: 2}, "r1", 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.x.Check("test", tc.id, tc.version)
			if tc.ok {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			wantError(t, err, memorykit.ErrVersionConflict, "", "active_record_changed")
		})
	}
}

func TestJobHeldBy(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	leased := storekit.Job{State: storekit.JobLeased, LeasedBy: "w1", LeaseExpiresAt: now.Add(time.Second)}
	if !leased.HeldBy("w1", now) {
		t.Fatal("the holder of an unexpired lease does not hold it")
	}
	if leased.HeldBy("w2", now) {
		t.Fatal("another worker holds the lease")
	}
	if leased.HeldBy("w1", now.Add(time.Second)) {
		t.Fatal("a lease is held at its expiry")
	}
	queued := leased
	queued.State = storekit.JobQueued
	if queued.HeldBy("w1", now) {
		t.Fatal("a queued job is held")
	}
}
