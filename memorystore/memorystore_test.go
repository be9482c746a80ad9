package memorystore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func harness() storetest.Harness {
	return storetest.Harness{
		New: func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) storekit.Store {
			s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: storetest.NewTombstones(t)})
			if err != nil {
				t.Fatalf("memorystore.New: %v", err)
			}
			return s
		},
		Dump: func(t *testing.T, s storekit.Store) string {
			return s.(*memorystore.Store).Dump()
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.RunAll(t, harness())
}

func TestNewRequiresClockGuardAndTombstones(t *testing.T) {
	guard := storetest.NewGuard(t)
	cases := map[string]memorystore.Config{
		"no clock":      {Guard: guard, Tombstones: storetest.NewTombstones(t)},
		"no guard":      {Clock: clock.NewMock(), Tombstones: storetest.NewTombstones(t)},
		"no tombstones": {Clock: clock.NewMock(), Guard: guard},
		"nothing":       {},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := memorystore.New(cfg)
			if s != nil || !errors.Is(err, memorykit.ErrInvalidConfig) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", s, err)
			}
		})
	}
}

func TestDumpIsDeterministic(t *testing.T) {
	clk := storetest.NewClock()
	s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scope := storetest.Scope(t, "tenant-a", "project-1")
	for _, key := range []string{"b", "a", "c"} {
		r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: key, Content: "content " + key,
			Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "u1"},
			Metadata: map[string]string{"x": "1", "y": "2", "z": "3"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"p/one", "p/two"} {
			if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: r.ID, Profile: p,
				ContentHash: r.ContentHash, Vector: []float32{1, 2}, WorkerID: "w1"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := s.Dump()
	for i := 0; i < 20; i++ {
		if again := s.Dump(); again != first {
			t.Fatalf("Dump differs between calls:\n%s\n---\n%s", first, again)
		}
	}
}

func TestDumpRendersEveryKindOfState(t *testing.T) {
	clk := storetest.NewClock()
	s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scope := storetest.Scope(t, "tenant-a", "project-1")
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u1"}
	r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "dumpkey", Content: "dumpcontent",
		Status: memorykit.StatusActive, Actor: actor, Reason: "dumpreason",
		Metadata: map[string]string{"dumpmetakey": "dumpmetavalue"}, Sources: []memorykit.Source{{Kind: "doc", Ref: "dumpsource"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: scope, ID: r.ID, Actor: actor}, Content: "dumpcorrected"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p/leased", WorkerID: "dumpworker", TTL: time.Minute, Max: 1}); err != nil {
		t.Fatal(err)
	}
	cur, _ := s.Get(ctx, scope, r.ID)
	if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: r.ID, Profile: "p/stored", ContentHash: cur.ContentHash,
		Vector: []float32{0.625, 1}, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: "dumpjob", Scope: scope, Payload: "dumppayload", MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	d := s.Dump()
	for _, want := range []string{
		"dumpkey", "dumpcorrected", "dumpcontent", "dumpreason", "dumpmetakey", "dumpmetavalue", "dumpsource", // record + revisions
		`terms ["dumpcorrected" "dumpkey"]`, // search terms
		"p/stored", "0.625",                 // embedding
		"p/leased", "dumpworker", // embedding lease
		"dumpjob", "dumppayload", // job
		`action="create"`, `action="correct"`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf("Dump lacks %q:\n%s", want, d)
		}
	}
}

// TestConcurrentMixedOperations hammers one store from several goroutines
// (run it with -race) and then checks the invariants a serialised store
// keeps: one active record per Scope/kind/key, gap-free revision trails,
// and every job counted exactly once.
func TestConcurrentMixedOperations(t *testing.T) {
	clk := storetest.NewClock()
	s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scopes := []memorykit.Scope{storetest.Scope(t, "tenant-a", "p1"), storetest.Scope(t, "tenant-b", "p1")}
	actor := memorykit.Actor{Kind: memorykit.ActorReviewer, ID: "r1"}
	const workers, rounds = 6, 60
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("worker-%d", w)
			for i := 0; i < rounds; i++ {
				scope := scopes[(w+i)%len(scopes)]
				key := fmt.Sprintf("key-%d", i%4)
				status := memorykit.StatusCandidate
				if i%3 == 0 {
					status = memorykit.StatusActive
				}
				r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: key,
					Content: fmt.Sprintf("content %d %d", w, i), Status: status, Actor: actor})
				if err != nil {
					t.Error(err)
					return
				}
				tr := storekit.Transition{Scope: scope, ID: r.ID, Actor: actor}
				switch {
				case status == memorykit.StatusCandidate && i%2 == 0:
					_, _ = s.Activate(ctx, tr)
				case status == memorykit.StatusCandidate:
					_, _ = s.Correct(ctx, storekit.Correction{Transition: tr, Content: "fixed"})
				}
				tasks, _ := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p/x", WorkerID: worker, TTL: time.Second, Max: 3})
				for _, task := range tasks {
					_ = s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: task.Scope, RecordID: task.RecordID, Profile: task.Profile,
						ContentHash: task.ContentHash, Vector: []float32{1, float32(i)}, WorkerID: worker, LeaseToken: task.LeaseToken})
				}
				_, _ = s.EnqueueJob(ctx, storekit.NewJob{ID: storekit.ExtractionJobID(scope, fmt.Sprintf("%d-%d", w, i)),
					Scope: scope, Payload: "turn", MaxAttempts: 2, MaxReaps: 2})
				jobs, _ := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: worker, TTL: time.Second, Max: 2})
				for _, j := range jobs {
					if i%2 == 0 {
						_, _ = s.CompleteJob(ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: worker, LeaseToken: j.LeaseToken})
					} else {
						_, _ = s.FailJob(ctx, storekit.JobFailure{JobID: j.ID, WorkerID: worker, LeaseToken: j.LeaseToken, Reason: "flaky"})
					}
				}
				_, _ = s.Recall(ctx, storekit.RecallQuery{Scope: scope, ExactKeys: []string{key}, Terms: []string{"content"},
					Vector: []float32{1, 0}, Profile: "p/x", ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
				if i%10 == 0 {
					clk.Add(2 * time.Second)
					_, _ = s.ReapJobLeases(ctx)
					_, _ = s.ReapEmbeddingLeases(ctx)
				}
			}
		}()
	}
	wg.Wait()

	for _, scope := range scopes {
		active := map[string]int{}
		after := ""
		for {
			page, err := s.List(ctx, storekit.ListFilter{Scope: scope, Limit: storetest.Limits().MaxListSize, AfterID: after})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				if r.Status == memorykit.StatusActive {
					active[r.Key]++
				}
				revs, err := s.Revisions(ctx, scope, r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(revs)) != r.Version {
					t.Fatalf("record %s at version %d has %d revisions", r.ID, r.Version, len(revs))
				}
				for i, v := range revs {
					if v.Version != int64(i+1) {
						t.Fatalf("record %s revision %d has version %d", r.ID, i, v.Version)
					}
				}
			}
			after = page[len(page)-1].ID
		}
		for key, n := range active {
			if n != 1 {
				t.Fatalf("%s key %s has %d active records", scope, key, n)
			}
		}
	}
	c, err := s.CountJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if total := c.Queued + c.Leased + c.Done + c.Failed; total != workers*rounds {
		t.Fatalf("job counts %+v sum to %d, want %d", c, total, workers*rounds)
	}
}

// TestReasonsGoThroughContentPolicy: every stored reason passes the Host's
// ContentValidator and Limits.MaxReasonBytes (issue 10, hole 8).
func TestReasonsGoThroughContentPolicy(t *testing.T) {
	storetest.RunReasonPolicyConformance(t, harness())
}
