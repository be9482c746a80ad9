package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// MigrateDown brings schema (empty means DefaultSchema) down to version,
// newest first, each version in a transaction of its own that runs its
// down file and forgets the version: version 0 leaves the schema holding
// only an empty schema_migrations table. It holds the same advisory lock
// as the migrations Open and New run, on conn, which it leaves open. No
// Store may be using the schema.
//
// Down files undo the DDL of their version. Data a version rewrote is
// undone where the earlier form can be computed (version 2's scope tags
// on search lexemes) and is otherwise left in its later form, which the
// earlier code reads correctly: the canonical keys of version 5 and the
// tombstone digests of version 6 stay.
//
// A version outside 0..the schema's current version is ErrInvalidInput. A
// schema that records a version this package has no migration for (a
// newer pgstore wrote it) is refused with ErrIntegrity and reason
// ReasonSchemaVersionNewer or ReasonSchemaVersionUnknown, and nothing is
// changed.
func MigrateDown(ctx context.Context, conn *pgx.Conn, schema string, version int) error {
	const op = "pgstore.migrate_down"
	schema, err := schemaName(op, schema)
	if err != nil {
		return err
	}
	if conn == nil {
		return memorykit.ConfigError(op, "conn", "missing")
	}
	migs, err := loadMigrations()
	if err != nil || len(migs) != SchemaVersion {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrIntegrity, Reason: "embedded_migrations_invalid", Err: err}
	}
	return withSessionLock(ctx, op, conn, schemaLockKey(schema), func() error {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, quoteIdent(schema)+".schema_migrations").Scan(&exists); err != nil {
			return mapErr(op, err)
		}
		current := 0
		if exists {
			applied, err := appliedVersions(ctx, conn, schema, "")
			if err != nil {
				return mapErr(op, err)
			}
			if current, err = storekit.AppliedVersion(op, applied, SchemaVersion); err != nil {
				return err
			}
		}
		if version < 0 || version > current {
			return memorykit.NewError(op, memorykit.ErrInvalidInput, "version_out_of_range")
		}
		ext := ""
		if current > 0 {
			var err error
			if ext, err = vectorSchema(ctx, op, conn); err != nil {
				return err
			}
		}
		for v := current; v > version; v-- {
			if err := revertMigration(ctx, conn, schema, ext, migs[v-1]); err != nil {
				return err
			}
		}
		return nil
	})
}

// revertMigration runs m's down file and forgets m, in one transaction.
func revertMigration(ctx context.Context, conn *pgx.Conn, schema, ext string, m migration) error {
	const op = "pgstore.migrate_down"
	tx, err := conn.Begin(ctx)
	if err != nil {
		return mapErr(op, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, renderSQL(m.Down, schema, ext)); err != nil {
		return migrationErr(op, m, err)
	}
	if _, err := tx.Exec(ctx, renderSQL(`DELETE FROM {schema}.schema_migrations WHERE version = $1`, schema, ext), m.Version); err != nil {
		return mapErr(op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return mapErr(op, err)
	}
	return nil
}
