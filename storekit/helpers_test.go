package storekit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
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

// validLimits are small limits, so tests reach every bound cheaply.
func validLimits() memorykit.Limits {
	return memorykit.Limits{
		Version: 1, MaxKeyBytes: 64, MaxContentBytes: 256, MaxMetadataEntries: 2,
		MaxMetadataBytes: 64, MaxSources: 2, MaxSourceBytes: 64, MaxListSize: 10,
		MaxJobPayloadBytes: 128, MaxReasonBytes: 1024,
	}
}

// rejectMarker refuses content that mentions its marker, and quotes the
// content in its error so tests can show errors never leak it.
type rejectMarker struct{ marker string }

func (r rejectMarker) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if strings.Contains(c.Content, r.marker) {
		return errors.New("content mentions " + c.Content)
	}
	return nil
}
