package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// warmItems is a batch of n active notes in each of scopes, with vectors.
func warmItems(scopes []memorykit.Scope, n int) []storekit.BatchItem {
	var its []storekit.BatchItem
	for _, sc := range scopes {
		for i := 0; i < n; i++ {
			its = append(its, storekit.BatchItem{
				Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindNote, Key: fmt.Sprintf("turn %d", i),
					Content: fmt.Sprintf("we moved the standup to room %d after the deploy review", i), Status: memorykit.StatusActive, Actor: author},
				Embedding: &storekit.BatchEmbedding{Profile: "p/v1", Vector: []float32{1, float32(i), 0}},
			})
		}
	}
	return its
}

func warmQuery(sc memorykit.Scope) storekit.RecallQuery {
	return storekit.RecallQuery{Scope: sc, ExactKeys: []string{"turn 1"}, Terms: storekit.SearchTerms("which room is the standup in", 16),
		Vector: []float32{1, 1, 0}, Profile: "p/v1", ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5}
}

// TestRecallCacheWarmAfterWrite: Scopes a caching Store writes through
// CreateBatch are loaded in the background after the commit, so the
// Store's first recall of each is answered from the cache (no SQL-path
// recall), with the SQL path's results.
func TestRecallCacheWarmAfterWrite(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	s := openCached(t, schema, clk, 64<<20)
	ref := openSQL(t, schema, clk)
	scopes := make([]memorykit.Scope, 3)
	for i := range scopes {
		scopes[i], _ = memorykit.ProjectScope("tenant-w", fmt.Sprintf("w%d", i))
	}
	if _, err := s.CreateBatch(ctx, warmItems(scopes, 5)); err != nil {
		t.Fatal(err)
	}
	s.cache.settle()
	if loads := s.cache.loads.Load(); loads != int64(len(scopes)) {
		t.Fatalf("%d background loads after the batch, want %d (one per Scope written)", loads, len(scopes))
	}
	for _, sc := range scopes {
		got, err := s.Recall(ctx, warmQuery(sc))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Recall(ctx, warmQuery(sc))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("scope %s: warmed recall differs (-sql +cached):\n%s", sc, d)
		}
		if len(got.Exact) != 1 || len(got.FullText) == 0 || len(got.Vector) == 0 {
			t.Fatalf("scope %s: %d exact, %d full-text, %d vector hits", sc, len(got.Exact), len(got.FullText), len(got.Vector))
		}
	}
	if n := s.cache.sqlRecalls.Load(); n != 0 {
		t.Fatalf("%d recalls after the batch took the SQL path, want 0", n)
	}
	if loads := s.cache.loads.Load(); loads != int64(len(scopes)) {
		t.Fatalf("%d loads after the recalls, want %d", loads, len(scopes))
	}
}

// TestRecallCacheWrittenScopeOneRoundTrip: after this Store writes to a
// cached Scope (create, correct, forget, embedding put), its next recall
// sends one round trip (the version with the rows changed since) instead
// of two, and sees the write; a write by another Store still costs two
// (the version, then the rows). The Scope's first write loads it in the
// background, so even its first recall is one round trip.
func TestRecallCacheWrittenScopeOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	schema := uniqueSchema(t)
	clk := newClock()
	other := openCached(t, schema, clk, 64<<20)
	s, tracer := tracedStore(t, schema, clk, 1, false)
	scope, _ := memorykit.ProjectScope("tenant-w", "trips")
	q := storekit.RecallQuery{Scope: scope, ExactKeys: []string{"api"}, Terms: storekit.SearchTerms("which eu region", 16),
		ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5}
	recall := func(what string, wantTrips, wantHits int) {
		t.Helper()
		s.cache.settle()
		before := tracer.n.Load()
		res, err := s.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := tracer.n.Load() - before; got != int64(wantTrips) {
			t.Fatalf("%s: recall sent %d round trips, want %d", what, got, wantTrips)
		}
		if len(res.FullText) != wantHits {
			t.Fatalf("%s: %d full-text hits, want %d", what, len(res.FullText), wantHits)
		}
	}
	api, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: "api",
		Content: "the api runs in the eu region", Status: memorykit.StatusActive, Actor: author})
	if err != nil {
		t.Fatal(err)
	}
	recall("first recall after the first write", 1, 1)
	recall("nothing changed", 1, 1)
	wk, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: "worker",
		Content: "the worker runs in the eu region too", Status: memorykit.StatusActive, Actor: author})
	if err != nil {
		t.Fatal(err)
	}
	recall("after a create", 1, 2)
	if _, err := s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: scope, ID: wk.ID, Actor: reviewer,
		Reason: "moved", ExpectVersion: wk.Version}, Content: "the worker moved to the eu west region"}); err != nil {
		t.Fatal(err)
	}
	recall("after a correction", 1, 2)
	if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: api.ID, Profile: "p/v1",
		ContentHash: api.ContentHash, Vector: []float32{1, 0, 0}, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	recall("after an embedding put", 1, 2)
	if _, err := s.Forget(ctx, storekit.Transition{Scope: scope, ID: api.ID, Actor: reviewer, Reason: "gone"}); err != nil {
		t.Fatal(err)
	}
	recall("after a forget", 1, 1)
	if _, err := other.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: "db",
		Content: "the db stays in the eu region", Status: memorykit.StatusActive, Actor: author}); err != nil {
		t.Fatal(err)
	}
	recall("after another Store's create", 2, 2)
	if loads, deltas := s.cache.loads.Load(), s.cache.deltas.Load(); loads != 1 || deltas != 5 {
		t.Fatalf("%d loads and %d incremental refreshes, want 1 and 5", loads, deltas)
	}
	if n := s.cache.sqlRecalls.Load(); n != 0 {
		t.Fatalf("%d recalls took the SQL path, want 0", n)
	}
}

// TestRecallCacheWarmsWithinBudget: a batch written to more Scopes than
// the budget holds loads them only into the room the cache has free: the
// Scope being recalled stays cached, the accounting stays within the
// budget, and the Scopes warmed enter behind it in LRU order. Further
// writes to those Scopes load none of them again.
func TestRecallCacheWarmsWithinBudget(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	scopes := make([]memorykit.Scope, 9)
	for i := range scopes {
		scopes[i], _ = memorykit.ProjectScope("tenant-w", fmt.Sprintf("budget%d", i))
	}
	// The size of one Scope, measured in a Store of its own.
	probe := openCached(t, schema, clk, 64<<20)
	if _, err := probe.CreateBatch(ctx, warmItems(scopes[:1], 10)); err != nil {
		t.Fatal(err)
	}
	probe.cache.settle()
	one, n := probe.cache.usage()
	if n != 1 || one <= 0 {
		t.Fatalf("the probe Store holds %d Scopes, %d bytes; want one", n, one)
	}
	s := openCached(t, schema, clk, 3*one+one/2)
	if _, err := s.Recall(ctx, warmQuery(scopes[0])); err != nil { // cold: SQL, then a load
		t.Fatal(err)
	}
	s.cache.settle()
	if _, err := s.CreateBatch(ctx, warmItems(scopes[1:], 10)); err != nil {
		t.Fatal(err)
	}
	s.cache.settle()
	checkAccounting(t, s.cache)
	if cs, _ := s.cache.entry(scopes[0]); cs == nil {
		t.Fatal("warming the written Scopes evicted the Scope being recalled")
	}
	if _, n := s.cache.usage(); n < 2 {
		t.Fatalf("%d Scopes cached after writing to %d; want the recalled one and at least one written", n, len(scopes)-1)
	}
	s.cache.mu.Lock()
	var front memorykit.Scope
	s.cache.scopes.Each(func(sc memorykit.Scope, _ *cachedScope, _ int64) bool { front = sc; return false })
	s.cache.mu.Unlock()
	if front != scopes[0] {
		t.Fatalf("the most recently used Scope is %s, want the recalled %s", front, scopes[0])
	}
	// More writes to the same Scopes load none again: the cached ones are
	// only marked written, the ones that found no room are remembered.
	loads := s.cache.loads.Load()
	more := warmItems(scopes[1:], 10)
	for i := range more {
		more[i].Record.Key = fmt.Sprintf("later %d", i)
	}
	if _, err := s.CreateBatch(ctx, more); err != nil {
		t.Fatal(err)
	}
	s.cache.settle()
	if got := s.cache.loads.Load(); got != loads {
		t.Fatalf("the second batch to the same Scopes loaded %d of them again", got-loads)
	}
	checkAccounting(t, s.cache)
	// A recall of a Scope that did not fit loads it the usual way,
	// evicting a warmed Scope that was never recalled first.
	var cold memorykit.Scope
	for _, sc := range scopes[1:] {
		if cs, _ := s.cache.entry(sc); cs == nil {
			cold = sc
			break
		}
	}
	if _, err := s.Recall(ctx, warmQuery(cold)); err != nil {
		t.Fatal(err)
	}
	s.cache.settle()
	checkAccounting(t, s.cache)
	for _, sc := range []memorykit.Scope{scopes[0], cold} {
		if cs, _ := s.cache.entry(sc); cs == nil {
			t.Fatalf("scope %s is not cached after its recall", sc)
		}
	}
}

// TestRecallCacheCloseWaitsForWriteLoads: a write queues its Scope's load
// before it returns, and Close cancels a running write-triggered load and
// returns only after it ended.
func TestRecallCacheCloseWaitsForWriteLoads(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openCached(t, uniqueSchema(t), clk, 64<<20)
	started := make(chan struct{})
	var ended atomic.Bool
	s.cache.beforeLoad = func(ctx context.Context, _ memorykit.Scope) {
		close(started)
		<-ctx.Done()
		ended.Store(true)
	}
	scope, _ := memorykit.ProjectScope("tenant-w", "closing")
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: "k",
		Content: "closing time", Status: memorykit.StatusActive, Actor: author}); err != nil {
		t.Fatal(err)
	}
	s.cache.bgMu.Lock()
	queued := s.cache.queued[scope] != nil
	s.cache.bgMu.Unlock()
	if !queued {
		t.Fatal("the write did not queue its Scope for a load")
	}
	<-started
	s.Close()
	if !ended.Load() {
		t.Fatal("Close returned before the write-triggered load ended")
	}
	s.cache.bgMu.Lock()
	defer s.cache.bgMu.Unlock()
	if s.cache.bgRunning != 0 || len(s.cache.queued) != 0 {
		t.Fatalf("after Close %d loaders run and %d loads are queued", s.cache.bgRunning, len(s.cache.queued))
	}
}

// TestRecallCacheJoinsRunningLoad: a recall of a Scope whose background
// load is running waits for that load instead of ranking in SQL beside
// it, and is answered from the snapshot it brings; it stops waiting and
// takes the SQL path after joinLoadWait on the injected clock, and returns
// when its context ends.
func TestRecallCacheJoinsRunningLoad(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	s := openCached(t, schema, clk, 64<<20)
	ref := openSQL(t, schema, clk)
	scopes := make([]memorykit.Scope, 3)
	release := make(map[memorykit.Scope]chan struct{})
	for i := range scopes {
		scopes[i], _ = memorykit.ProjectScope("tenant-w", fmt.Sprintf("join%d", i))
		release[scopes[i]] = make(chan struct{})
	}
	started := make(chan memorykit.Scope, len(scopes))
	joined := make(chan memorykit.Scope, len(scopes))
	s.cache.beforeLoad = func(ctx context.Context, sc memorykit.Scope) {
		started <- sc
		select {
		case <-release[sc]:
		case <-ctx.Done():
		}
	}
	s.cache.joining = func(sc memorykit.Scope) { joined <- sc }
	type result struct {
		res storekit.RecallResult
		err error
	}
	recallAsync := func(ctx context.Context, sc memorykit.Scope) <-chan result {
		out := make(chan result, 1)
		go func() {
			res, err := s.Recall(ctx, warmQuery(sc))
			out <- result{res, err}
		}()
		return out
	}
	// waitJoined waits until the recall waits for the load; a recall that
	// returns first did not join it.
	waitJoined := func(out <-chan result) {
		t.Helper()
		select {
		case <-joined:
		case r := <-out:
			t.Fatalf("the recall returned (err %v) without waiting for the running load", r.err)
		}
	}
	write := func(sc memorykit.Scope) {
		t.Helper()
		if _, err := s.CreateBatch(ctx, warmItems([]memorykit.Scope{sc}, 4)); err != nil {
			t.Fatal(err)
		}
		s.cache.bgMu.Lock()
		queued := s.cache.queued[sc] != nil
		s.cache.bgMu.Unlock()
		if !queued {
			t.Fatal("the write did not queue its Scope for a load")
		}
		if got := <-started; got != sc {
			t.Fatalf("loading %s, want %s", got, sc)
		}
	}

	// Joined: answered from the load's snapshot, as the SQL path would.
	write(scopes[0])
	out := recallAsync(ctx, scopes[0])
	waitJoined(out)
	close(release[scopes[0]])
	r := <-out
	if r.err != nil {
		t.Fatal(r.err)
	}
	want, err := ref.Recall(ctx, warmQuery(scopes[0]))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, r.res, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("joined recall differs (-sql +cached):\n%s", d)
	}
	if n := s.cache.sqlRecalls.Load(); n != 0 {
		t.Fatalf("%d recalls took the SQL path while the load ran, want 0", n)
	}

	// The load takes too long: after joinLoadWait the SQL path answers.
	write(scopes[1])
	out = recallAsync(ctx, scopes[1])
	waitJoined(out)
	clk.Add(joinLoadWait)
	if r := <-out; r.err != nil || len(r.res.Exact) != 1 {
		t.Fatalf("recall after giving up on the load: %d exact hits, err %v", len(r.res.Exact), r.err)
	}
	if n := s.cache.sqlRecalls.Load(); n != 1 {
		t.Fatalf("%d recalls took the SQL path, want 1", n)
	}
	close(release[scopes[1]])

	// The recall's context ends while it waits.
	write(scopes[2])
	cctx, cancel := context.WithCancel(ctx)
	out = recallAsync(cctx, scopes[2])
	waitJoined(out)
	cancel()
	if r := <-out; !errors.Is(r.err, memorykit.ErrUnavailable) {
		t.Fatalf("recall whose context ended while it waited: %v, want ErrUnavailable", r.err)
	}
	close(release[scopes[2]])
	s.cache.settle()
}
