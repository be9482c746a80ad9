package storekit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit/storekit"
)

func TestNewRecordIDAndContentHash(t *testing.T) {
	t.Parallel()
	if id := storekit.NewRecordID(time.Now()); storekit.ValidateID("t", "id", id) != nil {
		t.Errorf("generated id %q invalid", id)
	}
	if storekit.NewRecordID(time.Unix(1, 0)) >= storekit.NewRecordID(time.Unix(2, 0)) {
		t.Fatal("random ids should sort by creation time")
	}
	if h := storekit.ContentHash("x"); !strings.HasPrefix(h, "sha256:") || len(h) != 7+64 {
		t.Fatalf("ContentHash = %q", h)
	}
}
