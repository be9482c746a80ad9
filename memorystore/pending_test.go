package memorystore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// fullScanLease is what LeaseEmbeddings leased before the pending index: a
// scan of every record, in ID order, at most max.
func fullScanLease(s *Store, profile string, max int) []string {
	now := s.now()
	var ids []string
	for _, e := range s.records {
		if !s.pending(e, profile) {
			continue
		}
		if st := s.currentState(e, profile); st != nil && (st.leasedBy != "" || st.parked || st.retryAt.After(now)) {
			continue
		}
		ids = append(ids, e.rec.ID)
	}
	sort.Strings(ids)
	if len(ids) > max {
		ids = ids[:max]
	}
	return ids
}

// TestPendingIndexMatchesFullScan applies random creates (active and
// candidate, single and batched with a vector), activations, rejections,
// corrections, forgets, erasures, embedding puts, releases and deletions,
// and checks after each step that every tracked profile's pending set is
// exactly the records a full scan finds pending, that PendingEmbeddings
// agrees, and that every lease leases what the full scan would have.
func TestPendingIndexMatchesFullScan(t *testing.T) {
	ctx := context.Background()
	clk, s := randomTestStore(t)
	rng := rand.New(rand.NewPCG(7, 19))
	sc := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p1"}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}
	profiles := []string{"p", "q"}
	var ids []string
	pick := func() string { return ids[rng.IntN(len(ids))] }
	vec := func() []float32 { return []float32{1, rng.Float32(), rng.Float32()} }
	check := func(step int) {
		t.Helper()
		for _, p := range profiles {
			want := map[string]bool{}
			for id, e := range s.records {
				if s.pending(e, p) {
					want[id] = true
				}
			}
			if set := s.pendingIdx[p]; set != nil {
				if len(set) != len(want) {
					t.Fatalf("step %d profile %s: index has %d pending, scan %d", step, p, len(set), len(want))
				}
				for id := range set {
					if !want[id] {
						t.Fatalf("step %d profile %s: %s indexed but not pending", step, p, id)
					}
				}
			}
			if n, err := s.PendingEmbeddings(ctx, p); err != nil || n != len(want) {
				t.Fatalf("step %d: PendingEmbeddings %d %v, want %d", step, n, err, len(want))
			}
		}
	}
	for step := 0; step < 1500; step++ {
		clk.Add(time.Second)
		switch op := rng.IntN(12); {
		case op < 3 || len(ids) == 0:
			st := memorykit.StatusActive
			if rng.IntN(3) == 0 {
				st = memorykit.StatusCandidate
			}
			rec, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: fmt.Sprintf("k%d", rng.IntN(40)),
				Content: fmt.Sprintf("c%d", step), Status: st, Actor: actor})
			if err == nil {
				ids = append(ids, rec.ID)
			}
		case op == 3:
			recs, err := s.CreateBatch(ctx, []storekit.BatchItem{{Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact,
				Key: fmt.Sprintf("b%d", step), Content: "batched", Status: memorykit.StatusActive, Actor: actor},
				Embedding: &storekit.BatchEmbedding{Profile: "p", Vector: vec()}}})
			if err == nil {
				ids = append(ids, recs[0].ID)
			}
		case op == 4:
			_, _ = s.Activate(ctx, storekit.Transition{Scope: sc, ID: pick(), Actor: actor})
		case op == 5:
			_, _ = s.Reject(ctx, storekit.Transition{Scope: sc, ID: pick(), Actor: actor})
		case op == 6:
			_, _ = s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: sc, ID: pick(), Actor: actor},
				Content: fmt.Sprintf("corrected %d", step)})
		case op == 7:
			_, _ = s.Forget(ctx, storekit.Transition{Scope: sc, ID: pick(), Actor: actor})
		case op == 8 && rng.IntN(4) == 0:
			_, _ = s.Erase(ctx, storekit.Transition{Scope: sc, ID: pick(), Actor: actor})
		case op == 9:
			id := pick()
			if rec, err := s.Get(ctx, sc, id); err == nil {
				_ = s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: sc, RecordID: id, Profile: profiles[rng.IntN(2)],
					ContentHash: rec.ContentHash, Vector: vec(), WorkerID: "w"})
			}
		case op == 10 && rng.IntN(8) == 0:
			_, _ = s.DeleteAllEmbeddings(ctx, profiles[rng.IntN(2)])
		default:
			p := profiles[rng.IntN(2)]
			max := 1 + rng.IntN(5)
			s.mu.Lock()
			want := fullScanLease(s, p, max)
			s.mu.Unlock()
			tasks, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: p, WorkerID: "w", TTL: time.Minute, Max: max})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(tasks))
			for i, task := range tasks {
				got[i] = task.RecordID
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: lease %v, full scan %v", step, got, want)
			}
			// Hand some leases back, fail others, so lease states vary.
			for _, task := range tasks {
				if rng.IntN(2) == 0 {
					_ = s.ReleaseEmbedding(ctx, storekit.EmbeddingRelease{Scope: sc, RecordID: task.RecordID, Profile: p,
						ContentHash: task.ContentHash, WorkerID: "w", RetryAt: clk.Now().Add(time.Duration(rng.IntN(3)) * time.Second)})
				}
			}
		}
		check(step)
	}
	if len(s.pendingIdx) != len(profiles) {
		t.Fatalf("tracked profiles %d", len(s.pendingIdx))
	}
}
