package pgstore

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
	"golang.org/x/sync/singleflight"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/scopebudget"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
)

// recallCache is the optional in-process recall index of a Store (see
// Config.RecallCacheBytes): per Scope, a memorystore.Snapshot of the
// Scope's active records and current vectors, labelled with the Scope's
// version (table scope_versions, bumped by triggers in the transaction of
// every change to records or embeddings).
//
// A recall reads the Scope's committed version (one round trip). A cached
// snapshot at that version or a later one holds every change committed
// before the recall began, so recall ranks in it; for a cached Scope it
// ranks while the version is read and keeps that ranking when the version
// had not moved past the snapshot's (rankWhileReading). When the version moved,
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
// The Store's own writes keep the Scopes they touch warm (Store.wrote,
// called after each commit), so a Host that writes and then recalls
// through one Store does not meet a cold Scope:
//   - A cached Scope is marked written, and its next recall sends the
//     refresh at once (one round trip: the version and the changed rows
//     together) instead of the version first. The refresh must have begun
//     after the recall did (recallCache.tickets), so it, too, holds every
//     change committed before the recall by any process. Nothing is read
//     before that recall: a Store that writes a lot and recalls little
//     does not read back what it writes.
//   - A Scope not cached is queued for a background load, when the cache
//     has room left. Such a load only takes free room (it evicts nothing;
//     the Scope enters as the least recently used), so a bulk import into
//     many Scopes fills the spare budget and then stops warming instead of
//     pushing out the Scopes being recalled; a Scope found too big, or
//     too big for the room left by its last write-triggered load, is
//     skipped for tooBigRetry. Each Scope written is read back once, by
//     its load, at most two at a time, beside the writes.
//   - A recall of a Scope whose load is running waits for it (joinLoad)
//     up to joinLoadWait on the injected clock or its context's end,
//     instead of ranking in SQL beside it; a load queued but not yet
//     running moves to the head of the queue, and the recall takes the
//     SQL path.
//
// Close cancels the loads (write-triggered ones too) and waits for them.
// A process that only writes (a worker on a Store of its own) gains
// nothing from the cache and can turn it off with Config.SQLRecall.
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

	mu sync.Mutex
	// scopes holds the cached Scopes, their bytes and their use order.
	scopes *scopebudget.Ledger[memorykit.Scope, *cachedScope]
	// tooBig remembers when Scopes were found not to fit the budget: their
	// recalls take the SQL path without loading them again for
	// tooBigRetry (on the injected clock), however often they change; a
	// Scope too big to keep is costly to load and usually stays too big.
	// It is cleared when it reaches tooBigLimit entries.
	tooBig map[memorykit.Scope]time.Time
	// noRoom remembers when write-triggered loads found no free room for
	// Scopes (see putSpare): writes to them queue no load for tooBigRetry,
	// so a bulk import into more Scopes than fit does not load each of
	// them again after every write. Recalls are not affected. It is
	// cleared when it reaches tooBigLimit entries.
	noRoom map[memorykit.Scope]time.Time
	// refreshes serialises the loads and refreshes of each Scope and
	// shares them among concurrent recalls.
	refreshes singleflight.Group
	// loads and deltas count whole-Scope loads and incremental refreshes;
	// sqlRecalls counts the recalls the cache left to the SQL path.
	loads, deltas, sqlRecalls atomic.Int64
	// speculated counts the recalls answered by a ranking done while
	// their version was read (see rankWhileReading).
	speculated atomic.Int64

	// tickets orders the starts of recalls and refreshes: a refresh
	// whose ticket is above a recall's began after that recall did, so it
	// read every change committed before the recall began.
	tickets atomic.Int64

	// Loads of Scopes not cached yet run in the background (see
	// loadInBackground) under bgCtx; close cancels them and waits.
	// pending holds the loads waiting to run, oldest first, and queued
	// holds them by Scope from the moment they are queued until they
	// end; bgRunning counts the goroutines running them.
	bgMu      sync.Mutex
	bgClosed  bool
	bgRunning int
	pending   []*bgLoad
	queued    map[memorykit.Scope]*bgLoad
	bgCtx     context.Context
	bgStop    context.CancelFunc
	bg        sync.WaitGroup
	// beforeLoad, when set (tests only), runs on the loading goroutine
	// before each background load, with the cache's background context;
	// joining, when set (tests only), runs when a recall starts waiting
	// for a running load (joinLoad).
	beforeLoad func(ctx context.Context, scope memorykit.Scope)
	joining    func(scope memorykit.Scope)
}

// bgLoad is one background load of a Scope. byWrite, running and the
// position in pending change under the cache's bgMu; res and err are set
// before done is closed.
type bgLoad struct {
	scope memorykit.Scope
	// byWrite: queued after a write of this Store (see Store.wrote), and
	// no recall has asked for the Scope since. Such a load only takes
	// room the cache has free: it evicts no Scope, and its Scope enters
	// as the least recently used one.
	byWrite bool
	running bool
	done    chan struct{}
	res     refreshResult
	err     error
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
// beyond it is queued by a later recall (or write).
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
	// written: a write of this Store to the Scope committed after the
	// start of the refresh that brought the snapshot to version, so the
	// Scope's version has moved (see Store.wrote). Guarded by the cache's
	// mu.
	written bool
}

func newRecallCache(clk clock.Clock, budget int64) *recallCache {
	ctx, stop := context.WithCancel(context.Background())
	return &recallCache{
		clk:    clk,
		budget: budget,
		scopes: scopebudget.New[memorykit.Scope, *cachedScope](budget),
		tooBig: make(map[memorykit.Scope]time.Time),
		noRoom: make(map[memorykit.Scope]time.Time),
		queued: make(map[memorykit.Scope]*bgLoad),
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
// cache is closed or maxPendingLoads Scopes are waiting (a later recall
// or write queues it then), and starts a loading goroutine if fewer than
// maxBackgroundLoads run. A Scope queued while the loaders were busy is
// loaded as soon as one is free, not only when it is recalled again.
// byWrite says a write queues it (see bgLoad.byWrite); a recall (byWrite
// false) of a Scope queued by a write and still waiting moves it to the
// head of the queue. It returns the Scope's load, queued now or earlier
// (nil if none), and whether that load is running.
func (s *Store) loadInBackground(scope memorykit.Scope, byWrite bool) (*bgLoad, bool) {
	c := s.cache
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if l := c.queued[scope]; l != nil {
		if !byWrite && l.byWrite {
			l.byWrite = false
			if !l.running {
				i := slices.Index(c.pending, l)
				c.pending = slices.Insert(slices.Delete(c.pending, i, i+1), 0, l)
			}
		}
		return l, l.running
	}
	if c.bgClosed || len(c.pending) >= maxPendingLoads {
		return nil, false
	}
	l := &bgLoad{scope: scope, byWrite: byWrite, done: make(chan struct{})}
	c.queued[scope] = l
	c.pending = append(c.pending, l)
	if c.bgRunning < maxBackgroundLoads {
		c.bgRunning++
		c.bg.Add(1)
		go s.backgroundLoads()
	}
	return l, false
}

// backgroundLoads runs the queued loads, oldest first, until none is left
// or the cache is closed. A Scope cached meanwhile (by WarmRecallCache,
// say) is skipped; a load or refresh of the Scope already running is
// joined instead of repeated. Loads left in the queue at close end
// unrun.
func (s *Store) backgroundLoads() {
	c := s.cache
	defer c.bg.Done()
	for {
		c.bgMu.Lock()
		if c.bgClosed || len(c.pending) == 0 {
			c.bgRunning--
			if c.bgRunning == 0 {
				for _, l := range c.pending {
					l.err = errNotCached
					close(l.done)
					delete(c.queued, l.scope)
				}
				c.pending = nil
			}
			c.bgMu.Unlock()
			return
		}
		l := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		l.running = true
		c.bgMu.Unlock()
		if c.beforeLoad != nil {
			c.beforeLoad(c.bgCtx, l.scope)
		}
		l.err = errNotCached
		if cs, _ := c.entry(l.scope); cs == nil && !c.tooLarge(l.scope) {
			// A failed load is not retried here: the Scope's next
			// recall or write queues it again.
			v, err, _ := c.refreshes.Do(l.scope.String(), func() (any, error) { return s.refresh(c.bgCtx, l.scope, l) })
			if err == nil {
				l.res, l.err = v.(refreshResult), nil
			}
		}
		c.bgMu.Lock()
		close(l.done)
		delete(c.queued, l.scope)
		c.bgMu.Unlock()
	}
}

// fromWrite reports whether l is a load queued by a write that no recall
// has asked for since (nil: a recall's or WarmRecallCache's refresh).
func (c *recallCache) fromWrite(l *bgLoad) bool {
	if l == nil {
		return false
	}
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	return l.byWrite
}

// wrote keeps the Scopes a transaction of this Store just committed
// changes to warm for their next recall, so a Host that writes and then
// recalls through one Store does not meet a cold Scope. It is called after
// the commit, never inside the transaction. A cached Scope is marked
// written: its next recall reads the version and the changed rows in one
// round trip (see cachedRecall) instead of the version first and the rows
// second; nothing is read before that recall, so a Store that writes much
// and recalls little does not read back what it writes. A Scope not cached
// is queued for a load in the background when the cache has room left and
// the Scope was not found too big lately, nor too big for the free room
// by a load after an earlier write (recallCache.noRoom); the load takes
// only free room (bgLoad.byWrite). A write that changed nothing in a
// Scope it names only costs that Scope's next recall a few empty rows.
func (s *Store) wrote(scopes ...memorykit.Scope) {
	c := s.cache
	if c == nil {
		return
	}
	for _, sc := range scopes {
		c.mu.Lock()
		cs, cached := c.scopes.Get(sc)
		if cached {
			cs.written = true
		}
		at, big := c.tooBig[sc]
		if !big {
			at, big = c.noRoom[sc]
		}
		full := c.scopes.Used() >= c.budget
		c.mu.Unlock()
		if cached || full || (big && c.clk.Since(at) < tooBigRetry) {
			continue
		}
		s.loadInBackground(sc, true)
	}
}

// distinctScopes is the distinct Scopes of n items, in order of first
// appearance; scopeAt gives item i's Scope, or false to leave it out.
func distinctScopes(n int, scopeAt func(i int) (memorykit.Scope, bool)) []memorykit.Scope {
	var out []memorykit.Scope
	for i := range n {
		if sc, ok := scopeAt(i); ok && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// joinLoadWait bounds how long a recall of a Scope whose background load
// is running waits for that load before it takes the SQL path (measured on
// the injected clock). See joinLoad.
const joinLoadWait = 20 * time.Millisecond

// joinLoad waits for l, a running background load of a recall's Scope,
// and returns its snapshot if it holds the Scope at version or later. It
// gives up (false) when ctx ends or after joinLoadWait. A load already
// running has read part of the Scope or all of it, and indexes it on one
// core; ranking the recall in SQL meanwhile would compete with it for the
// database and the CPU. Measured on the conversation fixture (600 turns a
// Scope, docs/benchmarks.md), a recall that joined a load waited 7.5-15
// ms, one in SQL beside a load took 10-25 ms. A large Scope loads for
// longer than that (a 10k Scope in 0.6 s), so the wait is capped: at worst
// the recall costs joinLoadWait more than the SQL path, well inside a
// recall deadline such as RecallPolicyV1's 500 ms. Recall deadlines are
// cancellations on the injected clock (internal/plumbing/clockctx) with no
// Deadline to plan by, so the wait ends with ctx, and the recall with it.
func (c *recallCache) joinLoad(ctx context.Context, l *bgLoad, version int64) (*memorystore.Snapshot, bool) {
	t := c.clk.Timer(joinLoadWait)
	defer t.Stop()
	if c.joining != nil {
		c.joining(l.scope)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, false
	case <-t.C:
		return nil, false
	}
	if l.err != nil || l.res.snap == nil || l.res.version < version {
		return nil, false
	}
	return l.res.snap, true
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
	cs, ok := c.scopes.Get(scope)
	if !ok || cs.version < version {
		return nil, false
	}
	c.scopes.Touch(scope)
	return cs.snap, true
}

// entry returns the cached snapshot of scope at whatever version it is,
// and that version.
func (c *recallCache) entry(scope memorykit.Scope) (*cachedScope, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, ok := c.scopes.Get(scope)
	if !ok {
		return nil, 0
	}
	return cs, cs.version
}

// put caches cs unless it is too big for the whole budget or an entry at a
// later version is already there, evicting the least recently used
// Scopes to make room. A Scope too big to cache is still served once from
// the snapshot its recall loaded.
func (c *recallCache) put(cs *cachedScope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(cs, false)
}

// putSpare is put for a Scope loaded because this Store wrote to it (see
// bgLoad.byWrite): it takes only room the cache has free, evicting
// nothing, and enters as the least recently used Scope, so warming Scopes
// that are written never pushes out the Scopes being recalled, and a
// Scope warmed but never recalled is the first to go.
func (c *recallCache) putSpare(cs *cachedScope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(cs, true)
}

func (c *recallCache) putLocked(cs *cachedScope, spare bool) {
	if cs.bytes > c.budget {
		if len(c.tooBig) >= tooBigLimit {
			clear(c.tooBig)
		}
		c.tooBig[cs.scope] = c.clk.Now()
		c.removeLocked(cs.scope)
		return
	}
	delete(c.tooBig, cs.scope)
	if !spare {
		delete(c.noRoom, cs.scope)
	}
	if old, ok := c.scopes.Get(cs.scope); ok {
		if old.version >= cs.version {
			c.scopes.Touch(cs.scope)
			return
		}
		c.removeLocked(cs.scope)
	}
	if spare {
		if !c.scopes.Fits(cs.bytes) {
			if len(c.noRoom) >= tooBigLimit {
				clear(c.noRoom)
			}
			c.noRoom[cs.scope] = c.clk.Now()
			return
		}
		c.scopes.Add(cs.scope, cs, cs.bytes, true)
		return
	}
	for !c.scopes.Fits(cs.bytes) {
		oldest, _ := c.scopes.Oldest(nil)
		c.removeLocked(oldest)
	}
	c.scopes.Add(cs.scope, cs, cs.bytes, false)
}

// refreshed records that cs's snapshot now holds the Scope at version and
// takes bytes, evicting other Scopes (or cs itself, when it no longer fits
// the budget) as put would.
func (c *recallCache) refreshed(cs *cachedScope, version, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.scopes.Get(cs.scope); ok && cur == cs {
		c.removeLocked(cs.scope)
	}
	cs.version, cs.bytes = version, bytes
	c.putLocked(cs, false)
}

func (c *recallCache) removeLocked(scope memorykit.Scope) {
	c.scopes.Remove(scope)
}

// usage reports the accounted bytes and the number of cached Scopes.
func (c *recallCache) usage() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scopes.Used(), c.scopes.Len()
}

// cachedRecall serves q from the cache, loading or refreshing the Scope
// when its cached snapshot is missing or stale. errNotCached (or any load
// failure while ctx is live) sends the caller to the SQL path.
func (s *Store) cachedRecall(ctx context.Context, q storekit.RecallQuery, useVector bool) (storekit.RecallResult, error) {
	c := s.cache
	ticket := c.tickets.Add(1)
	snap, ok, err := s.recallWritten(ctx, q.Scope, ticket)
	if err != nil {
		return storekit.RecallResult{}, err
	}
	if !useVector {
		q.Vector, q.Profile = nil, ""
	}
	if !ok {
		var version int64
		if cs, cached := c.entry(q.Scope); cs != nil {
			res, v, fresh, err := s.rankWhileReading(ctx, q, cs, cached)
			if err != nil || fresh {
				return res, err
			}
			version = v
		} else if version, err = s.scopeVersion(ctx, q.Scope); err != nil {
			return storekit.RecallResult{}, err
		}
		if snap, err = s.recallSnapshot(ctx, q.Scope, version); err != nil {
			return storekit.RecallResult{}, err
		}
	}
	return snap.Recall(ctx, q)
}

// rankWhileReading ranks q in the cached snapshot cs (at version cached or
// later) while the Scope's committed version is read, instead of after: a
// recall of a Scope nobody changed then costs the longer of the round trip
// and the ranking, not their sum. The ranking is kept (fresh) only when
// the snapshot already held the version read, which the query began after
// the recall did: then it is the answer the usual order gives. Otherwise
// the version is returned and the ranking dropped, and the recall goes on
// the usual way (refresh, then rank). Snapshots are safe to rank in while
// a refresh changes them, and a refresh only moves them forward.
func (s *Store) rankWhileReading(ctx context.Context, q storekit.RecallQuery, cs *cachedScope, cached int64) (storekit.RecallResult, int64, bool, error) {
	// The round trip waits on another goroutine, and the ranking runs on
	// the caller's: a Host that gives its recalls a thread of lower CPU
	// priority (the example Host's work pool) keeps the CPU work there.
	type read struct {
		version int64
		err     error
	}
	done := make(chan read, 1)
	go func() {
		v, err := s.scopeVersion(ctx, q.Scope)
		done <- read{v, err}
	}()
	// Let the new goroutine send its query first (it runs next on this P
	// and yields it as soon as it waits for the answer); otherwise it
	// would wait for the ranking or for another P to take it.
	runtime.Gosched()
	res, rankErr := cs.snap.Recall(ctx, q)
	r := <-done
	if r.err != nil {
		return storekit.RecallResult{}, 0, false, r.err
	}
	if r.version > cached || rankErr != nil {
		return storekit.RecallResult{}, r.version, false, nil
	}
	s.cache.speculated.Add(1)
	s.cache.get(q.Scope, r.version) // marks the Scope recently used
	return res, r.version, true, nil
}

// scopeVersion reads the Scope's committed version (one round trip).
func (s *Store) scopeVersion(ctx context.Context, scope memorykit.Scope) (int64, error) {
	var version int64
	err := s.pool.QueryRow(ctx, s.stmt("scope_version"), scope.TenantID, string(scope.SubjectType), scope.SubjectID).Scan(&version)
	return version, err
}

// recallWritten serves a Scope cached and marked written by this Store
// since its snapshot's refresh began (cachedScope.written): its version has
// moved, so the refresh is sent at once, the version and the rows changed
// since in one round trip, instead of reading the version first. The
// refresh must have begun after the recall (ticket) to hold every change
// committed before it; one shared with an earlier recall is followed by
// another. false (with no error) sends the recall the usual way.
func (s *Store) recallWritten(ctx context.Context, scope memorykit.Scope, ticket int64) (*memorystore.Snapshot, bool, error) {
	c := s.cache
	c.mu.Lock()
	cs, ok := c.scopes.Get(scope)
	written := ok && cs.written
	c.mu.Unlock()
	if !written {
		return nil, false, nil
	}
	return s.refreshUntil(ctx, scope, func(r refreshResult) bool { return r.ticket > ticket })
}

// refreshUntil refreshes the Scope's snapshot (sharing a refresh already
// running, see recallCache.refreshes) until the refresh's result satisfies
// done, at most twice: a shared refresh may have begun too early for the
// caller, and the one after it cannot have. false (with no error) when
// neither did.
func (s *Store) refreshUntil(ctx context.Context, scope memorykit.Scope, done func(refreshResult) bool) (*memorystore.Snapshot, bool, error) {
	for tries := 0; tries < 2; tries++ {
		v, err, _ := s.cache.refreshes.Do(scope.String(), func() (any, error) { return s.refreshScope(ctx, scope) })
		if err != nil {
			return nil, false, err
		}
		if r := v.(refreshResult); done(r) {
			return r.snap, true, nil
		}
	}
	return nil, false, nil
}

// recallSnapshot returns a snapshot of the Scope at version (its committed
// version, read after the recall began) or later: the cached one, brought
// up to date by the rows changed since when the version moved (a round
// trip), or, for a Scope not cached, the one its running background load
// brings (see joinLoad). errNotCached sends the recall to the SQL path.
func (s *Store) recallSnapshot(ctx context.Context, scope memorykit.Scope, version int64) (*memorystore.Snapshot, error) {
	c := s.cache
	if c.tooLarge(scope) {
		return nil, errNotCached
	}
	snap, ok := c.get(scope, version)
	if ok {
		return snap, nil
	}
	if cs, _ := c.entry(scope); cs == nil {
		// Not cached: loading a large Scope takes far longer than one
		// recall in SQL, so the SQL path answers while the Scope loads
		// in the background, unless its load is running already (after
		// a write of this Store, say): then the recall waits a little
		// for it.
		if l, running := s.loadInBackground(scope, false); running {
			if snap, ok := c.joinLoad(ctx, l, version); ok {
				return snap, nil
			}
		}
		return nil, errNotCached
	}
	// Cached but stale: refreshed by the rows changed since (a round
	// trip). A refresh shared with another recall may have read the Scope
	// before this one's version was committed; then it is refreshed again.
	snap, ok, err := s.refreshUntil(ctx, scope, func(r refreshResult) bool { return r.version >= version })
	if err == nil && !ok {
		err = errNotCached
	}
	return snap, err
}

// refreshResult is what a refresh brought a Scope's snapshot to, and the
// ticket (recallCache.tickets) it took as it began.
type refreshResult struct {
	snap    *memorystore.Snapshot
	version int64
	ticket  int64
}

// refreshScope brings the Scope's cached snapshot up to the committed
// version: by the rows changed since the snapshot's version when it is
// cached, else by a whole load. Only one refresh of a Scope runs at a time
// (recallCache.refreshes).
func (s *Store) refreshScope(ctx context.Context, scope memorykit.Scope) (refreshResult, error) {
	return s.refresh(ctx, scope, nil)
}

// refresh is refreshScope for the background load l (nil: for a recall or
// WarmRecallCache), whose kind decides how a whole load enters the cache
// (see putSpare). It takes its ticket, and clears the Scope's written
// mark, before it sends anything: a write committed later marks the Scope
// again.
func (s *Store) refresh(ctx context.Context, scope memorykit.Scope, l *bgLoad) (refreshResult, error) {
	c := s.cache
	ticket := c.tickets.Add(1)
	c.mu.Lock()
	var cs *cachedScope
	var from int64
	if cached, ok := c.scopes.Get(scope); ok {
		cs = cached
		from = cs.version
		cs.written = false
	}
	c.mu.Unlock()
	if cs != nil {
		d, err := s.readDelta(ctx, scope, from)
		if err != nil {
			// The mark may have been the reason for this refresh: keep
			// it for the next recall.
			c.mu.Lock()
			cs.written = true
			c.mu.Unlock()
			return refreshResult{}, err
		}
		if d.version >= from {
			cs.snap.Apply(d.changed, d.recs, d.embs)
			c.deltas.Add(1)
			c.refreshed(cs, d.version, cs.snap.Bytes())
			return refreshResult{snap: cs.snap, version: d.version, ticket: ticket}, nil
		}
		// The version went back (the schema was rebuilt): start over.
	}
	cs, err := s.loadScope(ctx, scope)
	if err != nil {
		return refreshResult{}, err
	}
	c.loads.Add(1)
	if c.fromWrite(l) {
		c.putSpare(cs)
	} else {
		c.put(cs)
	}
	return refreshResult{snap: cs.snap, version: cs.version, ticket: ticket}, nil
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
// and the rows come from one database snapshot. Its statements run on
// their generic plans (SET LOCAL lasts until the COMMIT): each is one
// primary-key probe per changed record whatever the values (see
// sql/recallcache.sql), and planning them for each call's values, as
// PostgreSQL does for the first five executions on every connection, cost
// 0.2-1 ms a refresh, so the first refreshes after a write on each pool
// connection took 0.4-1.3 ms instead of 0.2-0.3 (traced in
// BenchmarkRecallDialog's writes phase).
func (s *Store) readDelta(ctx context.Context, scope memorykit.Scope, from int64) (scopeDelta, error) {
	args := []any{scope.TenantID, string(scope.SubjectType), scope.SubjectID, from}
	// See sql/recallcache.sql for why the changed rows are read by id.
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	batch.Queue(`SELECT set_config('plan_cache_mode', $1, true)`, s.planCacheMode())
	batch.Queue(s.stmt("scope_version"), args[:3]...)
	batch.Queue(s.stmt("read_delta_changed"), args...)
	batch.Queue(s.stmt("read_delta_records"), args...)
	batch.Queue(s.stmt("read_delta_embeddings"), args...)
	batch.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, batch)
	defer func() { _ = br.Close() }()
	var d scopeDelta
	for range 2 { // BEGIN, SET LOCAL
		if _, err := br.Exec(); err != nil {
			return d, err
		}
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
// the background, unless this Store wrote to it since it opened: see
// recallCache). It does nothing when the cache is off or the Scope does
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
