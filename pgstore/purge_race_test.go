package pgstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
)

// TestPostgresPurgeUnderWrites runs writers into the Scope while it is
// purged. A write refused with ErrPurging stores nothing; every record that
// existed before the purge began is erased by it; and nothing else fails.
func TestPostgresPurgeUnderWrites(t *testing.T) {
	b := setup(t)
	var before []string
	for i := 0; i < 40; i++ {
		r := b.create(t, memorykit.KindNote, fmt.Sprintf("seed %d", i), "seed content", seedStatus(i))
		before = append(before, r.ID)
	}
	type outcome struct {
		id  string
		err error
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
		stop     = make(chan struct{})
	)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("mem_w%d_%04d", w, i)
				_, err := b.s.Create(b.ctx, memorykit.NewRecord{ID: id, Scope: b.scope, Kind: memorykit.KindNote,
					Key: "racing " + id, Content: "racing content", Status: memorykit.StatusActive, Actor: author})
				mu.Lock()
				outcomes = append(outcomes, outcome{id, err})
				mu.Unlock()
			}
		}()
	}
	rep, err := b.s.Purge(b.ctx, b.scope, memorykit.Actor{Kind: memorykit.ActorOperator, ID: "ops"}, "project_closed")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	purged := make(map[string]bool, len(rep.RecordIDs))
	for _, id := range rep.RecordIDs {
		purged[id] = true
	}
	for _, id := range before {
		if !purged[id] {
			t.Fatalf("record %s existed before the purge and was not purged", id)
		}
	}
	refused := 0
	for _, o := range outcomes {
		switch {
		case o.err == nil:
		case errors.Is(o.err, memorykit.ErrPurging) && memorykit.IsRecoverable(o.err):
			refused++
			if _, err := b.s.Get(b.ctx, b.scope, o.id); !errors.Is(err, memorykit.ErrNotFound) {
				t.Fatalf("a write refused with ErrPurging stored %s: %v", o.id, err)
			}
		default:
			t.Fatalf("write %s during the purge: %v", o.id, o.err)
		}
	}
	t.Logf("%d writes during the purge, %d refused with ErrPurging, %d records purged", len(outcomes), refused, rep.Records)
}

func seedStatus(i int) memorykit.Status {
	if i%2 == 0 {
		return memorykit.StatusCandidate
	}
	return memorykit.StatusActive
}
