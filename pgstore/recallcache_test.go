package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sync/singleflight"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// openCached opens a Store with its own pool and a recall cache of budget
// bytes on schema, closed when the test ends.
func openCached(t testing.TB, schema string, clk clock.Clock, budget int64) *Store {
	t.Helper()
	s, err := Open(context.Background(), testDSN(t), Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema,
		MaxConns: 4, RecallCacheBytes: budget})
	if err != nil {
		unusable(t, "open pgstore", err)
	}
	t.Cleanup(s.Close)
	return s
}

// settle waits for the cache's background loads to end. No recall may
// run meanwhile.
func (c *recallCache) settle() { c.bg.Wait() }

// openSQL opens a Store with its own pool and the recall cache off (the
// reference SQL path) on schema, closed when the test ends.
func openSQL(t testing.TB, schema string, clk clock.Clock) *Store {
	t.Helper()
	s, err := Open(context.Background(), testDSN(t), Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: schema,
		MaxConns: 4, SQLRecall: true})
	if err != nil {
		unusable(t, "open pgstore", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestRecallCacheSeesEraseFromAnotherStore: two Stores on separate pools
// (two Hosts) share a schema; the first caches a Scope, the second forgets
// and then erases a record in it, and the first's next recalls no longer
// return it while still returning the record that stays.
func TestRecallCacheSeesEraseFromAnotherStore(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	a := openCached(t, schema, clk, 64<<20)
	b := openCached(t, schema, clk, 64<<20)
	scope, _ := memorykit.ProjectScope("tenant-c", "erase")
	rec, err := b.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: "deploy target",
		Content: "the canary secret deploy target is zebra", Status: memorykit.StatusActive, Actor: author})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: rec.ID, Profile: "p/v1",
		ContentHash: rec.ContentHash, Vector: []float32{1, 0, 0}, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	keep, err := b.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: "other",
		Content: "the zebra crossing stays", Status: memorykit.StatusActive, Actor: author})
	if err != nil {
		t.Fatal(err)
	}
	q := storekit.RecallQuery{Scope: scope, ExactKeys: []string{"deploy target", "other"}, Terms: storekit.SearchTerms("zebra canary", 8),
		Vector: []float32{1, 0, 0}, Profile: "p/v1", ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5}
	res, err := a.Recall(ctx, q) // in SQL, while the Scope loads
	if err != nil {
		t.Fatal(err)
	}
	a.cache.settle()
	if res, err = a.Recall(ctx, q); err != nil {
		t.Fatal(err)
	}
	if len(res.Exact) != 2 || len(res.FullText) == 0 || len(res.Vector) != 1 {
		t.Fatalf("before erase: %d exact, %d full-text, %d vector hits; want 1 each", len(res.Exact), len(res.FullText), len(res.Vector))
	}
	if used, n := a.cache.usage(); n != 1 || used <= 0 {
		t.Fatalf("cache holds %d scopes, %d bytes; want the scope cached", n, used)
	}
	only := func(what string) {
		t.Helper()
		res, err := a.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Exact) != 1 || res.Exact[0].ID != keep.ID || len(res.Vector) != 0 || len(res.Records) != 1 {
			t.Fatalf("after %s the other store still recalls the record: %+v", what, res)
		}
		if strings.Contains(fmt.Sprint(res), "canary") {
			t.Fatalf("after %s the content is still served", what)
		}
	}
	tr := storekit.Transition{Scope: scope, ID: rec.ID, Actor: reviewer, Reason: "erase"}
	if _, err := b.Forget(ctx, tr); err != nil {
		t.Fatal(err)
	}
	only("forget")
	if _, err := b.Erase(ctx, tr); err != nil {
		t.Fatal(err)
	}
	only("erase")
	// The forget and the erase reached a's warm copy as deltas, not as
	// reloads.
	if loads, deltas := a.cache.loads.Load(), a.cache.deltas.Load(); loads != 1 || deltas != 2 {
		t.Fatalf("the cache loaded the scope %d times and refreshed it %d times; want 1 load, 2 refreshes", loads, deltas)
	}
}

// TestRecallCacheMatchesSQL is the randomized differential test of the
// recall cache: two caching Stores on separate pools (two Hosts) write to
// a few Scopes in turn (creates, batches, corrections, forgets, erases,
// activations and supersessions, rejections, embeddings put and deleted,
// purges, and rows deleted outright), and after most steps a recall
// through one of them must equal the reference SQL path (a third Store
// with no cache) at that point: same hits, ranks, scores and records.
// Recalls are skipped at random, so a cached Scope is often refreshed over
// several writes at once; the large-budget Store must have taken most of
// its refreshes incrementally.
func TestRecallCacheMatchesSQL(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			testRecallCacheMatchesSQL(t, seed, 2000)
		})
	}
}

func testRecallCacheMatchesSQL(t *testing.T, seed uint64, steps int) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	ref := openSQL(t, schema, clk)
	// A small budget on one of them, so evictions and reloads happen too.
	hosts := []*Store{openCached(t, schema, clk, 64<<20), openCached(t, schema, clk, 6<<10)}
	scopes := make([]memorykit.Scope, 4)
	for i := range scopes {
		scopes[i], _ = memorykit.ProjectScope("tenant-x", fmt.Sprintf("s%d", i))
	}
	r := rand.New(rand.NewPCG(seed, 99))
	const profile = "diff/v1"
	ids := make([][]string, len(scopes))
	conn := adminConn(t)
	// hardDelete removes a record and every row naming it, as no Store
	// operation does today: the cache must notice rows that vanish.
	hardDelete := func(id string) {
		for _, stmt := range []string{
			`DELETE FROM {schema}.embedding_queue WHERE record_id = $1`,
			`DELETE FROM {schema}.embedding_leases WHERE record_id = $1`,
			`DELETE FROM {schema}.embeddings WHERE record_id = $1`,
			`DELETE FROM {schema}.revisions WHERE record_id = $1`,
			`DELETE FROM {schema}.records WHERE id = $1`,
		} {
			if _, err := conn.Exec(ctx, renderSQL(stmt, schema, ""), id); err != nil {
				t.Fatal(err)
			}
		}
	}
	embed := func(s *Store, scope memorykit.Scope, rec memorykit.Record) {
		vec := make([]float32, 4)
		for i := range vec {
			vec[i] = float32(r.IntN(7) - 3)
		}
		vec[0] = 1
		if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: rec.ID, Profile: profile,
			ContentHash: rec.ContentHash, Vector: vec, WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	compared := 0
	for step := 0; step < steps; step++ {
		clk.Add(time.Duration(r.IntN(3)) * time.Second)
		si := r.IntN(len(scopes))
		scope := scopes[si]
		w := hosts[r.IntN(len(hosts))]
		tr := func() storekit.Transition {
			return storekit.Transition{Scope: scope, ID: ids[si][r.IntN(len(ids[si]))], Actor: reviewer, Reason: "diff"}
		}
		switch op := r.IntN(20); {
		case op < 5 || len(ids[si]) == 0:
			in := memorykit.NewRecord{ID: fmt.Sprintf("rec-%d-%04d", seed, step), Scope: scope, Kind: memorykit.KindNote,
				Key: fmt.Sprintf("key %d", r.IntN(12)), Content: diffText(r, 3+r.IntN(8)), Status: memorykit.StatusActive, Actor: author}
			if r.IntN(4) == 0 {
				in.Status = memorykit.StatusCandidate
			}
			switch r.IntN(8) {
			case 0:
				in.EffectiveUntil = clk.Now().Add(time.Duration(1+r.IntN(60)) * time.Second)
			case 1:
				in.EffectiveFrom = clk.Now().Add(time.Duration(1+r.IntN(30)) * time.Second)
			}
			if r.IntN(3) == 0 {
				next := in
				next.ID = in.ID + "-b"
				next.Content = diffText(r, 2+r.IntN(6))
				out, err := w.CreateBatch(ctx, []storekit.BatchItem{{Record: in}, {Record: next}})
				if err != nil {
					t.Fatalf("step %d: batch: %v", step, err)
				}
				for _, rec := range out {
					ids[si] = append(ids[si], rec.ID)
				}
			} else {
				rec, err := w.Create(ctx, in)
				if err != nil {
					t.Fatalf("step %d: create: %v", step, err)
				}
				ids[si] = append(ids[si], rec.ID)
				if rec.Status == memorykit.StatusActive && r.IntN(3) > 0 {
					embed(w, scope, rec)
				}
			}
		case op < 8:
			tx := tr()
			rec, err := w.Get(ctx, scope, tx.ID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != memorykit.StatusActive && rec.Status != memorykit.StatusCandidate {
				continue
			}
			rec, err = w.Correct(ctx, storekit.Correction{Transition: tx, Content: diffText(r, 4)})
			if err != nil {
				t.Fatalf("step %d: correct: %v", step, err)
			}
			if rec.Status == memorykit.StatusActive && r.IntN(2) == 0 {
				embed(w, scope, rec)
			}
		case op < 10:
			tx := tr()
			rec, err := w.Get(ctx, scope, tx.ID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status == memorykit.StatusActive {
				embed(w, scope, rec)
			}
		case op < 12:
			tx := tr()
			rec, _ := w.Get(ctx, scope, tx.ID)
			var err error
			switch rec.Status {
			case memorykit.StatusActive:
				_, err = w.Forget(ctx, tx)
			case memorykit.StatusCandidate:
				if r.IntN(2) == 0 {
					_, err = w.Activate(ctx, tx)
				} else {
					_, err = w.Reject(ctx, tx)
				}
			}
			if err != nil {
				t.Fatalf("step %d: transition: %v", step, err)
			}
		case op < 13:
			tx := tr()
			if rec, _ := w.Get(ctx, scope, tx.ID); rec.Status != memorykit.StatusActive && rec.Status != memorykit.StatusCandidate && rec.Status != memorykit.StatusErased {
				if _, err := w.Erase(ctx, tx); err != nil {
					t.Fatalf("step %d: erase: %v", step, err)
				}
			}
		case op < 14 && r.IntN(4) == 0:
			if _, err := w.DeleteEmbeddings(ctx, profile, scope); err != nil {
				t.Fatalf("step %d: delete embeddings: %v", step, err)
			}
		case op < 15 && r.IntN(30) == 0:
			if _, err := w.Purge(ctx, scope, reviewer, "diff"); err != nil {
				t.Fatalf("step %d: purge: %v", step, err)
			}
		case op < 16 && r.IntN(3) == 0:
			k := r.IntN(len(ids[si]))
			hardDelete(ids[si][k])
			ids[si] = append(ids[si][:k], ids[si][k+1:]...)
			if len(ids[si]) == 0 {
				continue
			}
		}
		if r.IntN(3) == 0 {
			// No recall this step: the next one refreshes over more
			// writes.
			continue
		}
		// A recall after every step, through either host, compared with
		// the reference.
		text := diffText(r, 1+r.IntN(8))
		q := storekit.RecallQuery{
			Scope: scopes[r.IntN(len(scopes))], ExactKeys: []string{fmt.Sprintf("key %d", r.IntN(12)), fmt.Sprintf("key %d", r.IntN(12))},
			Terms: storekit.SearchTerms(text, 16), Vector: []float32{1, float32(r.IntN(3)), -1, 0.5}, Profile: profile,
			ExactLimit: 1 + r.IntN(4), FullTextLimit: 1 + r.IntN(6), VectorLimit: 1 + r.IntN(5),
		}
		if step%11 == 0 {
			q.Terms = append(q.Terms, strings.Fields(diffText(r, 30))...)
		}
		got, err := hosts[r.IntN(len(hosts))].Recall(ctx, q)
		if err != nil {
			t.Fatalf("step %d: cached recall: %v", step, err)
		}
		want, err := ref.Recall(ctx, q)
		if err != nil {
			t.Fatalf("step %d: reference recall: %v", step, err)
		}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("step %d: cached recall differs (-sql +cached):\n%s", step, d)
		}
		if len(want.FullText)+len(want.Vector) > 0 {
			compared++
		}
		for _, h := range hosts {
			checkAccounting(t, h.cache)
		}
	}
	if compared < steps/4 {
		t.Fatalf("only %d of %d recalls found anything; the comparison proves little", compared, steps)
	}
	for _, h := range hosts {
		if used, _ := h.cache.usage(); used > h.cache.budget {
			t.Fatalf("cache uses %d bytes over its budget of %d", used, h.cache.budget)
		}
	}
	if loads, deltas := hosts[0].cache.loads.Load(), hosts[0].cache.deltas.Load(); deltas < int64(steps)/8 || loads > int64(len(scopes)) {
		t.Fatalf("the large cache loaded %d Scopes whole and refreshed %d times incrementally in %d steps; want most refreshes incremental", loads, deltas, steps)
	}
	t.Logf("large cache: %d loads, %d incremental refreshes; small cache: %d loads, %d incremental refreshes",
		hosts[0].cache.loads.Load(), hosts[0].cache.deltas.Load(), hosts[1].cache.loads.Load(), hosts[1].cache.deltas.Load())
}

// checkAccounting fails unless c's accounted bytes are within its budget
// and are the sum of its entries' sizes, each what its snapshot now holds
// by Snapshot.Bytes (so refreshes keep the accounting current).
func checkAccounting(t *testing.T, c *recallCache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := int64(0)
	c.scopes.Each(func(_ memorykit.Scope, cs *cachedScope, bytes int64) bool {
		if b := cs.snap.Bytes(); b != cs.bytes || b != bytes {
			t.Fatalf("a cached Scope is accounted %d bytes (%d in the ledger), its snapshot holds %d", cs.bytes, bytes, b)
		}
		sum += cs.bytes
		return true
	})
	if used := c.scopes.Used(); used > c.budget || used != sum {
		t.Fatalf("cache accounts %d bytes for entries of %d, budget %d", used, sum, c.budget)
	}
}

// TestRecallCacheStaysWithinBudget puts snapshots of random sizes into a
// cache in random order and checks after each put that the accounted bytes
// never exceed the budget and equal the sum of the cached entries, that a
// Scope larger than the budget is not cached, and that eviction takes the
// least recently used Scope first.
func TestRecallCacheStaysWithinBudget(t *testing.T) {
	const budget = 10000
	c := newRecallCache(clock.NewMock(), budget)
	r := rand.New(rand.NewPCG(5, 6))
	scopes := make([]memorykit.Scope, 12)
	for i := range scopes {
		scopes[i], _ = memorykit.ProjectScope("tenant-b", fmt.Sprintf("b%d", i))
	}
	versions := make([]int64, len(scopes))
	for step := 0; step < 5000; step++ {
		i := r.IntN(len(scopes))
		if r.IntN(3) == 0 {
			c.get(scopes[i], versions[i])
			continue
		}
		versions[i]++
		size := int64(1 + r.IntN(budget/3))
		if r.IntN(50) == 0 {
			size = budget + 1
		}
		c.put(&cachedScope{scope: scopes[i], version: versions[i], bytes: size})
		used, _ := c.usage()
		sum := int64(0)
		c.scopes.Each(func(_ memorykit.Scope, cs *cachedScope, bytes int64) bool {
			if bytes != cs.bytes {
				t.Fatalf("step %d: a Scope of %d bytes is accounted %d", step, cs.bytes, bytes)
			}
			sum += bytes
			return true
		})
		if used > budget || used != sum {
			t.Fatalf("step %d: used %d, entries sum to %d, budget %d", step, used, sum, budget)
		}
		if size > budget {
			if _, ok := c.get(scopes[i], versions[i]); ok || !c.tooLarge(scopes[i]) {
				t.Fatalf("step %d: a Scope above the budget was cached", step)
			}
		}
	}
	// A Scope found too big is not loaded again for tooBigRetry, however
	// often it changes, then it is tried again.
	clk := clock.NewMock()
	c = newRecallCache(clk, 400)
	c.put(&cachedScope{scope: scopes[0], version: 1, bytes: 401})
	clk.Add(tooBigRetry - time.Second)
	if !c.tooLarge(scopes[0]) {
		t.Fatal("a too-big Scope is tried again before tooBigRetry")
	}
	clk.Add(time.Second)
	if c.tooLarge(scopes[0]) {
		t.Fatal("a too-big Scope is never tried again")
	}
	// LRU: fill with four Scopes, touch the first, add a fifth that needs
	// one eviction: the second goes.
	c = newRecallCache(clock.NewMock(), 400)
	for i := 0; i < 4; i++ {
		c.put(&cachedScope{scope: scopes[i], version: 1, bytes: 100})
	}
	c.get(scopes[0], 1)
	c.put(&cachedScope{scope: scopes[4], version: 1, bytes: 100})
	for i, want := range []bool{true, false, true, true, true} {
		if _, ok := c.get(scopes[i], 1); ok != want {
			t.Fatalf("scope %d cached=%t after eviction, want %t", i, ok, want)
		}
	}
}

// TestRecallCacheConcurrentRecalls runs recalls on several goroutines
// through one caching Store while another Store writes to the same Scopes
// (so loads overlap, are shared and go stale), then checks that once the
// writes stop every Scope's recall equals the SQL path. Run under -race.
func TestRecallCacheConcurrentRecalls(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	ref := openSQL(t, schema, clk)
	c := openCached(t, schema, clk, 64<<20)
	scopes := make([]memorykit.Scope, 3)
	for i := range scopes {
		scopes[i], _ = memorykit.ProjectScope("tenant-y", fmt.Sprintf("c%d", i))
	}
	query := func(i int) storekit.RecallQuery {
		return storekit.RecallQuery{Scope: scopes[i%len(scopes)], ExactKeys: []string{"key 1"},
			Terms: storekit.SearchTerms("deploy pipeline database", 8), ExactLimit: 3, FullTextLimit: 5, VectorLimit: 3}
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			var err error
			for i := g; err == nil; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				_, err = c.Recall(ctx, query(i))
			}
			errs <- err
		}()
	}
	r := rand.New(rand.NewPCG(8, 9))
	for i := 0; i < 120; i++ {
		if _, err := ref.Create(ctx, memorykit.NewRecord{Scope: scopes[i%len(scopes)], Kind: memorykit.KindNote,
			Key: fmt.Sprintf("key %d", r.IntN(4)), Content: diffText(r, 6), Status: memorykit.StatusActive, Actor: author}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range scopes {
		got, err := c.Recall(ctx, query(i))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Recall(ctx, query(i))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("scope %d: cached recall differs after concurrent loads (-sql +cached):\n%s", i, d)
		}
	}
}

// TestRecallCacheRoundTrips counts what a cached recall sends: for a
// Scope not cached yet the version and the recall in SQL, while the load
// (one pipelined transaction) runs in the background; one round trip when
// nothing changed since (the version), two after another Store wrote to
// the Scope (the version, then the rows changed since), and the refresh is
// incremental, not a reload.
func TestRecallCacheRoundTrips(t *testing.T) {
	ctx := context.Background()
	schema := uniqueSchema(t)
	clk := newClock()
	writer := openSQL(t, schema, clk)
	// One connection, so the background load never opens another (whose
	// setup queries would be counted too).
	s, tracer := tracedStore(t, schema, clk, 1, false)
	scope, _ := memorykit.ProjectScope("tenant-r", "trips")
	add := func(key string) {
		t.Helper()
		if _, err := writer.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: key,
			Content: "the " + key + " runs in the eu region", Status: memorykit.StatusActive, Actor: author}); err != nil {
			t.Fatal(err)
		}
	}
	add("api")
	q := storekit.RecallQuery{Scope: scope, ExactKeys: []string{"api"}, Terms: storekit.SearchTerms("which eu region", 16),
		ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5}
	recall := func(wantTrips, wantHits int) {
		t.Helper()
		before := tracer.n.Load()
		res, err := s.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		s.cache.settle()
		if got := tracer.n.Load() - before; got != int64(wantTrips) {
			t.Fatalf("recall sent %d round trips, want %d", got, wantTrips)
		}
		if len(res.FullText) != wantHits {
			t.Fatalf("%d full-text hits, want %d", len(res.FullText), wantHits)
		}
	}
	// speculated: how many recalls kept the ranking done while their
	// version was read (rankWhileReading).
	speculated := func(want int64) {
		t.Helper()
		if got := s.cache.speculated.Load(); got != want {
			t.Fatalf("%d recalls answered by the ranking made while the version was read, want %d", got, want)
		}
	}
	recall(3, 1) // cold: version, SQL recall; the load in the background
	speculated(0)
	recall(1, 1) // warm: version only, ranked meanwhile
	recall(1, 1)
	speculated(2)
	add("worker")
	recall(2, 2) // version, delta: the ranking made meanwhile is dropped
	speculated(2)
	recall(1, 2)
	speculated(3)
	if loads, deltas := s.cache.loads.Load(), s.cache.deltas.Load(); loads != 1 || deltas != 1 {
		t.Fatalf("%d loads and %d incremental refreshes, want 1 and 1", loads, deltas)
	}
	// A Scope warmed ahead is served from memory from its first recall.
	q.Scope, _ = memorykit.ProjectScope("tenant-r", "warmed")
	if err := s.WarmRecallCache(ctx, q.Scope); err != nil {
		t.Fatal(err)
	}
	recall(1, 0)
	if _, n := s.cache.usage(); n != 2 {
		t.Fatalf("%d Scopes cached, want 2", n)
	}
	// Close stops the background loads: a cold recall's load started
	// right before Close ends with it (goleak checks no goroutine stays).
	q.Scope, _ = memorykit.ProjectScope("tenant-r", "closing")
	if _, err := s.Recall(ctx, q); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !s.cache.bgClosed {
		t.Fatal("the cache still takes background loads after Close")
	}
}

// TestRecallCacheQueuesColdScopes: cold Scopes recalled while every
// background loader is busy are queued and loaded once one is free,
// without another recall, each loaded once; until then their recalls are
// answered in SQL.
func TestRecallCacheQueuesColdScopes(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	writer := openSQL(t, schema, clk)
	s := openCached(t, schema, clk, 64<<20)
	scopes := make([]memorykit.Scope, 4)
	for i := range scopes {
		scopes[i], _ = memorykit.ProjectScope("tenant-q", fmt.Sprintf("q%d", i))
		if _, err := writer.Create(ctx, memorykit.NewRecord{Scope: scopes[i], Kind: memorykit.KindNote, Key: "region",
			Content: "the api runs in the eu region", Status: memorykit.StatusActive, Actor: author}); err != nil {
			t.Fatal(err)
		}
	}
	// Hold the loads of the first two Scopes (as many as loaders may run
	// at once, or more): their background loads join these and wait.
	release := make(chan struct{})
	var held []<-chan singleflight.Result
	for _, sc := range scopes[:2] {
		held = append(held, s.cache.refreshes.DoChan(sc.String(), func() (any, error) {
			<-release
			return s.refreshScope(ctx, sc)
		}))
	}
	for _, sc := range scopes {
		res, err := s.Recall(ctx, storekit.RecallQuery{Scope: sc, ExactKeys: []string{"region"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Exact) != 1 {
			t.Fatalf("scope %s: %d exact hits, want 1", sc, len(res.Exact))
		}
	}
	close(release)
	for _, ch := range held {
		if r := <-ch; r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	s.cache.settle()
	for _, sc := range scopes {
		if cs, _ := s.cache.entry(sc); cs == nil {
			t.Fatalf("scope %s was not loaded after its cold recall", sc)
		}
	}
	if loads := s.cache.loads.Load(); loads != int64(len(scopes)) {
		t.Fatalf("%d loads, want %d", loads, len(scopes))
	}
}
