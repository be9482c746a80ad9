package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// SchemaVersion is the schema version this package writes and accepts: the
// number of the newest embedded migration. Open refuses a file whose
// schema records a newer or unknown version, and changes nothing in it.
const SchemaVersion = 3

// Reason codes of Open failures that callers may want to branch on.
const (
	// ReasonSchemaVersionNewer: the file was migrated by a newer version
	// of sqlitestore.
	ReasonSchemaVersionNewer = storekit.ReasonSchemaVersionNewer
	// ReasonSchemaVersionUnknown: the file records a version sequence this
	// package has no migrations for.
	ReasonSchemaVersionUnknown = storekit.ReasonSchemaVersionUnknown
)

//go:embed migrations/*.up.sql
var migrationFS embed.FS

// migration is one numbered SQL file.
type migration = storekit.Migration

// loadMigrations parses the embedded files, ordered by version 1..n.
func loadMigrations() ([]migration, error) {
	return storekit.LoadMigrations(migrationFS, "migrations", false)
}

// migrate brings the file up to SchemaVersion. It runs in one IMMEDIATE
// transaction, which holds SQLite's write lock from its first statement:
// two openers never both apply a migration, and a failed migration leaves
// the file as it was.
func migrate(ctx context.Context, conn *sql.Conn, migs []migration, now time.Time) error {
	const op = "sqlitestore.migrate"
	if len(migs) == 0 || migs[len(migs)-1].Version != SchemaVersion {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: "embedded_migrations_invalid"}
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return mapErr(op, err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return mapErr(op, err)
	}
	applied, err := appliedVersions(ctx, conn)
	if err != nil {
		return mapErr(op, err)
	}
	current, err := storekit.AppliedVersion(op, applied, SchemaVersion)
	if err != nil {
		return err
	}
	for _, m := range migs[current:] {
		if _, err := conn.ExecContext(ctx, m.Up); err != nil {
			return mapErr(op, err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, now.UTC().Format(time.RFC3339Nano)); err != nil {
			return mapErr(op, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return mapErr(op, err)
	}
	committed = true
	return nil
}

func appliedVersions(ctx context.Context, conn *sql.Conn) ([]int, error) {
	rows, err := conn.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
