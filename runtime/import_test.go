package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// refuseKey is a store whose CreateBatch refuses, as a store would refuse
// a taken ID, every item with one key, by its position in the batch.
type refuseKey struct {
	storekit.Store
	key   string
	calls int
}

func (s *refuseKey) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	s.calls++
	for i, it := range items {
		if it.Record.Key == s.key {
			return nil, storekit.BatchItemError(i, &memorykit.Error{Op: "test.create_batch", Kind: memorykit.ErrAlreadyExists, Reason: "already_exists"})
		}
	}
	return s.Store.(storekit.BatchCreator).CreateBatch(ctx, items)
}

func running(t *testing.T, cfg mkruntime.Config, b *bundle) (*bundle, *mkruntime.Session) {
	t.Helper()
	start(t, cfg, b)
	if err := b.rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := b.rt.Session(context.Background(), mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	return b, s
}

// TestImportGoverned imports more items than one store batch holds, on
// both stores: valid items are stored in order, an item the content
// policy or the Limits refuse and an item the store refuses are each
// rejected alone with a reason code, events report both, and every stored
// record is readable through the governed Session.Get.
func TestImportGoverned(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		clk := testkit.NewClock()
		store := &refuseKey{Store: be.Open(t, clk), key: "taken 150"}
		cfg, b := configOn(t, clk, store)
		cfg.Stores = mkruntime.StoresOf(store)
		b, s := running(t, cfg, b)
		ctx := context.Background()

		const n = 250 // more than two batches of MaxListSize (100)
		items := make([]writer.Input, n)
		for i := range items {
			items[i] = writer.Input{Kind: memorykit.KindFact, Key: fmt.Sprintf("imported %d", i), Content: fmt.Sprintf("imported fact number %d", i)}
		}
		items[7].Content = "contains " + testkit.RejectMarker
		items[42].Key = strings.Repeat("k", 1000)
		items[150].Key = "taken 150"
		res, err := s.Import(ctx, items)
		if err != nil {
			t.Fatalf("Import: %v", err)
		}
		if len(res) != n {
			t.Fatalf("results = %d, want %d", len(res), n)
		}
		want := map[int]string{7: "content_rejected", 42: "too_long", 150: "already_exists"}
		stored := 0
		for i, r := range res {
			if reason, bad := want[i]; bad {
				if r.Outcome != mkruntime.ImportRejected || r.Reason != reason || r.ID != "" {
					t.Errorf("item %d = %+v, want rejected %s", i, r, reason)
				}
				continue
			}
			if r.Outcome != mkruntime.ImportStored || r.ID == "" {
				t.Fatalf("item %d = %+v, want stored", i, r)
			}
			stored++
			if i%50 == 0 {
				rec, err := s.Get(ctx, r.ID)
				if err != nil || rec.Content != items[i].Content || rec.CreatedBy != b.alice.Actor {
					t.Fatalf("Get(item %d) = %+v, %v", i, rec, err)
				}
			}
		}
		if stored != n-3 {
			t.Fatalf("stored %d, want %d", stored, n-3)
		}
		if store.calls != 4 { // batches of 100, 100 (one retry without item 150) and 47
			t.Errorf("CreateBatch calls = %d, want 4", store.calls)
		}
		var evStored, evFailed int
		for _, e := range b.sink.Events() {
			switch e.Kind {
			case memorykit.EventWriteStored:
				evStored += e.Count
			case memorykit.EventWriteFailed:
				evFailed++
			}
		}
		if evStored != stored || evFailed != 3 {
			t.Errorf("events: %d stored, %d failed; want %d and 3", evStored, evFailed, stored)
		}
		b.sink.AssertNoCanary(t, testkit.RejectMarker)
	})
}

// TestImportAndGetAreGoverned: without PermWrite nothing is imported;
// Get returns only what may reach a model in the Session's Scope and
// authorizes the caller on every call; both answer ErrDraining after
// Drain.
func TestImportAndGetAreGoverned(t *testing.T) {
	cfg, b := config(t)
	b, s := running(t, cfg, b)
	ctx := context.Background()
	res, err := s.Import(ctx, []writer.Input{{Kind: memorykit.KindFact, Key: "a", Content: "an imported fact"}})
	if err != nil || res[0].Outcome != mkruntime.ImportStored {
		t.Fatalf("Import = %+v, %v", res, err)
	}
	id := res[0].ID
	cand := testkit.CreateWith(t, b.store, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindFact, Key: "c",
		Content: "a candidate", Status: memorykit.StatusCandidate, Actor: memorykit.Actor{Kind: memorykit.ActorModel, ID: "agent-1"}})
	other := testkit.Scope(t, "acme", "hermes")
	elsewhere := testkit.CreateWith(t, b.store, memorykit.NewRecord{Scope: other, Kind: memorykit.KindFact, Key: "x",
		Content: "another project", Status: memorykit.StatusActive, Actor: b.alice.Actor})
	for name, rid := range map[string]string{"candidate": cand.ID, "other scope": elsewhere.ID, "unknown": "mem-nope"} {
		if _, err := s.Get(ctx, rid); !errors.Is(err, memorykit.ErrNotFound) {
			t.Errorf("Get(%s) = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.Get(ctx, id); err != nil {
		t.Fatalf("Get: %v", err)
	}

	// A reader without write imports nothing.
	b.az.Revoke()
	b.az.Grant("alice", b.scope, memorykit.PermRead)
	if _, err := s.Import(ctx, []writer.Input{{Kind: memorykit.KindFact, Key: "b", Content: "refused"}}); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("Import without write = %v, want ErrForbidden", err)
	}
	if _, err := b.store.FindActive(ctx, b.scope, memorykit.KindFact, "b"); !errors.Is(err, memorykit.ErrNotFound) {
		t.Fatalf("refused import stored something: %v", err)
	}
	// Revoked read: Get authorizes again.
	b.az.Revoke()
	if _, err := s.Get(ctx, id); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("Get after revoke = %v, want ErrForbidden", err)
	}
	b.az.Grant("alice", b.scope, memorykit.PermRead, memorykit.PermWrite)
	if err := b.rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, id); !errors.Is(err, memorykit.ErrDraining) {
		t.Fatalf("Get after Drain = %v", err)
	}
	if _, err := s.Import(ctx, []writer.Input{{Kind: memorykit.KindFact, Key: "d", Content: "late"}}); !errors.Is(err, memorykit.ErrDraining) {
		t.Fatalf("Import after Drain = %v", err)
	}
}

// TestAwaitEmbedded: after an import, AwaitEmbedded returns once the
// embedding worker has embedded the Scope's records, woken by the
// worker's rounds; records of another Scope do not hold it up; it answers
// ctx's error when ctx ends first. Both stores.
func TestAwaitEmbedded(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		clk := testkit.NewClock()
		cfg, b := configOn(t, clk, be.Open(t, clk))
		b, s := running(t, cfg, b)
		ctx := context.Background()
		other := testkit.Scope(t, "acme", "hermes")
		items := make([]writer.Input, 40)
		for i := range items {
			items[i] = writer.Input{Kind: memorykit.KindNote, Key: fmt.Sprintf("note %d", i), Content: fmt.Sprintf("note body %d", i)}
		}
		if _, err := s.Import(ctx, items); err != nil {
			t.Fatal(err)
		}
		if n, err := b.rt.PendingEmbeddings(ctx, b.scope); err != nil || n == 0 {
			t.Fatalf("pending after import = %d, %v; want > 0", n, err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := b.rt.AwaitEmbedded(cancelled, b.scope); !errors.Is(err, context.Canceled) {
			t.Fatalf("AwaitEmbedded with an ended context = %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- b.rt.AwaitEmbedded(ctx, b.scope) }()
		var err error
		eventually(t, clk, time.Second, "AwaitEmbedded returns", func() bool {
			select {
			case err = <-done:
				return true
			default:
				return false
			}
		})
		if err != nil {
			t.Fatalf("AwaitEmbedded: %v", err)
		}
		if n, err := b.rt.PendingEmbeddings(ctx, b.scope); err != nil || n != 0 {
			t.Fatalf("pending after AwaitEmbedded = %d, %v", n, err)
		}
		if n, err := b.rt.PendingEmbeddings(ctx, other); err != nil || n != 0 {
			t.Fatalf("other scope pending = %d, %v", n, err)
		}
	})
}

// failSecond is a store whose second CreateBatch call fails as an
// unavailable store does.
type failSecond struct {
	storekit.Store
	calls int
}

func (s *failSecond) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	s.calls++
	if s.calls == 2 {
		return nil, memorykit.Recoverable(&memorykit.Error{Op: "test.create_batch", Kind: memorykit.ErrUnavailable, Reason: "connection_lost"})
	}
	return s.Store.(storekit.BatchCreator).CreateBatch(ctx, items)
}

// TestImportStopsOnStoreFailure: when the store fails as a whole, Import
// returns the typed error with the results so far; the items it did not
// write are rejected with the failure's reason code, none silently lost.
func TestImportStopsOnStoreFailure(t *testing.T) {
	clk := testkit.NewClock()
	store := &failSecond{Store: testkit.MemStore(t, clk)}
	cfg, b := configOn(t, clk, store)
	cfg.Stores = mkruntime.StoresOf(store)
	_, s := running(t, cfg, b)
	items := make([]writer.Input, 150)
	for i := range items {
		items[i] = writer.Input{Kind: memorykit.KindFact, Key: fmt.Sprintf("k %d", i), Content: "an imported fact"}
	}
	res, err := s.Import(context.Background(), items)
	if !errors.Is(err, memorykit.ErrUnavailable) || len(res) != len(items) {
		t.Fatalf("Import = %d results, %v; want all results and ErrUnavailable", len(res), err)
	}
	for i, r := range res {
		stored := i < 100
		if stored && r.Outcome != mkruntime.ImportStored || !stored && (r.Outcome != mkruntime.ImportRejected || r.Reason != "connection_lost") {
			t.Fatalf("item %d = %+v", i, r)
		}
	}
}
