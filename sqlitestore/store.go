// Package sqlitestore keeps every memorykit store in one SQLite file, so an
// embedded Host (a CLI assistant, a desktop agent, a small team server)
// keeps its memory across restarts without a database server. It runs on
// modernc.org/sqlite: pure Go, no cgo, no system SQLite.
//
// # Design
//
// The file is the authority; the process keeps a mirror of the Scopes in
// use. Open reads the schema version, the lease sequence and the record
// count, and nothing else, so its time does not grow with the file. The
// first call about a Scope loads that Scope's rows (records, revisions,
// vectors, embedding leases and tokens, jobs, an unfinished purge) into a
// memorystore built with memorystore.NewJournaled, and the call is
// answered by that mirror, so the lifecycle rules, the full-text rule and
// recall ranking are memorystore's own code rather than a second
// implementation that could drift (the storetest suites and the
// differential tests hold all three stores to one behaviour).
//
// Two calls do not wait for a load. A Recall of a Scope not in the mirror
// is answered from the file: an FTS5 recall index holds hashes of each
// active record's terms and key (never the text), columns hold what
// recallability and ranking read, and the vectors of the Scope are found
// through the records' recall index; the answer is the one the loaded
// Scope gives, and the Scope then loads in the background. Create and
// CreateBatch read only what memorystore's create rules read (the Scope's
// unfinished purge and its active records holding the keys written) and
// drop it after the commit, so a Scope that is only written is never
// loaded.
//
// Config.MemoryBudget (DefaultMemoryBudget, 256 MiB, when zero) bounds the
// estimated heap of the Scopes mirrored: after a call, the least recently
// used Scopes other than the ones it needed leave the mirror until the
// estimate is within the budget; a later call about one of them loads it
// again. The estimate counts about 0.9 KB per record plus twice its text,
// a stored revision beyond the create, and 4 bytes per vector dimension.
// docs/sqlite.md says how to size the budget.
//
// Calls across Scopes ask the file which Scopes take part and load only
// those: LeaseEmbeddings loads the Scopes of the first records (in ID
// order, as memorystore leases) that wait for a vector, LeaseJobs the
// Scopes with queued jobs, ReapJobLeases those with leased jobs,
// ReapEmbeddingLeases those with expired leases, DeleteAllEmbeddings those
// with rows of the profile; PendingEmbeddings and CountJobs are counted by
// SQL. A call naming a record or job id it may not own (Create with an
// ID, EnqueueJob, CompleteJob) also loads the Scope that holds the id, so
// memorystore sees the id taken. A poll that found no embedding work is
// not repeated until something is written or a retry time comes.
//
// Every write runs under one writer lock: the mirror applies it, its
// journal names what changed (records with their revisions, vectors,
// embedding leases and fencing tokens, jobs, unfinished purges, the lease
// sequence), and those rows are written in ONE SQLite transaction before
// the call returns. A write is acknowledged only after its transaction
// committed. Readers of loaded Scopes take the lock shared, so nobody sees
// a change the file does not hold yet; a call whose Scopes must be loaded
// takes it exclusively. If a commit fails, memory is ahead of the file;
// the store then poisons itself: every later call fails with
// ErrUnavailable and reason ReasonPoisoned until the file is opened again,
// which reloads what was committed.
//
// The writer lock is held across the whole write, so the Host's
// ContentValidator runs under it (memorystore runs it before taking its own
// lock): a slow validator delays other calls on the same store. Commits are
// one at a time, in the order the writes happened; a write waiting for the
// lock does not watch its context until it holds it.
//
// Why a mirror rather than SQL queries: the lease, erase and purge rules
// are subtle enough that one implementation of them is worth the memory.
// The price is that a Scope is loaded whole by any call other than a
// recall or a create: its first such call after Open (or after it was
// evicted) reads all its rows.
//
// Recall is the exception, so that a Scope's first recall does not wait
// for that load: a recall of a Scope the mirror does not hold is answered
// from the file, and the Scope then loads on a goroutine of its own (Close
// waits for it). The file keeps a recall index for that: an FTS5 table
// with one row per active record, whose tokens are hashes of the record's
// index terms and key prefixed by a hash of its Scope (no text), and the
// record's update time and effective window in columns. The answer is
// memorystore's: the same recallable records, full-text rule and IDF
// weights, exact-key order, float64 cosine similarities and tie-breaks
// (the evicting conformance and differential runs compare them on every
// such recall). Every commit keeps the index in step with the records. A
// Scope written before the index existed joins it the first time it is
// loaded; until then its recalls load it, as before.
//
// # Durability and sharing
//
// The file is in WAL mode. Config.Sync chooses synchronous=FULL (the
// default: the WAL is fsynced at every commit, so an acknowledged write
// survives power loss) or synchronous=NORMAL (a commit survives the
// process being killed, since the WAL lives in the operating system's
// cache, but the last commits may be lost on power loss).
//
// One process owns a file: the connection runs in EXCLUSIVE locking mode
// and takes the write lock while opening, and keeps it until Close. A
// second Open of the same file, from this process or another, fails with
// ErrUnavailable and reason ReasonLocked. Sharing could not be safe anyway:
// each process would answer from its own mirror.
//
// # Schema
//
// The schema is versioned like pgstore's: numbered migrations embedded
// from migrations/NNNN_name.up.sql, recorded in schema_migrations. Open
// applies the missing ones in one IMMEDIATE transaction (SQLite's write
// lock, so two openers never both migrate) and refuses a file that records
// a newer or unknown version (ErrIntegrity, ReasonSchemaVersionNewer or
// ReasonSchemaVersionUnknown) without changing it. FileSchemaVersion reads
// the version without migrating.
//
// # Erasure
//
// Erase rewrites the record's row and every revision row in place (no
// content is left in their values), deletes its vectors and leases, and
// checkpoints the WAL so the old row versions leave it; secure_delete
// zeroes freed space. Purge additionally runs VACUUM and a TRUNCATE
// checkpoint, so the file holds no page that ever held the purged text.
// VerifyErased scans the raw bytes of the file and its WAL for a text.
// The recall index holds hashes of an erased record's terms in its pages
// until its segments merge (they are deleted at once; SQLite merges them
// later); Purge merges the whole index before it vacuums.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/clock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/scopebudget"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
)

// Reason codes of sqlitestore failures callers may branch on.
const (
	// ReasonLocked: another store (in this or another process) has the
	// file open.
	ReasonLocked = "database_locked"
	// ReasonPoisoned: an earlier commit failed, so the in-process mirror
	// may hold a change the file does not; reopen the file.
	ReasonPoisoned = "store_poisoned"
	// ReasonClosed: the store was closed.
	ReasonClosed = "store_closed"
)

// SyncMode is the SQLite synchronous setting of the WAL.
type SyncMode int

const (
	// SyncFull fsyncs the WAL at every commit (synchronous=FULL): an
	// acknowledged write survives a crash of the process and of the
	// machine. It is the default.
	SyncFull SyncMode = iota
	// SyncNormal (synchronous=NORMAL) survives a crash of the process but
	// may lose the last commits on power loss. Tests use it for speed.
	SyncNormal
)

// Config is what Open needs. Clock, Guard and Tombstones are required, as
// for memorystore.
type Config struct {
	// Clock is the only source of "now" for timestamps, leases and retry
	// times.
	Clock clock.Clock
	// Guard validates every write (Limits and the Host's ContentValidator).
	Guard *memorykit.WriteGuard
	// Tombstones digests the key of every erased record.
	Tombstones *memorykit.TombstoneKeyer
	// MaxRecords is ignored: the file holds any number of records, and
	// MemoryBudget, not a count, bounds what is held in memory. Zero or a
	// positive value is accepted (a negative one is a configuration error,
	// as for memorystore).
	MaxRecords int
	// MemoryBudget bounds, in bytes, the estimated heap of the Scopes
	// mirrored in memory (see the package documentation). Zero means
	// DefaultMemoryBudget; negative is invalid. The Scopes one call needs
	// are loaded whatever the budget, so a single Scope larger than the
	// budget still works, and is evicted when the next call needs others.
	MemoryBudget int64
	// Sync is the durability of a commit; the zero value is SyncFull.
	Sync SyncMode
}

// DefaultMemoryBudget is the MemoryBudget zero stands for: 256 MiB.
const DefaultMemoryBudget int64 = 256 << 20

// Store implements storekit.Store on one SQLite file.
type Store struct {
	path string
	db   *sql.DB
	conn *sql.Conn
	mem  *memorystore.Store

	// mu: writers hold it exclusively from the mirror's change to the
	// commit; readers hold it shared.
	mu sync.RWMutex
	// failed is set once a commit failed or the store was closed.
	failed   string
	leaseSeq int64
	stmts    statements
	// rowsOf says, per record, which of the embeddings, embedding_leases
	// and embedding_tokens tables hold rows of it (rowEmbeddings...), so a
	// commit deletes only where there is something to delete. Records
	// without any are absent.
	rowsOf map[string]uint8
	memCfg memorystore.Config
	// mirror holds every Scope in the mirror with its estimated bytes, in
	// use order, against the effective Config.MemoryBudget. Entries come
	// and go only with mu held for writing; a reader holding mu shared
	// marks use under useMu.
	mirror *scopebudget.Ledger[memorykit.Scope, struct{}]
	useMu  sync.Mutex
	// records is how many records the file holds (read by Records
	// without the lock); generation counts commits, so an answer read
	// from the file can be kept until the next one.
	records    atomic.Int64
	generation uint64
	// noLease caches, per profile, that a scan for embedding work found
	// none at a generation, until a retry time passes (see leaseScopes);
	// pendingCount caches PendingEmbeddings' count per profile.
	noLease      map[string]noWork
	pendingCount map[string]countAt
	// indexed holds the loaded Scopes the file's recall index holds, whose
	// writes keep it; pendingMarks those marked in the next commit.
	// sqlMu serializes readers' queries of the file (sqlRecall) while they
	// hold mu shared. loads tracks background loads (see loadSoon).
	indexed      map[memorykit.Scope]bool
	pendingMarks []memorykit.Scope
	// parts holds the Scopes of which a create loaded only a part; they
	// leave the mirror before the create returns (see createWrite).
	parts   map[memorykit.Scope]*partialScope
	sqlMu   sync.Mutex
	loadMu  sync.Mutex
	loads   sync.WaitGroup
	loading map[memorykit.Scope]bool
	closing bool
	// noBackgroundLoad, set only by this package's tests, keeps Recall
	// from loading a Scope it answered from the file.
	noBackgroundLoad bool
	// afterWrite, set only by this package's tests, runs after every
	// write's commit with s.mu held (they check the file reloads to the
	// mirror's state).
	afterWrite func()
}

var (
	_ storekit.Store                = (*Store)(nil)
	_ storekit.Purger               = (*Store)(nil)
	_ storekit.BatchCreator         = (*Store)(nil)
	_ storekit.EmbeddingBatchPutter = (*Store)(nil)
	_ storekit.ScopedPendingCounter = (*Store)(nil)
)

// Open opens (creating it when missing) the SQLite file at path, applies
// the missing schema migrations and loads the file. A file another store
// holds open is ErrUnavailable with reason ReasonLocked; a file of a newer
// schema is ErrIntegrity with reason ReasonSchemaVersionNewer.
func Open(ctx context.Context, path string, cfg Config) (*Store, error) {
	const op = "sqlitestore.open"
	if path == "" {
		return nil, memorykit.ConfigError(op, "path", "missing")
	}
	if cfg.Sync != SyncFull && cfg.Sync != SyncNormal {
		return nil, memorykit.ConfigError(op, "sync", "unknown")
	}
	// Check the rest of the configuration before touching the file.
	if _, err := memorystore.New(memorystore.Config{Clock: cfg.Clock, Guard: cfg.Guard, Tombstones: cfg.Tombstones, MaxRecords: cfg.MaxRecords}); err != nil {
		return nil, err
	}
	if cfg.MemoryBudget < 0 {
		return nil, memorykit.ConfigError(op, "memory_budget", "negative")
	}
	migs, err := loadMigrations()
	if err != nil {
		return nil, &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: "embedded_migrations_invalid", Err: err}
	}
	// The file holds other people's memories: a new one is readable by
	// its owner only (SQLite gives its -wal and -shm files the same
	// mode). An existing file keeps the mode its operator chose.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, memorykit.WrapError(op, memorykit.ErrUnavailable, "file_unusable", err)
	}
	_ = f.Close()
	// The path goes in a file: URI, escaped, so that no character of it
	// ('?', '#', '%') is read as a URI parameter.
	db, err := sql.Open("sqlite", fileURI(path, ""))
	if err != nil {
		return nil, mapErr(op, err)
	}
	// One connection does everything, under the store's lock; it holds
	// the file's exclusive lock for the life of the store.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{path: path, db: db}
	if err := s.open(ctx, cfg, migs); err != nil {
		s.closeDB()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, cfg Config, migs []migration) error {
	const op = "sqlitestore.open"
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return mapErr(op, err)
	}
	s.conn = conn
	sync := "FULL"
	if cfg.Sync == SyncNormal {
		sync = "NORMAL"
	}
	for _, p := range []string{
		// A second opener fails fast instead of waiting for a lock that
		// is held until Close.
		"PRAGMA busy_timeout = 200",
		"PRAGMA locking_mode = EXCLUSIVE",
		"PRAGMA journal_mode = WAL",
		"PRAGMA synchronous = " + sync,
		"PRAGMA secure_delete = ON",
		// SQLite's own page cache (16 MiB, beside the mirror's budget)
		// keeps the indexes a create and a recall from the file walk.
		"PRAGMA cache_size = -16384",
	} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return mapErr(op, err)
		}
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return mapErr(op, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "wal_unavailable"}
	}
	if err := migrate(ctx, conn, migs, cfg.Clock.Now()); err != nil {
		return err
	}
	if err := s.prepare(ctx); err != nil {
		return err
	}
	// Open reads what every call needs whatever its Scope (the lease
	// sequence) and the record count it reports; the Scopes themselves are
	// loaded when first used.
	var seq, records int64
	if err := s.each(ctx, `SELECT name, value FROM meta WHERE name IN ('lease_seq', 'records')`, func(rows *sql.Rows) error {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return err
		}
		if name == "records" {
			records = v
		} else {
			seq = v
		}
		return nil
	}); err != nil {
		return mapErr(op, err)
	}
	s.records.Store(records)
	s.noLease = make(map[string]noWork)
	s.pendingCount = make(map[string]countAt)
	s.leaseSeq = seq
	budget := cfg.MemoryBudget
	if budget == 0 {
		budget = DefaultMemoryBudget
	}
	s.mirror = scopebudget.New[memorykit.Scope, struct{}](budget)
	s.rowsOf = make(map[string]uint8)
	s.indexed = make(map[memorykit.Scope]bool)
	s.parts = make(map[memorykit.Scope]*partialScope)
	s.loading = make(map[memorykit.Scope]bool)
	// The mirror holds only the Scopes loaded, so memorystore's count
	// bound would count those; the file holds any number of records.
	s.memCfg = memorystore.Config{Clock: cfg.Clock, Guard: cfg.Guard, Tombstones: cfg.Tombstones, MaxRecords: math.MaxInt}
	mem, err := memorystore.NewJournaled(s.memCfg, memorystore.Image{LeaseSeq: seq})
	if err != nil {
		return err
	}
	s.mem = mem
	return nil
}

// Records is how many records the file holds, of every status (a purge
// erases records but keeps their tombstones): a content-free number a
// Host may print at start. Open reads it from the file without counting.
func (s *Store) Records() int64 { return s.records.Load() }

// Path is the file the store holds.
func (s *Store) Path() string { return s.path }

// Close releases the file (and its lock). Every later call fails with
// ErrUnavailable, reason ReasonClosed. Closing twice is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.failed == ReasonClosed {
		s.mu.Unlock()
		return nil
	}
	s.failed = ReasonClosed
	err := s.closeDB()
	s.mu.Unlock()
	s.loadMu.Lock()
	s.closing = true
	s.loadMu.Unlock()
	// A background load still waiting for the lock finds the store
	// closed and stops.
	s.loads.Wait()
	return err
}

func (s *Store) closeDB() error {
	s.stmts.close()
	var err error
	if s.conn != nil {
		err = s.conn.Close()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return mapErr("sqlitestore.close", err)
	}
	return nil
}

// broken is the error of a call on a poisoned or closed store, or nil.
// The caller holds s.mu.
func (s *Store) broken(op string) error {
	if s.failed == "" {
		return nil
	}
	return memorykit.NewError(op, memorykit.ErrUnavailable, s.failed)
}

// read runs fn on the mirror once the Scopes it needs are loaded: with
// the lock held shared when they are, else with it held exclusively while
// they load. scopes, when not nil, names them; it runs with the lock held.
func read[T any](s *Store, op string, scopes func() ([]memorykit.Scope, error), fn func() (T, error)) (T, error) {
	var zero T
	s.mu.RLock()
	if err := s.broken(op); err != nil {
		s.mu.RUnlock()
		return zero, err
	}
	need, err := scopesOf(scopes)
	if err != nil {
		s.mu.RUnlock()
		return zero, mapErr(op, err)
	}
	if s.allLoaded(need) {
		defer s.mu.RUnlock()
		v, err := fn()
		return v, rename(err)
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.broken(op); err != nil {
		return zero, err
	}
	// A writer may have run meanwhile: ask again.
	if need, err = scopesOf(scopes); err != nil {
		return zero, mapErr(op, err)
	}
	if err := s.ensureLocked(op, need); err != nil {
		return zero, err
	}
	v, err := fn()
	s.evictLocked(need)
	return v, rename(err)
}

// write loads the Scopes scopes names, runs fn on the mirror and commits
// what it changed before returning. fn's own error is returned once its
// changes (if any) are committed; a failed commit poisons the store.
func write[T any](s *Store, op string, scopes func() ([]memorykit.Scope, error), fn func() (T, error)) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero T
	if err := s.broken(op); err != nil {
		return zero, err
	}
	need, err := scopesOf(scopes)
	if err != nil {
		return zero, mapErr(op, err)
	}
	if err := s.ensureLocked(op, need); err != nil {
		return zero, err
	}
	v, err := fn()
	if cerr := s.commitLocked(op, false); cerr != nil {
		return zero, cerr
	}
	if s.afterWrite != nil {
		s.afterWrite()
	}
	s.evictLocked(need)
	return v, rename(err)
}

func scopesOf(f func() ([]memorykit.Scope, error)) ([]memorykit.Scope, error) {
	if f == nil {
		return nil, nil
	}
	return f()
}

// rename gives a mirror error this package's op prefix.
func rename(err error) error {
	var me *memorykit.Error
	if errors.As(err, &me) && strings.HasPrefix(me.Op, "memorystore.") {
		me.Op = "sqlitestore." + strings.TrimPrefix(me.Op, "memorystore.")
	}
	return err
}

// mapErr turns a SQLite or database/sql failure into a typed error; the
// message of the cause stays in Err, never in the reason.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var me *memorykit.Error
	if errors.As(err, &me) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return memorykit.WrapError(op, memorykit.ErrUnavailable, ReasonLocked, err)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return memorykit.WrapError(op, memorykit.ErrIntegrity, "database_corrupt", err)
		case sqlite3.SQLITE_FULL:
			return memorykit.WrapError(op, memorykit.ErrUnavailable, "disk_full", err)
		}
	}
	return memorykit.WrapError(op, memorykit.ErrUnavailable, "sqlite_failed", err)
}

// fileURI is the SQLite URI of the file at path, with query (without its
// '?') when not empty.
func fileURI(path, query string) string {
	u := "file:" + (&url.URL{Path: path}).EscapedPath()
	if query != "" {
		u += "?" + query
	}
	return u
}
