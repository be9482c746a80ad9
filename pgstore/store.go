// Package pgstore implements storekit.Store on PostgreSQL with pgvector,
// using pgx/v5.
//
// Open creates and owns a connection pool; New wraps a pool the caller owns.
// Both apply the embedded, versioned migrations under an advisory lock,
// install the pgvector extension when it is missing (CREATE EXTENSION IF NOT
// EXISTS vector, which needs a role allowed to do so on first setup), refuse
// a schema version this package does not know, and check that a vector value
// survives a round trip.
//
// Every table lives in one PostgreSQL schema (Config.Schema, "memorykit" by
// default), so several independent stores can share a database. Time always
// comes from the injected clock and is passed into SQL as a parameter; the
// database's now() is never used.
//
// Schema versions (the files in migrations/ say why each looks as it does):
// 1, the tables; 2, the recall layout (per-scope document frequencies, a
// scope-tagged GIN index, half-precision vector candidates); 3, embedding
// lease rows that outlive the put; 4, the queue of records that may need an
// embedding; 5, keys re-keyed to the canonical form of issue 10 (done in
// Go inside the migration); 6, erasure (the erase marks of leased jobs,
// purge progress); 7, lease fencing tokens and the reap and hand-back
// counters of jobs; 8, a version per Scope bumped by triggers in every
// transaction that changes its records or embeddings, which the
// in-process recall cache (Config.RecallCacheBytes) reads to know when its
// copy of a Scope is stale; 9, the Scope version of each record's latest
// change, so the cache refreshes a stale copy by the changed rows alone.
// Opening a store on an older schema applies the missing
// versions in order; 2, 4 and 5 fill or rewrite rows in time proportional
// to their number. Open and New also replace the plain key of any tombstone
// erased before schema 6 by its keyed digest.
//
// Every version has a down file too: MigrateDown takes a schema back to
// an earlier version (for an operator rolling a deployment back). The
// static SQL lives in embedded sql/*.sql files run by name, and the one
// statement generated at run time, full-text recall, in recallsql.go; see
// sql.go for the layout.
//
// Recall ranks in an in-process copy of each recently recalled or written
// Scope (the recall cache, on by default within Config.RecallCacheBytes),
// kept coherent with the database by the Scope versions above: a recall
// costs one round trip when nothing changed or when the change was this
// Store's own write, two when another process changed the Scope, and
// always sees every change committed before it began, by any process.
// Config.SQLRecall ranks every recall in SQL instead.
//
// Errors are *memorykit.Error values. Driver messages are never printed,
// because they may quote stored values: only SQLSTATE codes appear as reason
// codes. Connection failures, serialization failures, deadlocks and server
// shutdowns are recoverable (Retry is set and the Kind is ErrUnavailable).
package pgstore

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// DefaultSchema is the PostgreSQL schema used when Config.Schema is empty.
const DefaultSchema = "memorykit"

// Config configures a Store. Clock, Guard and Tombstones are required; there are no
// permissive defaults for them.
type Config struct {
	// Clock is the source of every timestamp, lease expiry and "now" the
	// store uses, including the time passed into SQL.
	Clock clock.Clock
	// Guard validates every write before it touches the database.
	Guard *memorykit.WriteGuard
	// Tombstones digests the key of every erased record (see
	// memorykit.TombstoneKeyer). Required: there is no default secret.
	Tombstones *memorykit.TombstoneKeyer
	// Schema is the PostgreSQL schema holding the tables; it is created if
	// missing. Empty means DefaultSchema. It must match [a-z_][a-z0-9_]*
	// and be at most 63 bytes.
	Schema string
	// MaxConns, when positive, bounds the pool Open creates. Zero means
	// DefaultMaxConns(Workers). At most 10000. It is ignored by New.
	MaxConns int32
	// Workers is the number of background workers (embedding, extraction)
	// sharing the store; it sizes the default pool (see DefaultMaxConns).
	// Between 0 and 10000. It is ignored by New and when MaxConns is set.
	Workers int
	// CancelGrace is how long Open's pool waits for the server to cancel
	// a statement whose context ended before closing the connection
	// instead (see keepOnCancel). A statement that ends by itself while
	// its cancel request is on the way returns once the server has taken
	// the request, at most CancelGrace later; a connection whose cancel
	// request the server did not take within it is closed rather than
	// reused, so a late request never cancels another caller's
	// statement. Zero means
	// DefaultCancelGrace; negative is invalid. It is ignored by New,
	// whose caller configures its pool.
	CancelGrace time.Duration
	// LockTimeout is the longest any statement of Open's pool waits for a
	// lock (the session's lock_timeout, set when each connection opens):
	// a statement still waiting then fails with a recoverable
	// ErrUnavailable (reason "sqlstate_55p03"), so a transaction frozen
	// while holding a row cannot stall the requests and workers behind it
	// for longer. Zero means DefaultLockTimeout; negative, below a
	// millisecond or above MaxSessionTimeout is invalid. It is ignored by
	// New, whose caller configures its pool.
	LockTimeout time.Duration
	// IdleInTransactionTimeout is how long a session of Open's pool may
	// sit idle inside an open transaction before the server ends the
	// session, rolling the transaction back and releasing its locks (the
	// session's idle_in_transaction_session_timeout). Zero means
	// DefaultIdleInTransactionTimeout; negative, below a millisecond or
	// above MaxSessionTimeout is invalid. It is ignored by New.
	IdleInTransactionTimeout time.Duration
	// RecallCacheBytes is the memory budget in bytes of the in-process
	// recall cache, on unless SQLRecall is set: Recall reads the Scope's
	// version (one round trip) and ranks in a per-Scope copy of its active
	// records and vectors, brought up to date by the rows changed since
	// (a second round trip) when the version moved, instead of ranking in
	// SQL. After this Store's own write to a cached Scope, the version and
	// the rows come in one round trip; a Scope this Store writes while it
	// is not cached is loaded in the background into the room the budget
	// has free, so recalls after ingest find it cached. Results are those
	// of the SQL path (see recallcache.go for the one documented
	// difference at scale). Scopes are evicted least recently used first
	// to stay within the budget; a Scope larger than the budget is ranked
	// in SQL. Zero means DefaultRecallCacheBytes; negative is invalid.
	RecallCacheBytes int64
	// SQLRecall turns the recall cache off: every recall ranks in one SQL
	// statement, the path the cache is checked against, and no copy of
	// any Scope is kept in process memory.
	SQLRecall bool
}

// DefaultRecallCacheBytes is the recall cache budget RecallCacheBytes zero
// stands for: 128 MiB, about 40,000 records of a few hundred words with
// 384-dimensional vectors (see docs/benchmarks.md for the bytes a record
// takes).
const DefaultRecallCacheBytes = 128 << 20

var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (c Config) check(op string) (string, error) {
	if c.Clock == nil {
		return "", memorykit.ConfigError(op, "clock", "missing")
	}
	if c.Guard == nil {
		return "", memorykit.ConfigError(op, "guard", "missing")
	}
	if c.Tombstones == nil {
		return "", memorykit.ConfigError(op, "tombstones", "missing")
	}
	if c.MaxConns < 0 {
		return "", memorykit.ConfigError(op, "max_conns", "negative")
	}
	if c.MaxConns > maxConnsLimit {
		return "", memorykit.ConfigError(op, "max_conns", "too_large")
	}
	if c.Workers < 0 {
		return "", memorykit.ConfigError(op, "workers", "negative")
	}
	if c.Workers > maxConnsLimit {
		return "", memorykit.ConfigError(op, "workers", "too_large")
	}
	if c.CancelGrace < 0 {
		return "", memorykit.ConfigError(op, "cancel_grace", "negative")
	}
	if err := checkSessionTimeout(op, "lock_timeout", c.LockTimeout); err != nil {
		return "", err
	}
	if err := checkSessionTimeout(op, "idle_in_transaction_timeout", c.IdleInTransactionTimeout); err != nil {
		return "", err
	}
	if c.RecallCacheBytes < 0 {
		return "", memorykit.ConfigError(op, "recall_cache_bytes", "negative")
	}
	return schemaName(op, c.Schema)
}

// schemaName is schema, or DefaultSchema when empty, checked to be a
// name pgstore may use.
func schemaName(op, schema string) (string, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaPattern.MatchString(schema) || strings.HasPrefix(schema, "pg_") {
		return "", memorykit.ConfigError(op, "schema", "bad_name")
	}
	return schema, nil
}

// Store is a storekit.Store on PostgreSQL. It is safe for concurrent use,
// also by several processes sharing one database and schema.
type Store struct {
	// pool is the database handle every statement outside the Store's own
	// transactions goes to: the connection pool, or in the package's
	// tests one transaction (see dbtx).
	pool dbtx
	// conns is the connection pool (nil on a transaction), for PoolStats
	// and Close.
	conns    *pgxpool.Pool
	ownsPool bool
	clk      clock.Clock
	guard    *memorykit.WriteGuard
	keyer    *memorykit.TombstoneKeyer
	schema   string
	// rep fills the {schema} and {ext} placeholders of SQL templates.
	rep *strings.Replacer
	// stmts are the statements of sql/*.sql rendered for this store.
	stmts map[string]string
	// recallSQL holds the rendered recall statements by number of query
	// lexemes (see recallSQLFor).
	recallSQL []string
	// profiles remembers the embedding profiles known to be registered
	// (see registerProfile).
	profiles  sync.Map
	closeOnce sync.Once
	// cache is the recall cache (nil: off, Config.SQLRecall).
	cache *recallCache
	// distributed: the schema is distributed by Citus (Distribute), so
	// statements take the forms Citus can plan (see setDistributed).
	distributed bool
}

var (
	_ storekit.Store  = (*Store)(nil)
	_ storekit.Purger = (*Store)(nil)
)

// Open connects to dsn with a pool the Store creates and owns, migrates the
// schema and checks pgvector. Close closes that pool. The pool registers
// the pgvector types on every connection (pgxvec.RegisterTypes in
// AfterConnect), has Config.MaxConns connections (DefaultMaxConns when
// zero), and cancels the statement of a context that ends on the server
// while keeping the connection (see Config.CancelGrace).
//
// A DSN that does not parse is ErrInvalidConfig (the DSN itself is never
// reported, since it may hold a password). While the database cannot take
// connections (refused, reset, SQLSTATE 57P03 during a restart) Open tries
// again with backoff (100 ms doubling to 5 s) on cfg.Clock for as long as
// ctx lives, and then returns the last failure, a recoverable
// ErrUnavailable; credentials or a database name the server refuses fail
// at once. A missing or uninstallable
// pgvector is ErrUnavailable with reason "pgvector_unavailable"; a schema
// written by a newer or unknown version of this package is ErrIntegrity
// with reason "schema_version_newer" or "schema_version_unknown".
func Open(ctx context.Context, dsn string, cfg Config) (*Store, error) {
	const op = "pgstore.open"
	schema, err := cfg.check(op)
	if err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error can quote the DSN, password included: keep it out.
		return nil, memorykit.ConfigError(op, "dsn", "unparsable")
	}
	pcfg.MaxConns = cfg.poolSize()
	keepOnCancel(pcfg, cfg.cancelGrace())

	// Migrate on a connection of its own first: the pool's AfterConnect
	// needs the extension to exist before it can register the vector type.
	conn, err := connectRetry(ctx, op, cfg.Clock, pcfg.ConnConfig)
	if err != nil {
		return nil, err
	}
	ext, err := migrate(ctx, conn, schema, cfg.Clock)
	var distributed bool
	if err == nil {
		distributed, err = afterMigrate(ctx, op, conn, schema)
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_ = conn.Close(closeCtx)
	cancel()
	if err != nil {
		return nil, err
	}

	// The session timeouts apply to the pool's connections only: the
	// migration above waits on an advisory lock for as long as another
	// process migrates.
	setSessionTimeouts(pcfg.ConnConfig, cfg.lockTimeout(), cfg.idleInTransactionTimeout())
	pcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		return pgxvec.RegisterTypes(ctx, c)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, memorykit.ConfigError(op, "dsn", "pool_config")
	}
	s := newStore(pool, pool, true, cfg, schema, ext)
	s.setDistributed(distributed)
	if err := s.checkVector(ctx, op); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.digestLegacyTombstones(ctx, op); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// New builds a Store on a pool the caller owns; Close leaves that pool
// open. It migrates the schema and checks pgvector like Open.
//
// The pool must register the pgvector types on every connection, for
// example with
//
//	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
//		return pgxvec.RegisterTypes(ctx, c) // github.com/pgvector/pgvector-go/pgx
//	}
//
// which in turn needs the vector extension to exist before the pool opens
// its first connection (run CREATE EXTENSION vector during setup, or Open
// once). New reports ErrInvalidConfig with reason
// "pgvector_types_not_registered" when a connection of the pool lacks them.
func New(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Store, error) {
	const op = "pgstore.new"
	schema, err := cfg.check(op)
	if err != nil {
		return nil, err
	}
	if pool == nil {
		return nil, memorykit.ConfigError(op, "pool", "missing")
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, connectErr(op, err)
	}
	ext, err := migrate(ctx, conn.Conn(), schema, cfg.Clock)
	var distributed bool
	if err == nil {
		distributed, err = afterMigrate(ctx, op, conn.Conn(), schema)
	}
	if err == nil {
		err = checkRegistered(ctx, op, conn.Conn(), ext)
	}
	// A connection that failed to drop the migration lock was closed by
	// migrate; the pool discards closed connections on release.
	conn.Release()
	if err != nil {
		return nil, err
	}
	s := newStore(pool, pool, false, cfg, schema, ext)
	s.setDistributed(distributed)
	if err := s.checkVector(ctx, op); err != nil {
		return nil, err
	}
	if err := s.digestLegacyTombstones(ctx, op); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore builds a Store on db; conns is the pool behind db, or nil when
// db is a transaction.
func newStore(db dbtx, conns *pgxpool.Pool, owns bool, cfg Config, schema, ext string) *Store {
	s := &Store{
		pool:     db,
		conns:    conns,
		ownsPool: owns,
		clk:      cfg.Clock,
		guard:    cfg.Guard,
		keyer:    cfg.Tombstones,
		schema:   schema,
		rep:      strings.NewReplacer("{schema}", quoteIdent(schema), "{ext}", quoteIdent(ext)),
	}
	s.stmts = renderStatements(s.rep)
	for k := 0; k <= maxInlineTerms+1; k++ {
		s.recallSQL = append(s.recallSQL, s.q(recallStatement(k)))
	}
	if !cfg.SQLRecall {
		budget := cfg.RecallCacheBytes
		if budget == 0 {
			budget = DefaultRecallCacheBytes
		}
		s.cache = newRecallCache(cfg.Clock, budget)
	}
	return s
}

// q renders a SQL template for this store's schema.
func (s *Store) q(tmpl string) string { return s.rep.Replace(tmpl) }

// checkRegistered verifies that conn can encode the vector type with the
// pgvector-go codec.
func checkRegistered(ctx context.Context, op string, conn *pgx.Conn, ext string) error {
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT to_regtype($1)::oid", quoteIdent(ext)+".vector").Scan(&oid); err != nil {
		return mapErr(op, err)
	}
	t, ok := conn.TypeMap().TypeForOID(oid)
	if !ok {
		return memorykit.ConfigError(op, "pool", "pgvector_types_not_registered")
	}
	if _, isVec := t.Codec.(*pgxvec.VectorCodec); !isVec {
		return memorykit.ConfigError(op, "pool", "pgvector_types_not_registered")
	}
	return nil
}

// checkVectorSQL, when a test sets it, replaces the round-trip statement
// of checkVector (a template with {ext}), so the test can make the
// database answer wrongly and watch Open fail closed.
var checkVectorSQL string

// checkVector sends a vector through the database and back. A statement
// that fails is ErrIntegrity "vector_round_trip_failed" (or the
// recoverable error of a lost connection); a vector that comes back with
// another length or other values is ErrIntegrity
// "vector_round_trip_mismatch".
func (s *Store) checkVector(ctx context.Context, op string) error {
	want := []float32{1, -2.5, 0.125, 3e-5}
	var got pgvector.Vector
	q := s.stmt("check_vector")
	if checkVectorSQL != "" {
		q = s.q(checkVectorSQL)
	}
	if err := s.pool.QueryRow(ctx, q, pgvector.NewVector(want)).Scan(&got); err != nil {
		me := mapErr(op, err).(*memorykit.Error)
		if !me.Retry && ctx.Err() == nil {
			me.Kind, me.Reason = memorykit.ErrIntegrity, "vector_round_trip_failed"
		}
		return me
	}
	g := got.Slice()
	if len(g) != len(want) {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: "vector_round_trip_mismatch"}
	}
	for i := range want {
		if g[i] != want[i] {
			return &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: "vector_round_trip_mismatch"}
		}
	}
	return nil
}

// Close stops the recall cache's background loads (and waits for them),
// then closes the pool when the Store created it (Open); a caller-owned
// pool (New) stays open. Calling Close twice is harmless. Stop every worker
// that uses the Store before closing it.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		if s.cache != nil {
			s.cache.close()
		}
		if s.ownsPool {
			s.conns.Close()
		}
	})
}

// Schema returns the PostgreSQL schema holding the store's tables.
func (s *Store) Schema() string { return s.schema }

// now is the store's clock time as PostgreSQL stores it: UTC, microseconds.
func (s *Store) now() time.Time { return pgTime(s.clk.Now()) }

// pgTime truncates t to PostgreSQL's microsecond precision, in UTC.
func pgTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// quoteIdent quotes a PostgreSQL identifier.
func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }
