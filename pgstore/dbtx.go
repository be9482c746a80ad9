package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/goagents/memorykit"
)

// dbtx is what a Store needs of its database handle: the part of
// *pgxpool.Pool that pgstore calls outside its own transactions. Open and
// New hand the Store a pool. The package's tests hand it one transaction
// instead (newTxStore), so that a conformance case that needs no
// concurrency runs on an already migrated schema and leaves nothing behind
// when the transaction is rolled back; every transaction the Store starts
// on it is then a savepoint (pgx.Tx.Begin).
//
// The transaction form is deliberately not exported: a Store on one
// transaction is one session, so it must not be called concurrently, and
// Purge, which runs VACUUM outside any transaction, fails on it.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// txDB is a dbtx on one open transaction.
type txDB struct{ pgx.Tx }

// BeginTx starts a savepoint. The options cannot apply to a subtransaction
// (its isolation and access mode are those of the enclosing transaction)
// and are ignored: within one transaction nothing else writes.
func (t txDB) BeginTx(ctx context.Context, _ pgx.TxOptions) (pgx.Tx, error) {
	return t.Begin(ctx)
}

// newTxStore builds a Store whose every statement runs in tx, for tests.
// The schema must already be migrated to SchemaVersion (by Open or New);
// newTxStore neither migrates nor checks pgvector, and the caller owns tx.
func newTxStore(ctx context.Context, tx pgx.Tx, cfg Config) (*Store, error) {
	const op = "pgstore.new_tx"
	schema, err := cfg.check(op)
	if err != nil {
		return nil, err
	}
	if tx == nil {
		return nil, memorykit.ConfigError(op, "tx", "missing")
	}
	var version int
	ext, err := vectorSchema(ctx, op, tx)
	if err != nil {
		return nil, err
	}
	if err := tx.QueryRow(ctx, renderSQL(`SELECT COALESCE(max(version), 0) FROM {schema}.schema_migrations`, schema, ext)).Scan(&version); err != nil {
		return nil, mapErr(op, err)
	}
	if version != SchemaVersion {
		return nil, &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Field: "schema_version", Reason: "schema_not_migrated"}
	}
	// The recall cache loads Scopes on goroutines of its own and reads
	// them in snapshots of their own: neither fits one transaction, so a
	// Store on a transaction ranks every recall in SQL.
	cfg.SQLRecall = true
	distributed, err := isDistributed(ctx, tx, schema)
	if err != nil {
		return nil, mapErr(op, err)
	}
	s := newStore(txDB{tx}, nil, false, cfg, schema, ext)
	s.setDistributed(distributed)
	return s, nil
}
