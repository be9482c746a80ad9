package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

var reviewer = memorykit.Actor{Kind: memorykit.ActorReviewer, ID: "reviewer-1"}

func TestPostgresTimestampsComeFromTheClock(t *testing.T) {
	b := setup(t)
	r := b.create(t, memorykit.KindFact, "Region", "eu-west-1", memorykit.StatusActive)
	want := epoch.Truncate(time.Microsecond)
	for name, got := range map[string]time.Time{"created": r.CreatedAt, "updated": r.UpdatedAt, "effective_from": r.EffectiveFrom} {
		if !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("%s = %v, want %v UTC", name, got, want)
		}
	}
	b.clk.Add(90 * time.Minute)
	f, err := b.s.Forget(b.ctx, storekit.Transition{Scope: b.scope, ID: r.ID, Actor: reviewer})
	if err != nil {
		t.Fatal(err)
	}
	if !f.UpdatedAt.Equal(want.Add(90*time.Minute)) || !f.CreatedAt.Equal(want) {
		t.Fatalf("after forget: created %v updated %v", f.CreatedAt, f.UpdatedAt)
	}
	revs, err := b.s.Revisions(b.ctx, b.scope, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 || !revs[1].At.Equal(f.UpdatedAt) || revs[1].Action != memorykit.ActionForget {
		t.Fatalf("revisions: %+v", revs)
	}
}

func TestPostgresConcurrentActivationLeavesOneActive(t *testing.T) {
	b := setup(t)
	const n = 12
	cands := make([]memorykit.Record, n)
	for i := range cands {
		cands[i] = b.create(t, memorykit.KindDecision, "db engine", fmt.Sprintf("option %d", i), memorykit.StatusCandidate)
	}
	held := b.create(t, memorykit.KindDecision, "db engine", "the incumbent", memorykit.StatusActive)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.s.Activate(b.ctx, storekit.Transition{Scope: b.scope, ID: cands[i].ID, Actor: reviewer})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("activation %d: %v", i, err)
		}
	}
	active, err := b.s.List(b.ctx, storekit.ListFilter{Scope: b.scope, Statuses: []memorykit.Status{memorykit.StatusActive}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 1 {
		t.Fatalf("%d active records, want 1", len(active))
	}
	sup, err := b.s.List(b.ctx, storekit.ListFilter{Scope: b.scope, Statuses: []memorykit.Status{memorykit.StatusSuperseded}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(sup) != n {
		t.Fatalf("%d superseded records, want %d", len(sup), n)
	}
	found, err := b.s.FindActive(b.ctx, b.scope, memorykit.KindDecision, "DB   Engine")
	if err != nil || found.ID != active[0].ID {
		t.Fatalf("FindActive: %v %v", found.ID, err)
	}
	if h, _ := b.s.Get(b.ctx, b.scope, held.ID); h.Status != memorykit.StatusSuperseded {
		t.Fatalf("the incumbent is %s", h.Status)
	}
}

func TestPostgresConcurrentActiveCreates(t *testing.T) {
	b := setup(t)
	const n = 16
	var wg sync.WaitGroup
	var ok, conflicts atomic.Int32
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.s.Create(b.ctx, memorykit.NewRecord{
				Scope: b.scope, Kind: memorykit.KindFact, Key: "owner", Content: fmt.Sprintf("team %d", i),
				Status: memorykit.StatusActive, Actor: author, Expect: &memorykit.ActiveExpectation{None: true},
			})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, memorykit.ErrVersionConflict):
				conflicts.Add(1)
			default:
				t.Errorf("create %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("%d creates won with Expect None, %d conflicted; want 1 and %d", ok.Load(), conflicts.Load(), n-1)
	}
	// Without an expectation every create wins, each superseding the last.
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.s.Create(b.ctx, memorykit.NewRecord{
				Scope: b.scope, Kind: memorykit.KindFact, Key: "owner", Content: fmt.Sprintf("again %d", i),
				Status: memorykit.StatusActive, Actor: author,
			}); err != nil {
				t.Errorf("create %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	active, err := b.s.List(b.ctx, storekit.ListFilter{Scope: b.scope, Statuses: []memorykit.Status{memorykit.StatusActive}, Limit: 100})
	if err != nil || len(active) != 1 {
		t.Fatalf("%d active records (%v), want 1", len(active), err)
	}
}

func TestPostgresEraseScrubsEveryTable(t *testing.T) {
	b := setup(t)
	const canary = "canary-7f3a-cobalt"
	const profile = "test/p1"
	in := memorykit.NewRecord{
		Scope: b.scope, Kind: memorykit.KindNote, Key: "wifi", Content: "password is " + canary,
		Metadata: map[string]string{"note": canary}, Sources: []memorykit.Source{{Kind: "chat", Ref: canary}},
		Status: memorykit.StatusActive, Actor: author,
	}
	r, err := b.s.Create(b.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := b.s.LeaseEmbeddings(b.ctx, storekit.EmbeddingLease{Profile: profile, WorkerID: "w1", TTL: time.Minute, Max: 10})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("lease: %v %v", tasks, err)
	}
	if err := b.s.PutEmbedding(b.ctx, storekit.EmbeddingPut{Scope: b.scope, RecordID: r.ID, Profile: profile,
		ContentHash: r.ContentHash, Vector: []float32{1, 2, 3}, WorkerID: "w1", LeaseToken: tasks[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	c, err := b.s.Correct(b.ctx, storekit.Correction{Transition: storekit.Transition{Scope: b.scope, ID: r.ID, Actor: reviewer},
		Content: "new password is " + canary + "-2", Sources: []memorykit.Source{{Kind: "chat", Ref: canary}}})
	if err != nil {
		t.Fatal(err)
	}
	// A second profile leaves a lease row at the corrected hash.
	if _, err := b.s.LeaseEmbeddings(b.ctx, storekit.EmbeddingLease{Profile: "test/p2", WorkerID: "w2", TTL: time.Minute, Max: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Forget(b.ctx, storekit.Transition{Scope: b.scope, ID: r.ID, Actor: reviewer}); err != nil {
		t.Fatal(err)
	}
	before, err := b.s.Dump(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{canary, r.ContentHash, c.ContentHash, "embedding_leases: ", "embeddings: "} {
		if !strings.Contains(before, s) {
			t.Fatalf("the dump before erase lacks %q; the test would prove nothing", s)
		}
	}
	e, err := b.s.Erase(b.ctx, storekit.Transition{Scope: b.scope, ID: r.ID, Actor: reviewer, Reason: "gdpr request"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != memorykit.StatusErased || e.Content != "" || e.ContentHash != "" || e.Metadata != nil || e.Sources != nil {
		t.Fatalf("erased record: %+v", e)
	}
	after, err := b.s.Dump(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{canary, r.ContentHash, c.ContentHash, "password", "embedding_leases: ", "embeddings: "} {
		if strings.Contains(after, s) {
			t.Fatalf("the dump after erase still holds %q:\n%s", s, after)
		}
	}
	revs, err := b.s.Revisions(b.ctx, b.scope, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []memorykit.Action{memorykit.ActionCreate, memorykit.ActionCorrect, memorykit.ActionForget, memorykit.ActionErase}
	if len(revs) != len(want) {
		t.Fatalf("%d revisions", len(revs))
	}
	for i, v := range revs {
		if v.Action != want[i] || v.Content != "" || v.ContentHash != "" || v.Metadata != nil || v.Sources != nil {
			t.Fatalf("revision %d: %+v", i, v)
		}
	}
	// A free-text reason is scrubbed with the content.
	if revs[3].Reason != "" {
		t.Fatalf("erase reason %q", revs[3].Reason)
	}
}

func TestPostgresGuardRejectsBeforeWriting(t *testing.T) {
	b := setup(t)
	before, _ := b.s.Dump(b.ctx)
	_, err := b.s.Create(b.ctx, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindNote, Key: "k",
		Content: "FORBIDDEN words", Status: memorykit.StatusActive, Actor: author})
	if me := wantKind(t, err, memorykit.ErrInvalidInput); me.Reason != "content_rejected" {
		t.Fatalf("reason %q", me.Reason)
	}
	if strings.Contains(err.Error(), "FORBIDDEN") || strings.Contains(err.Error(), "policy said") {
		t.Fatalf("content or validator text leaked: %v", err)
	}
	_, err = b.s.Create(b.ctx, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindNote, Key: "k",
		Content: "nul \x00 byte", Status: memorykit.StatusActive, Actor: author})
	wantKind(t, err, memorykit.ErrInvalidInput)
	after, _ := b.s.Dump(b.ctx)
	if before != after {
		t.Fatal("a rejected write changed the database")
	}
}

// countingTracer counts the queries and batches a pool sends.
type countingTracer struct{ n atomic.Int64 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A pipelined batch is one round trip, however many statements it holds.
func (c *countingTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *countingTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *countingTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// tracedStore opens a Store on its own pool whose statements tracer
// counts; maxConns > 0 bounds the pool (one connection keeps a new
// connection's setup queries out of the counts). The Store and its pool
// close when the test ends.
func tracedStore(t *testing.T, schema string, clk clock.Clock, maxConns int32, sqlRecall bool) (*Store, *countingTracer) {
	t.Helper()
	ctx := context.Background()
	pcfg, err := pgxpool.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	tracer := &countingTracer{}
	pcfg.ConnConfig.Tracer = tracer
	pcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error { return pgxvec.RegisterTypes(ctx, c) }
	if maxConns > 0 {
		pcfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := New(ctx, pool, Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema, SQLRecall: sqlRecall})
	if err != nil {
		unusable(t, "new", err)
	}
	t.Cleanup(s.Close)
	return s, tracer
}

func TestPostgresRecallIsOneRoundTrip(t *testing.T) {
	schema := uniqueSchema(t)
	ctx := context.Background()
	clk := newClock()
	s, tracer := tracedStore(t, schema, clk, 0, true)
	b := &bundle{s: s, clk: clk, schema: schema, ctx: ctx}
	b.scope, _ = memorykit.ProjectScope("t1", "p1")
	r := b.create(t, memorykit.KindFact, "deploy region", "The API runs in eu-west-1", memorykit.StatusActive)
	if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: b.scope, RecordID: r.ID, Profile: "p",
		ContentHash: r.ContentHash, Vector: []float32{1, 0}, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	before := tracer.n.Load()
	res, err := s.Recall(ctx, storekit.RecallQuery{
		Scope: b.scope, ExactKeys: []string{"deploy region"}, Terms: storekit.SearchTerms("where does the api run", 16),
		Vector: []float32{1, 1}, Profile: "p", ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := tracer.n.Load() - before; got != 1 {
		t.Fatalf("recall sent %d queries, want 1", got)
	}
	if len(res.Exact) != 1 || len(res.FullText) != 1 || len(res.Vector) != 1 {
		t.Fatalf("channels: exact %v full-text %v vector %v", res.Exact, res.FullText, res.Vector)
	}
	if got := res.Vector[0].Score; got < 0.7071067 || got > 0.7071068 {
		t.Fatalf("cosine similarity %v, want 1/sqrt(2)", got)
	}
}

func TestPostgresFullTextWeights(t *testing.T) {
	b := setup(t)
	contents := []string{
		"caroline likes the blue door",  // caroline, the, blue
		"the blue sky over the harbour", // the, blue
		"the door is red",               // the
		"nothing in common",             // -
		"caroline 项目记忆 sketch",          // caroline, 项目
	}
	recs := make([]memorykit.Record, len(contents))
	for i, c := range contents {
		recs[i] = b.create(t, memorykit.KindNote, fmt.Sprintf("note %d", i), c, memorykit.StatusActive)
		b.clk.Add(time.Second)
	}
	terms := storekit.SearchTerms("Caroline, the blue 项目", 16)
	res, err := b.s.Recall(b.ctx, storekit.RecallQuery{Scope: b.scope, Terms: terms, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Reference computation over the recallable pool, in Go.
	n := len(contents)
	df := map[string]int{}
	idx := make([]map[string]bool, n)
	for i, r := range recs {
		idx[i] = map[string]bool{}
		for _, term := range storekit.IndexTerms(r.Key, r.Content) {
			idx[i][term] = true
		}
	}
	for _, term := range terms {
		for i := range recs {
			if idx[i][term] {
				df[term]++
			}
		}
	}
	var cands []storekit.FullTextCandidate
	for i, r := range recs {
		m, w := 0, 0.0
		for _, term := range terms {
			if idx[i][term] {
				m++
				w += storekit.IDF(n, df[term])
			}
		}
		if m > 0 {
			cands = append(cands, storekit.FullTextCandidate{ID: r.ID, Matched: m, Weight: storekit.RoundWeight(w), UpdatedAt: r.UpdatedAt})
		}
	}
	kept, below := storekit.FullTextRule(cands, 5)
	check := func(what string, got []storekit.Hit, want []storekit.FullTextCandidate) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d hits, want %d (%v)", what, len(got), len(want), got)
		}
		for i := range got {
			if got[i].ID != want[i].ID || got[i].Rank != i+1 || got[i].Score != float64(want[i].Matched) || got[i].Weight != want[i].Weight {
				t.Fatalf("%s[%d] = %+v, want %+v", what, i, got[i], want[i])
			}
		}
	}
	check("kept", res.FullText, kept)
	check("below", res.FullTextBelow, below)
	if len(kept) < 2 || len(below) < 1 {
		t.Fatalf("the scenario should keep several and drop some: kept %d below %d", len(kept), len(below))
	}
	for _, h := range res.FullTextBelow {
		if _, ok := res.Records[h.ID]; ok {
			t.Fatal("Records holds a below-threshold record")
		}
	}
}

func TestPostgresEmbeddingLeasesAreExclusive(t *testing.T) {
	b := setup(t)
	const n = 60
	for i := range n {
		b.create(t, memorykit.KindNote, fmt.Sprintf("k%03d", i), "c", memorykit.StatusActive)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			for {
				tasks, err := b.s.LeaseEmbeddings(b.ctx, storekit.EmbeddingLease{Profile: "p", WorkerID: worker, TTL: time.Minute, Max: 7})
				if err != nil {
					t.Error(err)
					return
				}
				if len(tasks) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range tasks {
					if prev, dup := seen[tk.RecordID]; dup {
						t.Errorf("record leased by %s and %s", prev, worker)
					}
					seen[tk.RecordID] = worker
					if tk.Attempt != 1 {
						t.Errorf("attempt %d", tk.Attempt)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d records leased, want %d", len(seen), n)
	}
	pending, err := b.s.PendingEmbeddings(b.ctx, "p")
	if err != nil || pending != n {
		t.Fatalf("pending %d %v", pending, err)
	}
	b.clk.Add(time.Minute)
	reaped, err := b.s.ReapEmbeddingLeases(b.ctx)
	if err != nil || reaped != n {
		t.Fatalf("reaped %d %v", reaped, err)
	}
	tasks, err := b.s.LeaseEmbeddings(b.ctx, storekit.EmbeddingLease{Profile: "p", WorkerID: "late", TTL: time.Minute, Max: 3})
	if err != nil || len(tasks) != 3 || tasks[0].Attempt != 2 {
		t.Fatalf("after reap: %+v %v", tasks, err)
	}
}

func TestPostgresSharedJobQueue(t *testing.T) {
	schema := uniqueSchema(t)
	clk := newClock()
	s1 := openStore(t, schema, clk)
	s2 := openStore(t, schema, clk)
	ctx := context.Background()
	scope, _ := memorykit.ProjectScope("tenant-a", "project-1")
	const n = 240
	for i := range n {
		if _, err := s1.EnqueueJob(ctx, storekit.NewJob{ID: fmt.Sprintf("job-%04d", i), Scope: scope,
			Payload: "turn text", MaxAttempts: 3, MaxReaps: 3}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	leased := map[string]string{}
	var wg sync.WaitGroup
	for w := range 8 {
		s := s1
		if w%2 == 1 {
			s = s2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("worker-%d", w)
			for {
				jobs, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: worker, TTL: time.Minute, Max: 7})
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					if prev, dup := leased[j.ID]; dup {
						t.Errorf("job %s leased by %s and %s", j.ID, prev, worker)
					}
					leased[j.ID] = worker
					if j.LeasedBy != worker || j.Attempt != 1 || j.State != storekit.JobLeased ||
						!j.LeaseExpiresAt.Equal(clk.Now().Add(time.Minute).Truncate(time.Microsecond)) {
						t.Errorf("leased job: %+v", j)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(leased) != n {
		t.Fatalf("%d jobs leased, want %d", len(leased), n)
	}
	counts, err := s2.CountJobs(ctx)
	if err != nil || counts != (storekit.JobCounts{Leased: n}) {
		t.Fatalf("counts %+v %v", counts, err)
	}
	// Each worker completes its own jobs through the other store.
	ids := make([]string, 0, n)
	for id := range leased {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i, id := range ids {
		s := s2
		if i%2 == 0 {
			s = s1
		}
		cur, err := s.GetJob(ctx, scope, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CompleteJob(ctx, storekit.JobCompletion{JobID: id, WorkerID: "intruder", LeaseToken: cur.LeaseToken}); !errors.Is(err, memorykit.ErrLeaseLost) {
			t.Fatalf("a stranger completed %s: %v", id, err)
		}
		if _, err := s.CompleteJob(ctx, storekit.JobCompletion{JobID: id, WorkerID: leased[id], LeaseToken: cur.LeaseToken}); err != nil {
			t.Fatal(err)
		}
	}
	counts, err = s1.CountJobs(ctx)
	if err != nil || counts != (storekit.JobCounts{Done: n}) {
		t.Fatalf("counts %+v %v", counts, err)
	}
	j, err := s1.GetJob(ctx, scope, ids[0])
	if err != nil || j.Payload != "" || j.LeasedBy != "" || !j.LeaseExpiresAt.IsZero() {
		t.Fatalf("done job is not a tombstone: %+v %v", j, err)
	}
}

func TestPostgresJobCompletionStoresCandidatesOnce(t *testing.T) {
	b := setup(t)
	jobID := storekit.ExtractionJobID(b.scope, "run-1/turn-1")
	if _, err := b.s.EnqueueJob(b.ctx, storekit.NewJob{ID: jobID, Scope: b.scope, Payload: "the user said X", MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	lease := func(worker string) storekit.Job {
		t.Helper()
		jobs, err := b.s.LeaseJobs(b.ctx, storekit.JobLease{WorkerID: worker, TTL: time.Minute, Max: 5})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("lease: %v %v", jobs, err)
		}
		return jobs[0]
	}
	cand := func(key string) memorykit.NewRecord {
		return memorykit.NewRecord{
			ID:    storekit.CandidateID(b.scope, jobID, memorykit.KindFact, key),
			Scope: b.scope, Kind: memorykit.KindFact, Key: key, Content: "proposed " + key,
			Status: memorykit.StatusCandidate, Actor: memorykit.Actor{Kind: memorykit.ActorWorker, ID: "x1"},
		}
	}
	// Attempt 1 stores one candidate, then its lease expires and is reaped
	// before it can finish (simulated by creating the candidate directly).
	first := lease("w1")
	if _, err := b.s.Create(b.ctx, cand("alpha")); err != nil {
		t.Fatal(err)
	}
	b.clk.Add(2 * time.Minute)
	if _, err := b.s.CompleteJob(b.ctx, storekit.JobCompletion{JobID: jobID, WorkerID: "w1", LeaseToken: first.LeaseToken, Candidates: []memorykit.NewRecord{cand("alpha")}}); !errors.Is(err, memorykit.ErrLeaseLost) {
		t.Fatalf("completion after expiry: %v", err)
	}
	if n, err := b.s.ReapJobLeases(b.ctx); err != nil || n != 1 {
		t.Fatalf("reap %d %v", n, err)
	}
	j := lease("w2")
	if j.Attempt != 2 || j.LastError != storekit.ReasonLeaseExpired {
		t.Fatalf("second lease: %+v", j)
	}
	// A bad candidate fails the whole completion and changes nothing.
	before, _ := b.s.Dump(b.ctx)
	bad := cand("gamma")
	bad.Content = "FORBIDDEN"
	if _, err := b.s.CompleteJob(b.ctx, storekit.JobCompletion{JobID: jobID, WorkerID: "w2", LeaseToken: j.LeaseToken,
		Candidates: []memorykit.NewRecord{cand("beta"), bad}}); !errors.Is(err, memorykit.ErrInvalidInput) {
		t.Fatalf("bad candidate: %v", err)
	}
	wrongScope := cand("delta")
	wrongScope.Scope.SubjectID = "project-2"
	if _, err := b.s.CompleteJob(b.ctx, storekit.JobCompletion{JobID: jobID, WorkerID: "w2", LeaseToken: j.LeaseToken,
		Candidates: []memorykit.NewRecord{wrongScope}}); !errors.Is(err, memorykit.ErrInvalidInput) {
		t.Fatalf("foreign-scope candidate: %v", err)
	}
	if after, _ := b.s.Dump(b.ctx); after != before {
		t.Fatal("a refused completion changed the database")
	}
	created, err := b.s.CompleteJob(b.ctx, storekit.JobCompletion{JobID: jobID, WorkerID: "w2", LeaseToken: j.LeaseToken,
		Candidates: []memorykit.NewRecord{cand("alpha"), cand("beta")}})
	if err != nil || created != 1 {
		t.Fatalf("complete: %d %v", created, err)
	}
	j, err = b.s.GetJob(b.ctx, b.scope, jobID)
	if err != nil || j.State != storekit.JobDone || j.Candidates != 1 || j.Payload != "" {
		t.Fatalf("job %+v %v", j, err)
	}
	cands, err := b.s.List(b.ctx, storekit.ListFilter{Scope: b.scope, Statuses: []memorykit.Status{memorykit.StatusCandidate}, Limit: 10})
	if err != nil || len(cands) != 2 {
		t.Fatalf("candidates %d %v", len(cands), err)
	}
	if _, err := b.s.EnqueueJob(b.ctx, storekit.NewJob{ID: jobID, Scope: b.scope, Payload: "again", MaxAttempts: 2, MaxReaps: 2}); !errors.Is(err, memorykit.ErrAlreadyExists) {
		t.Fatalf("re-enqueue: %v", err)
	}
}

func TestPostgresContextIsHonoured(t *testing.T) {
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.s.Create(ctx, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindNote, Key: "k", Content: "c",
		Status: memorykit.StatusActive, Actor: author})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, memorykit.ErrUnavailable) {
		t.Fatalf("create with a done context: %v", err)
	}
	// A deadline that passes while the statement runs.
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = b.s.pool.Exec(ctx, "SELECT pg_sleep(5)")
	err = mapErr("test", withCtx(ctx, err))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
}

func TestPostgresRecallDegradesWhenOnlyVectorFails(t *testing.T) {
	b := setup(t)
	b.s.cache = nil // the SQL path: the cache's vector channel has no statement to fail
	r := b.create(t, memorykit.KindFact, "deploy region", "the api runs in eu-west-1", memorykit.StatusActive)
	if err := b.s.PutEmbedding(b.ctx, storekit.EmbeddingPut{Scope: b.scope, RecordID: r.ID, Profile: "p",
		ContentHash: r.ContentHash, Vector: []float32{1, 0}, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	// Make the vector part of every statement fail on the server (division
	// by zero) whenever the vector channel is on.
	for k := range b.s.recallSQL {
		orig := b.s.recallSQL[k]
		b.s.recallSQL[k] = strings.Replace(orig, "LIMIT $13", "LIMIT $13 / (CASE WHEN $11 > 0 THEN 0 ELSE 1 END)", 1)
		if b.s.recallSQL[k] == orig {
			t.Fatal("the vector limit was not found in the statement")
		}
	}
	q := storekit.RecallQuery{Scope: b.scope, ExactKeys: []string{"deploy region"}, Terms: []string{"api"},
		Vector: []float32{1, 0}, Profile: "p", ExactLimit: 3, FullTextLimit: 3, VectorLimit: 3}
	res, err := b.s.Recall(b.ctx, q)
	if err != nil {
		t.Fatalf("recall failed as a whole: %v", err)
	}
	if res.VectorErr == nil || len(res.Vector) != 0 {
		t.Fatalf("VectorErr %v, vector hits %v", res.VectorErr, res.Vector)
	}
	wantKind(t, res.VectorErr, memorykit.ErrInvalidInput)
	if len(res.Exact) != 1 || len(res.FullText) != 1 || res.Records[r.ID].ID != r.ID {
		t.Fatalf("exact %v full-text %v", res.Exact, res.FullText)
	}
	// Without a vector nothing fails and nothing is reported.
	q.Vector = nil
	if res, err = b.s.Recall(b.ctx, q); err != nil || res.VectorErr != nil {
		t.Fatalf("recall without a vector: %v %v", err, res.VectorErr)
	}
}
