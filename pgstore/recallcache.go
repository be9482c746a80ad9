package pgstore

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
	"golang.org/x/sync/singleflight"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
)

// recallCache is the optional in-process recall index of a Store (see
// Config.RecallCacheBytes): per Scope, a memorystore.Snapshot of the
// Scope's active records and current vectors, labelled with the Scope's
// version (table scope_versions, bumped by triggers in the transaction of
// every change to records or embeddings).
//
// A recall reads the Scope's committed version (one round trip). A cached
// snapshot at that version or a later one holds every change committed
// before the recall began, so recall ranks in it. When the version moved,
// the snapshot is refreshed (a second round trip): one pipelined REPEATABLE
// READ transaction reads the version again, the records whose change
// version (table scope_changes, written by the same triggers) is above the
// snapshot's, and the current active rows and vectors of those records;
// they leave the snapshot and what is still active comes back. A Scope not
// cached at all is answered in SQL while it is loaded whole in the
// background (or loaded at once by WarmRecallCache). Nothing is ever served from a snapshot
// older than the version just read, so an erase or forget committed by any
// process is seen by the next recall.
//
// Ranking is memorystore's, which the SQL path reproduces (the
// differential test TestRecallCacheMatchesSQL holds them to the same
// hits, ranks, scores and records) with one difference at scale: the
// cache's vector channel scans every current vector exactly, where the SQL
// statement re-ranks exactly only the 64 nearest by the half-precision
// index. They differ only when a record of the exact top k is not among
// those 64, and then the cache's answer is the exact one.
//
// Snapshots are accounted by an estimate of their heap size
// (memorystore.Snapshot.Bytes) and evicted least recently used first to
// stay within the budget. A Scope larger than the whole budget is not
// cached; its recalls take the SQL path.
type recallCache struct {
	clk    clock.Clock
	budget int64

	mu     sync.Mutex
	used   int64
	lru    *list.List // of *cachedScope, most recently used first
	scopes map[memorykit.Scope]*list.Element
	// tooBig remembers when Scopes were found not to fit the budget: their
	// recalls take the SQL path without loading them again for
	// tooBigRetry (on the injected clock), however often they change; a
	// Scope too big to keep is costly to load and usually stays too big.
	// It is cleared when it reaches tooBigLimit entries.
	tooBig map[memorykit.Scope]time.Time
	// refreshes serialises the loads and refreshes of each Scope and
	// shares them among concurrent recalls.
	refreshes singleflight.Group
	// loads and deltas count whole-Scope loads and incremental refreshes.
	loads, deltas atomic.Int64

	// Loads of Scopes not cached yet run in the background (see
	// loadInBackground) under bgCtx; close cancels them and waits.
	// pending holds the Scopes waiting for a load, oldest first, and
	// queued marks them from the moment they are queued until their load
	// ends; bgRunning counts the goroutines loading them.
	bgMu      sync.Mutex
	bgClosed  bool
	bgRunning int
	pending   []memorykit.Scope
	queued    map[memorykit.Scope]bool
	bgCtx     context.Context
	bgStop    context.CancelFunc
	bg        sync.WaitGroup
}

const (
	tooBigLimit = 1024
	tooBigRetry = time.Minute
)

// maxBackgroundLoads bounds the background loads running at once: a burst
// of recalls over many cold Scopes loads them two at a time, in the order
// they were first asked for (their recalls take the SQL path meanwhile),
// instead of taking every connection of the pool. A load waits on the
// database for much of its time, so two overlap well; its CPU-bound part
// (indexing) yields to the recalls being served (memorystore.NewSnapshot).
// maxPendingLoads bounds the Scopes waiting for a load; a cold Scope
// beyond it is queued by a later recall.
const maxBackgroundLoads = 2

const maxPendingLoads = 256

// cachedScope is one Scope's snapshot. The snapshot changes only inside a
// refresh of its Scope (one at a time, see recallCache.refreshes); version
// and bytes change only under the cache's mu.
type cachedScope struct {
	scope   memorykit.Scope
	snap    *memorystore.Snapshot
	version int64
	bytes   int64
}

func newRecallCache(clk clock.Clock, budget int64) *recallCache {
	ctx, stop := context.WithCancel(context.Background())
	return &recallCache{
		clk:    clk,
		budget: budget,
		lru:    list.New(),
		scopes: make(map[memorykit.Scope]*list.Element),
		tooBig: make(map[memorykit.Scope]time.Time),
		queued: make(map[memorykit.Scope]bool),
		bgCtx:  ctx,
		bgStop: stop,
	}
}

// close cancels the background loads and waits for them to end; no new
// one starts afterwards.
func (c *recallCache) close() {
	c.bgMu.Lock()
	c.bgClosed = true
	c.bgStop()
	c.bgMu.Unlock()
	c.bg.Wait()
}

// loadInBackground queues scope for a load in the background, unless the
// cache is closed, the Scope is queued or loading already, or
// maxPendingLoads Scopes are waiting (a later recall queues it then), and
// starts a loading goroutine if fewer than maxBackgroundLoads run. A
// Scope queued while its workers were busy is loaded as soon as one is
// free, not only when it is recalled again.
func (s *Store) loadInBackground(scope memorykit.Scope) {
	c := s.cache
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.bgClosed || c.queued[scope] || len(c.pending) >= maxPendingLoads {
		return
	}
	c.queued[scope] = true
	c.pending = append(c.pending, scope)
	if c.bgRunning >= maxBackgroundLoads {
		return
	}
	c.bgRunning++
	c.bg.Add(1)
	go s.backgroundLoads()
}

// backgroundLoads loads the queued Scopes, oldest first, until none is
// left or the cache is closed. A Scope cached meanwhile (by
// WarmRecallCache, say) is skipped; a load or refresh of the Scope
// already running is joined instead of repeated.
func (s *Store) backgroundLoads() {
	c := s.cache
	defer c.bg.Done()
	for {
		c.bgMu.Lock()
		if c.bgClosed || len(c.pending) == 0 {
			c.bgRunning--
			c.bgMu.Unlock()
			return
		}
		scope := c.pending[0]
		c.pending[0] = memorykit.Scope{}
		c.pending = c.pending[1:]
		c.bgMu.Unlock()
		if cs, _ := c.entry(scope); cs == nil && !c.tooLarge(scope) {
			// A failed load is not retried here: the Scope's next
			// recall queues it again.
			_, _, _ = c.refreshes.Do(scope.String(), func() (any, error) { return s.refreshScope(c.bgCtx, scope) })
		}
		c.bgMu.Lock()
		delete(c.queued, scope)
		c.bgMu.Unlock()
	}
}

// errNotCached says the Scope cannot be served from the cache; the caller
// takes the SQL path.
var errNotCached = errors.New("pgstore: scope not cached")

// tooLarge reports whether scope was found too big to cache less than
// tooBigRetry ago.
func (c *recallCache) tooLarge(scope memorykit.Scope) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.tooBig[scope]
	return ok && c.clk.Since(at) < tooBigRetry
}

// get returns the cached snapshot of scope at version or later, if any.
func (c *recallCache) get(scope memorykit.Scope, version int64) (*memorystore.Snapshot, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.scopes[scope]
	if el == nil {
		return nil, false
	}
	cs := el.Value.(*cachedScope)
	if cs.version < version {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return cs.snap, true
}

// entry returns the cached snapshot of scope at whatever version it is,
// and that version.
func (c *recallCache) entry(scope memorykit.Scope) (*cachedScope, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.scopes[scope]
	if el == nil {
		return nil, 0
	}
	cs := el.Value.(*cachedScope)
	return cs, cs.version
}

// put caches cs unless it is too big for the whole budget or an entry at a
// later version is already there, evicting the least recently used
// Scopes to make room. A Scope too big to cache is still served once from
// the snapshot its recall loaded.
func (c *recallCache) put(cs *cachedScope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(cs)
}

func (c *recallCache) putLocked(cs *cachedScope) {
	if cs.bytes > c.budget {
		if len(c.tooBig) >= tooBigLimit {
			clear(c.tooBig)
		}
		c.tooBig[cs.scope] = c.clk.Now()
		c.removeLocked(cs.scope)
		return
	}
	delete(c.tooBig, cs.scope)
	if el := c.scopes[cs.scope]; el != nil {
		if el.Value.(*cachedScope).version >= cs.version {
			c.lru.MoveToFront(el)
			return
		}
		c.removeLocked(cs.scope)
	}
	for c.used+cs.bytes > c.budget {
		c.removeLocked(c.lru.Back().Value.(*cachedScope).scope)
	}
	c.scopes[cs.scope] = c.lru.PushFront(cs)
	c.used += cs.bytes
}

// refreshed records that cs's snapshot now holds the Scope at version and
// takes bytes, evicting other Scopes (or cs itself, when it no longer fits
// the budget) as put would.
func (c *recallCache) refreshed(cs *cachedScope, version, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.scopes[cs.scope]; el != nil && el.Value.(*cachedScope) == cs {
		c.removeLocked(cs.scope)
	}
	cs.version, cs.bytes = version, bytes
	c.putLocked(cs)
}

func (c *recallCache) removeLocked(scope memorykit.Scope) {
	el := c.scopes[scope]
	if el == nil {
		return
	}
	c.used -= el.Value.(*cachedScope).bytes
	c.lru.Remove(el)
	delete(c.scopes, scope)
}

// usage reports the accounted bytes and the number of cached Scopes.
func (c *recallCache) usage() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, len(c.scopes)
}

// cachedRecall serves q from the cache, loading or refreshing the Scope
// when its cached snapshot is missing or stale. errNotCached (or any load
// failure while ctx is live) sends the caller to the SQL path.
func (s *Store) cachedRecall(ctx context.Context, q memorykit.RecallQuery, useVector bool) (memorykit.RecallResult, error) {
	c := s.cache
	var version int64
	err := s.pool.QueryRow(ctx, s.stmt("scope_version"), q.Scope.TenantID, string(q.Scope.SubjectType), q.Scope.SubjectID).Scan(&version)
	if err != nil {
		return memorykit.RecallResult{}, err
	}
	if c.tooLarge(q.Scope) {
		return memorykit.RecallResult{}, errNotCached
	}
	snap, ok := c.get(q.Scope, version)
	if !ok {
		if cs, _ := c.entry(q.Scope); cs == nil {
			// Not cached: loading a large Scope takes far longer than
			// one recall in SQL, so the SQL path answers while the Scope
			// loads in the background.
			s.loadInBackground(q.Scope)
			return memorykit.RecallResult{}, errNotCached
		}
	}
	// Cached but stale: refreshed by the rows changed since (a round
	// trip). A refresh shared with another recall may have read the Scope
	// before this one's version was committed; then it is refreshed again.
	for tries := 0; !ok; tries++ {
		if tries == 2 {
			return memorykit.RecallResult{}, errNotCached
		}
		v, err, _ := c.refreshes.Do(q.Scope.String(), func() (any, error) {
			return s.refreshScope(ctx, q.Scope)
		})
		if err != nil {
			return memorykit.RecallResult{}, err
		}
		if r := v.(refreshResult); r.version >= version {
			snap, ok = r.snap, true
		}
	}
	if !useVector {
		q.Vector, q.Profile = nil, ""
	}
	return snap.Recall(ctx, q)
}

// refreshResult is what a refresh brought a Scope's snapshot to.
type refreshResult struct {
	snap    *memorystore.Snapshot
	version int64
}

// refreshScope brings the Scope's cached snapshot up to the committed
// version: by the rows changed since the snapshot's version when it is
// cached, else by a whole load. Only one refresh of a Scope runs at a time
// (recallCache.refreshes).
func (s *Store) refreshScope(ctx context.Context, scope memorykit.Scope) (refreshResult, error) {
	c := s.cache
	cs, from := c.entry(scope)
	if cs != nil {
		d, err := s.readDelta(ctx, scope, from)
		if err != nil {
			return refreshResult{}, err
		}
		if d.version >= from {
			cs.snap.Apply(d.changed, d.recs, d.embs)
			c.deltas.Add(1)
			c.refreshed(cs, d.version, cs.snap.Bytes())
			return refreshResult{snap: cs.snap, version: d.version}, nil
		}
		// The version went back (the schema was rebuilt): start over.
	}
	cs, err := s.loadScope(ctx, scope)
	if err != nil {
		return refreshResult{}, err
	}
	c.loads.Add(1)
	c.put(cs)
	return refreshResult{snap: cs.snap, version: cs.version}, nil
}

// scopeDelta is what changed in a Scope after a version: the ids of every
// record changed since (changed), the current rows of those that are
// active (recs) and their current vectors (embs), all read at version.
type scopeDelta struct {
	version int64
	changed []string
	recs    []memorykit.Record
	embs    []memorystore.SnapshotEmbedding
}

// readDelta reads the Scope's version and the rows changed after from, in
// one round trip: a pipelined REPEATABLE READ transaction, so the version
// and the rows come from one database snapshot.
func (s *Store) readDelta(ctx context.Context, scope memorykit.Scope, from int64) (scopeDelta, error) {
	args := []any{scope.TenantID, string(scope.SubjectType), scope.SubjectID, from}
	// See sql/recallcache.sql for why the changed rows are read by id.
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	batch.Queue(s.stmt("scope_version"), args[:3]...)
	batch.Queue(s.stmt("read_delta_changed"), args...)
	batch.Queue(s.stmt("read_delta_records"), args...)
	batch.Queue(s.stmt("read_delta_embeddings"), args...)
	batch.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()
	var d scopeDelta
	if _, err := br.Exec(); err != nil {
		return d, err
	}
	if err := br.QueryRow().Scan(&d.version); err != nil {
		return d, err
	}
	rows, err := br.Query()
	if err != nil {
		return d, err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return d, err
		}
		d.changed = append(d.changed, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return d, err
	}
	if d.recs, err = scanRecords(br); err != nil {
		return d, err
	}
	if d.embs, err = scanEmbeddings(br); err != nil {
		return d, err
	}
	if _, err := br.Exec(); err != nil {
		return d, err
	}
	return d, br.Close()
}

// loadScope reads the Scope's version, active records and current vectors
// from one database snapshot (one round trip, as readDelta) and indexes
// them.
func (s *Store) loadScope(ctx context.Context, scope memorykit.Scope) (*cachedScope, error) {
	args := []any{scope.TenantID, string(scope.SubjectType), scope.SubjectID}
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	batch.Queue(s.stmt("scope_version"), args...)
	batch.Queue(s.stmt("load_scope_records"), args...)
	batch.Queue(s.stmt("load_scope_embeddings"), args...)
	batch.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()
	cs := &cachedScope{scope: scope}
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	if err := br.QueryRow().Scan(&cs.version); err != nil {
		return nil, err
	}
	recs, err := scanRecords(br)
	if err != nil {
		return nil, err
	}
	embs, err := scanEmbeddings(br)
	if err != nil {
		return nil, err
	}
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	cs.snap = memorystore.NewSnapshot(s.cache.clk, recs, embs)
	cs.bytes = cs.snap.Bytes()
	return cs, nil
}

// scanRecords reads the batch's next result: rows of recordCols.
func scanRecords(br pgx.BatchResults) ([]memorykit.Record, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []memorykit.Record
	for rows.Next() {
		var d recordDest
		if err := rows.Scan(d.targets()...); err != nil {
			return nil, err
		}
		rec, err := d.record()
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, rows.Err()
}

// scanEmbeddings reads the batch's next result: record_id, profile,
// content_hash and embedding rows.
func scanEmbeddings(br pgx.BatchResults) ([]memorystore.SnapshotEmbedding, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var embs []memorystore.SnapshotEmbedding
	for rows.Next() {
		var (
			m   memorystore.SnapshotEmbedding
			vec pgvector.Vector
		)
		if err := rows.Scan(&m.RecordID, &m.Profile, &m.ContentHash, &vec); err != nil {
			return nil, err
		}
		m.Vector = vec.Slice()
		embs = append(embs, m)
	}
	return embs, rows.Err()
}

// WarmRecallCache loads scope into the recall cache now, or brings it up
// to the committed version if it is cached already, so its next recall is
// served from memory (a Host may warm its busiest Scopes at startup;
// otherwise a Scope's first recall is answered in SQL while it loads in
// the background). It does nothing when the cache is off or the Scope does
// not fit the budget.
func (s *Store) WarmRecallCache(ctx context.Context, scope memorykit.Scope) error {
	const op = "pgstore.warm_recall_cache"
	if err := live(ctx, op); err != nil {
		return err
	}
	if err := scope.Validate(); err != nil {
		return err
	}
	if s.cache == nil {
		return nil
	}
	if _, err, _ := s.cache.refreshes.Do(scope.String(), func() (any, error) { return s.refreshScope(ctx, scope) }); err != nil {
		return mapErr(op, withCtx(ctx, err))
	}
	return nil
}

// RecallCacheUsage reports the recall cache's accounted size in bytes (an
// estimate of the heap its snapshots hold, never above
// Config.RecallCacheBytes) and the number of Scopes it holds; zeros when
// the cache is off.
func (s *Store) RecallCacheUsage() (bytes int64, scopes int) {
	if s.cache == nil {
		return 0, 0
	}
	return s.cache.usage()
}
