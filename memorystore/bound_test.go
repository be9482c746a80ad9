package memorystore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestMaxRecordsBound fills a store to its bound: the next create and any
// batch that would cross the bound fail with the typed, non-recoverable
// store_full error and change nothing.
func TestMaxRecordsBound(t *testing.T) {
	ctx := context.Background()
	_, base := randomTestStore(t)
	if _, err := New(Config{Clock: clock.NewMock(), Guard: base.guard, Tombstones: testTombstones(t), MaxRecords: -1}); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Fatalf("negative bound: %v", err)
	}
	if s, err := New(Config{Clock: clock.NewMock(), Guard: base.guard, Tombstones: testTombstones(t)}); err != nil || s.maxRecords != DefaultMaxRecords {
		t.Fatalf("default bound: %v", err)
	}
	s, err := New(Config{Clock: clock.NewMock(), Guard: base.guard, Tombstones: testTombstones(t), MaxRecords: 3})
	if err != nil {
		t.Fatal(err)
	}
	sc := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p1"}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}
	rec := func(i int) memorykit.NewRecord {
		return memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: fmt.Sprintf("k%d", i),
			Content: "note", Status: memorykit.StatusActive, Actor: actor}
	}
	if _, err := s.CreateBatch(ctx, []storekit.BatchItem{{Record: rec(0)}, {Record: rec(1)}}); err != nil {
		t.Fatal(err)
	}
	// A batch that would cross the bound is refused whole.
	_, err = s.CreateBatch(ctx, []storekit.BatchItem{{Record: rec(2)}, {Record: rec(3)}})
	wantFull(t, err)
	if n := len(s.records); n != 2 {
		t.Fatalf("a refused batch stored %d records", n-2)
	}
	if _, err := s.Create(ctx, rec(2)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Create(ctx, rec(3))
	wantFull(t, err)
	if n := len(s.records); n != 3 {
		t.Fatalf("%d records past a bound of 3", n)
	}
	// Forgetting keeps the record's place: still full.
	list, err := s.List(ctx, storekit.ListFilter{Scope: sc, Limit: 10})
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if _, err := s.Forget(ctx, storekit.Transition{Scope: sc, ID: list[0].ID, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Create(ctx, rec(4))
	wantFull(t, err)
}

func wantFull(t *testing.T, err error) {
	t.Helper()
	var me *memorykit.Error
	if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrUnavailable) || me.Reason != ReasonStoreFull || memorykit.IsRecoverable(err) {
		t.Fatalf("want a non-recoverable %s, got %v", ReasonStoreFull, err)
	}
}
