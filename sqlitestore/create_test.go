package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestCreateDoesNotLoadTheScope: creating records in a Scope the mirror
// does not hold loads nothing that outlives the call, and still follows
// memorystore's rules against the records on disk: a new active record
// supersedes the active one of its kind and key, an expectation is checked
// against that holder (a stale one changes nothing), and the Scope, loaded
// afterwards, holds exactly what memorystore would.
func TestCreateDoesNotLoadTheScope(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	path := filepath.Join(t.TempDir(), "c.db")
	s := openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	sc := storetest.Scope(t, "tenant-c", "p")
	var items []storekit.BatchItem
	for i := range 50 {
		items = append(items, storekit.BatchItem{Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: fmt.Sprintf("Key %d", i),
			Content: fmt.Sprintf("note number %d", i), Status: memorykit.StatusActive, Actor: actor}})
	}
	old, err := s.CreateBatch(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	loaded := func(when string) {
		t.Helper()
		if n, _ := sqlitestore.LoadedScopes(s); n != 0 {
			t.Fatalf("%s: %d Scopes loaded; want none", when, n)
		}
	}
	// The same key in another spelling (canonicalised alike), same kind:
	// supersedes record 7.
	r, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: "KEY 7", Content: "note seven, corrected",
		Status: memorykit.StatusActive, Actor: actor})
	if err != nil {
		t.Fatal(err)
	}
	loaded("after a create")
	// A stale expectation on key 8 is refused and writes nothing.
	stale := memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: "key 8", Content: "note eight, v2", Status: memorykit.StatusActive,
		Actor: actor, Expect: &memorykit.ActiveExpectation{ID: old[8].ID, Version: old[8].Version + 1}}
	if _, err := s.Create(ctx, stale); !errors.Is(err, memorykit.ErrVersionConflict) {
		t.Fatalf("create with a stale expectation: %v; want ErrVersionConflict", err)
	}
	loaded("after a refused create")
	stale.Expect.Version = old[8].Version
	if _, err := s.CreateBatch(ctx, []storekit.BatchItem{{Record: stale}, {Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote,
		Key: "key 9", Content: "a note, not a fact: supersedes nothing", Status: memorykit.StatusActive, Actor: actor}}}); err != nil {
		t.Fatal(err)
	}
	loaded("after a batch")
	want := map[string]memorykit.Status{old[7].ID: memorykit.StatusSuperseded, old[8].ID: memorykit.StatusSuperseded,
		old[9].ID: memorykit.StatusActive, old[6].ID: memorykit.StatusActive, r.ID: memorykit.StatusActive}
	for id, st := range want {
		got, err := s.Get(ctx, sc, id)
		if err != nil || got.Status != st {
			t.Fatalf("record %s: %v, %v; want %s", id, got.Status, err, st)
		}
	}
	got, err := s.FindActive(ctx, sc, memorykit.KindFact, "key 7")
	if err != nil || got.ID != r.ID {
		t.Fatalf("active holder of key 7 = %s, %v; want %s", got.ID, err, r.ID)
	}
}

// TestCreateDuringAnUnfinishedPurgeOfAScopeNotLoaded: the part of a Scope
// a create loads includes its unfinished purge, so the create is held.
func TestCreateDuringAnUnfinishedPurgeOfAScopeNotLoaded(t *testing.T) {
	ctx := context.Background()
	clk := storetest.NewClock()
	path := filepath.Join(t.TempDir(), "p.db")
	s := openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	sc := storetest.Scope(t, "tenant-p", "p")
	for i := range 30 {
		if _, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: fmt.Sprintf("k%d", i), Content: "to be purged",
			Status: memorykit.StatusActive, Actor: actor}); err != nil {
			t.Fatal(err)
		}
	}
	cut := &cutCtx{Context: ctx, after: 2}
	if _, err := s.Purge(cut, sc, memorykit.Actor{Kind: memorykit.ActorOperator, ID: "op"}, "project_closed"); err == nil {
		t.Fatal("a purge cut short succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBudget(t, path, clk, sqlitestore.SyncNormal, 0)
	_, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: "new", Content: "new", Status: memorykit.StatusActive, Actor: actor})
	if !errors.Is(err, memorykit.ErrPurging) {
		t.Fatalf("create during an unfinished purge: %v; want ErrPurging", err)
	}
	if n, _ := sqlitestore.LoadedScopes(s); n != 0 {
		t.Fatalf("%d Scopes loaded; want none", n)
	}
}

// cutCtx is a context that ends once its Err or Done was asked after
// times.
type cutCtx struct {
	context.Context
	mu    sync.Mutex
	after int
	done  chan struct{}
}

func (c *cutCtx) tick() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.after--
	if c.after < 0 && c.done == nil {
		c.done = make(chan struct{})
		close(c.done)
	}
	return c.done != nil
}

func (c *cutCtx) Done() <-chan struct{} {
	if c.tick() {
		return c.done
	}
	return c.Context.Done()
}

func (c *cutCtx) Err() error {
	if c.tick() {
		return context.Canceled
	}
	return c.Context.Err()
}
