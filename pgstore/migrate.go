package pgstore

import (
	"context"
	"embed"
	"errors"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// SchemaVersion is the schema version this package writes and accepts: the
// number of the newest embedded migration. Open refuses a schema that
// records a newer or unknown version.
const SchemaVersion = 13

// Reason codes of Open and New failures that callers may want to branch on.
const (
	// ReasonPgvectorUnavailable: the vector extension is not installed and
	// could not be created (missing package or insufficient privilege).
	ReasonPgvectorUnavailable = "pgvector_unavailable"
	// ReasonSchemaVersionNewer: the schema was migrated by a newer version
	// of pgstore.
	ReasonSchemaVersionNewer = storekit.ReasonSchemaVersionNewer
	// ReasonSchemaVersionUnknown: the schema records a version this package
	// has no migration for.
	ReasonSchemaVersionUnknown = storekit.ReasonSchemaVersionUnknown
)

// Every version N has migrations/NNNN_name.up.sql, which brings a schema
// from N-1 to N, and NNNN_name.down.sql, which brings it back (see
// MigrateDown); a data step in Go may follow the up file (dataSteps).
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered pair of SQL files.
type migration = storekit.Migration

// extensionLockKey is the session advisory lock around CREATE EXTENSION,
// which is database-wide: concurrent first installs would otherwise race.
const extensionLockKey int64 = 0x6d656d6b69740001 // "memkit" + 1

// schemaLockKey is the session advisory lock that serialises migrations of
// one schema; stores in different schemas migrate in parallel.
func schemaLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("memorykit.pgstore.migrate\x00"))
	h.Write([]byte(schema))
	return int64(h.Sum64())
}

// withSessionLock runs fn holding the session advisory lock key on conn.
// When the lock cannot be released, conn is closed (which releases it).
func withSessionLock(ctx context.Context, op string, conn *pgx.Conn, key int64, fn func() error) error {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return mapErr(op, err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", key); uerr != nil {
			_ = conn.Close(uctx)
		}
	}()
	return fn()
}

// loadMigrations parses the embedded files, ordered by version; every
// version has its down file.
func loadMigrations() ([]migration, error) {
	return storekit.LoadMigrations(migrationFS, "migrations", true)
}

// renderSQL fills in the schema placeholders of a SQL template.
func renderSQL(tmpl, schema, ext string) string {
	return strings.NewReplacer("{schema}", quoteIdent(schema), "{ext}", quoteIdent(ext)).Replace(tmpl)
}

// migrate brings schema up to SchemaVersion on conn under the migration
// advisory lock and returns the schema that holds the vector extension.
// When the lock cannot be released, conn is closed (which releases it).
func migrate(ctx context.Context, conn *pgx.Conn, schema string, clk clock.Clock) (ext string, err error) {
	const op = "pgstore.migrate"
	migs, err := loadMigrations()
	if err != nil || len(migs) == 0 || migs[len(migs)-1].Version != SchemaVersion {
		return "", &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: "embedded_migrations_invalid", Err: err}
	}
	err = withSessionLock(ctx, op, conn, extensionLockKey, func() error {
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector"); err != nil {
			return extensionErr(op, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if ext, err = vectorSchema(ctx, op, conn); err != nil {
		return "", err
	}
	err = withSessionLock(ctx, op, conn, schemaLockKey(schema), func() error {
		return migrateSchema(ctx, conn, schema, ext, migs, clk)
	})
	if err != nil {
		return "", err
	}
	return ext, nil
}

// migrateSchema applies the missing migrations of schema; the caller holds
// the schema's migration lock.
func migrateSchema(ctx context.Context, conn *pgx.Conn, schema, ext string, migs []migration, clk clock.Clock) error {
	const op = "pgstore.migrate"
	if _, err := conn.Exec(ctx, renderSQL(`CREATE SCHEMA IF NOT EXISTS {schema};
		CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
			version     integer PRIMARY KEY,
			name        text NOT NULL,
			applied_at  timestamptz NOT NULL
		)`, schema, ext)); err != nil {
		return mapErr(op, err)
	}

	applied, err := appliedVersions(ctx, conn, schema, ext)
	if err != nil {
		return mapErr(op, err)
	}
	current, err := storekit.AppliedVersion(op, applied, SchemaVersion)
	if err != nil {
		return err
	}

	for _, m := range migs[current:] {
		if err := applyMigration(ctx, conn, schema, ext, m, pgTime(clk.Now())); err != nil {
			return err
		}
	}
	return nil
}

// rowQuerier is what vectorSchema needs: a connection, pool or
// transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// vectorSchema returns the schema the vector extension is installed in;
// ErrUnavailable with ReasonPgvectorUnavailable when it is not installed.
func vectorSchema(ctx context.Context, op string, q rowQuerier) (string, error) {
	var ext string
	err := q.QueryRow(ctx, `SELECT n.nspname FROM pg_extension e
		JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'`).Scan(&ext)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: ReasonPgvectorUnavailable}
	}
	if err != nil {
		return "", mapErr(op, err)
	}
	return ext, nil
}

// migrationErr is err from running migration m, with the version as its
// field.
func migrationErr(op string, m migration, err error) error {
	e := mapErr(op, err).(*memorykit.Error)
	e.Field = "migration_" + strconv.Itoa(m.Version)
	return e
}

func appliedVersions(ctx context.Context, conn *pgx.Conn, schema, ext string) ([]int, error) {
	rows, err := conn.Query(ctx, renderSQL(`SELECT version FROM {schema}.schema_migrations ORDER BY version`, schema, ext))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

func applyMigration(ctx context.Context, conn *pgx.Conn, schema, ext string, m migration, now time.Time) error {
	const op = "pgstore.migrate"
	tx, err := conn.Begin(ctx)
	if err != nil {
		return mapErr(op, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, renderSQL(m.Up, schema, ext)); err != nil {
		return migrationErr(op, m, err)
	}
	if _, name, _ := strings.Cut(m.Name, "_"); dataSteps[name] != nil {
		if err := dataSteps[name](ctx, tx, schema, ext, now); err != nil {
			return migrationErr(op, m, err)
		}
	}
	if _, err := tx.Exec(ctx, renderSQL(`INSERT INTO {schema}.schema_migrations (version, name, applied_at)
		VALUES ($1, $2, $3)`, schema, ext), m.Version, m.Name, now); err != nil {
		return mapErr(op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return mapErr(op, err)
	}
	return nil
}
