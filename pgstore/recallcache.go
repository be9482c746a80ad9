package pgstore

import (
	"container/list"
	"context"
	"errors"
	"sync"

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
// before the recall began, so recall ranks in it; otherwise the Scope is
// loaded again, whole, in one REPEATABLE READ transaction that reads the
// version and the rows from the same database snapshot. Nothing is ever
// served from a snapshot older than the version just read, so an erase or
// forget committed by any process is seen by the next recall.
//
// Snapshots are accounted by an estimate of their heap size (snapshotBytes)
// and evicted least recently used first to stay within the budget. A Scope
// larger than the whole budget is not cached; its recalls take the SQL
// path.
type recallCache struct {
	clk    clock.Clock
	budget int64

	mu     sync.Mutex
	used   int64
	lru    *list.List // of *cachedScope, most recently used first
	scopes map[memorykit.Scope]*list.Element
	// tooBig remembers Scopes (with the version they were measured at) that
	// did not fit the budget, so their recalls skip the load until they
	// change. It is cleared when it reaches tooBigLimit entries.
	tooBig map[memorykit.Scope]int64
	loads  singleflight.Group
}

const tooBigLimit = 1024

type cachedScope struct {
	scope   memorykit.Scope
	version int64
	snap    *memorystore.Snapshot
	bytes   int64
}

func newRecallCache(clk clock.Clock, budget int64) *recallCache {
	return &recallCache{
		clk:    clk,
		budget: budget,
		lru:    list.New(),
		scopes: make(map[memorykit.Scope]*list.Element),
		tooBig: make(map[memorykit.Scope]int64),
	}
}

// errNotCached says the Scope cannot be served from the cache; the caller
// takes the SQL path.
var errNotCached = errors.New("pgstore: scope not cached")

// tooLarge reports whether scope, at version, was found too big to cache.
func (c *recallCache) tooLarge(scope memorykit.Scope, version int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.tooBig[scope]
	return ok && v >= version
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

// put caches cs unless it is too big for the whole budget or an entry at a
// later version is already there, evicting the least recently used
// Scopes to make room. A Scope too big to cache is still served once from
// the snapshot its recall loaded.
func (c *recallCache) put(cs *cachedScope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs.bytes > c.budget {
		if len(c.tooBig) >= tooBigLimit {
			clear(c.tooBig)
		}
		c.tooBig[cs.scope] = cs.version
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

// cachedRecall serves q from the cache, loading the Scope when its cached
// snapshot is missing or stale. errNotCached (or any load failure while
// ctx is live) sends the caller to the SQL path.
func (s *Store) cachedRecall(ctx context.Context, q memorykit.RecallQuery, useVector bool) (memorykit.RecallResult, error) {
	c := s.cache
	var version int64
	err := s.pool.QueryRow(ctx, s.q(`SELECT COALESCE((SELECT version FROM {schema}.scope_versions
		WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3), 0)`),
		q.Scope.TenantID, string(q.Scope.SubjectType), q.Scope.SubjectID).Scan(&version)
	if err != nil {
		return memorykit.RecallResult{}, err
	}
	if c.tooLarge(q.Scope, version) {
		return memorykit.RecallResult{}, errNotCached
	}
	snap, ok := c.get(q.Scope, version)
	// A load shared with another recall may have begun before this one's
	// version was committed; then it is loaded again.
	for tries := 0; !ok; tries++ {
		if tries == 2 {
			return memorykit.RecallResult{}, errNotCached
		}
		v, err, _ := c.loads.Do(q.Scope.String(), func() (any, error) {
			cs, err := s.loadScope(ctx, q.Scope)
			if err != nil {
				return nil, err
			}
			c.put(cs)
			return cs, nil
		})
		if err != nil {
			return memorykit.RecallResult{}, err
		}
		if cs := v.(*cachedScope); cs.version >= version {
			snap, ok = cs.snap, true
		}
	}
	if !useVector {
		q.Vector, q.Profile = nil, ""
	}
	return snap.Recall(ctx, q)
}

// loadScope reads the Scope's version, active records and current vectors
// from one database snapshot and indexes them.
func (s *Store) loadScope(ctx context.Context, scope memorykit.Scope) (*cachedScope, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	args := []any{scope.TenantID, string(scope.SubjectType), scope.SubjectID}
	cs := &cachedScope{scope: scope}
	if err := tx.QueryRow(ctx, s.q(`SELECT COALESCE((SELECT version FROM {schema}.scope_versions
		WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3), 0)`), args...).Scan(&cs.version); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, s.q(`SELECT `+recordCols+` FROM {schema}.records
		WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND status = 'active'`), args...)
	if err != nil {
		return nil, err
	}
	var recs []memorykit.Record
	for rows.Next() {
		var d recordDest
		if err := rows.Scan(d.targets()...); err != nil {
			rows.Close()
			return nil, err
		}
		rec, err := d.record()
		if err != nil {
			rows.Close()
			return nil, err
		}
		recs = append(recs, rec)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, s.q(`SELECT e.record_id, e.profile, e.content_hash, e.embedding
		FROM {schema}.embeddings e JOIN {schema}.records r ON r.id = e.record_id
		WHERE e.tenant_id = $1 AND e.subject_type = $2 AND e.subject_id = $3
		AND r.status = 'active' AND r.content_hash = e.content_hash`), args...)
	if err != nil {
		return nil, err
	}
	var embs []memorystore.SnapshotEmbedding
	for rows.Next() {
		var (
			m   memorystore.SnapshotEmbedding
			vec pgvector.Vector
		)
		if err := rows.Scan(&m.RecordID, &m.Profile, &m.ContentHash, &vec); err != nil {
			rows.Close()
			return nil, err
		}
		m.Vector = vec.Slice()
		embs = append(embs, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	cs.snap = memorystore.NewSnapshot(s.cache.clk, recs, embs)
	cs.bytes = snapshotBytes(recs, embs)
	return cs, nil
}

// Per-item overheads of snapshotBytes, from the heap of a 10k-record Scope
// measured after GC (BenchmarkRecallCacheLoad: 4,016 bytes per record on
// the heap, 4,155 accounted): the record's entry and slot, a term's place
// in the posting lists, and a vector's slab row. Keep the accounted figure
// above the heap's when the snapshot's layout changes.
const (
	scopeOverhead  = 2048 // the snapshot's store, index maps and cache entry, so empty Scopes count too
	recordOverhead = 1152
	termOverhead   = 16
	vectorOverhead = 96
)

// snapshotBytes estimates the heap a snapshot of recs and embs holds: the
// strings of each record, its index terms (about one per 6 bytes of text,
// each in a posting list), and each vector once
// (its slab row; the snapshot keeps no other copy).
func snapshotBytes(recs []memorykit.Record, embs []memorystore.SnapshotEmbedding) int64 {
	n := int64(scopeOverhead)
	for _, r := range recs {
		text := len(r.Content) + len(r.Key)
		n += recordOverhead + int64(len(r.ID)+len(r.ContentHash)+len(r.CreatedBy.ID)+len(r.TouchedBy.ID)+2*text)
		n += int64(text/6+1) * termOverhead
		for k, v := range r.Metadata {
			n += int64(len(k)+len(v)) + 48
		}
		for _, src := range r.Sources {
			n += int64(len(src.Kind)+len(src.Ref)) + 32
		}
	}
	for _, e := range embs {
		n += vectorOverhead + 4*int64(len(e.Vector))
	}
	return n
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
