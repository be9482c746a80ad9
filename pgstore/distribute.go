package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Reason codes of Distribute failures.
const (
	// ReasonCitusUnavailable: the database has no citus extension. Next
	// step: install Citus on every node, CREATE EXTENSION citus on the
	// coordinator and the workers, register the workers with
	// citus_add_node on the coordinator, and run Distribute again.
	ReasonCitusUnavailable = "citus_unavailable"
	// ReasonNotCoordinator: the connection reaches a Citus worker. Next
	// step: point the DSN at the coordinator.
	ReasonNotCoordinator = "citus_not_coordinator"
	// ReasonSchemaNotMigrated: the schema is not at SchemaVersion. Next
	// step: migrate first (Open, New, or memorykit migrate), then
	// distribute.
	ReasonSchemaNotMigrated = "schema_not_migrated"
	// ReasonColocationMismatch: some tables are distributed, but not by
	// tenant_id in one co-location group (someone distributed them by
	// hand). Distribute changes nothing then; undo the hand-made
	// distribution (undistribute_table) and run it again.
	ReasonColocationMismatch = "colocation_mismatch"
)

// citusTriggers are the trigger functions of a distributed schema (see
// the file), installed by Distribute.
//
//go:embed citus_triggers.sql
var citusTriggers string

// distributedTables are the tables Distribute distributes by tenant_id,
// in order: records first (the others co-locate with it, and three hold
// foreign keys to it).
var distributedTables = []string{"records", "revisions", "embeddings", "embedding_leases",
	"embedding_queue", "recall_text", "term_df", "scope_versions", "scope_changes", "purges"}

// referenceTables are the small global tables Distribute copies to every
// node.
var referenceTables = []string{"embedding_profiles"}

// Distribute turns a migrated pgstore schema (empty schema means
// DefaultSchema) on a Citus coordinator into a distributed one: every
// table keyed by tenant is distributed by tenant_id, all of them in one
// co-location group of their own (named explicitly, so a tenant's records,
// vectors, revisions, counts and versions live on one node), and the small
// global table of embedding profiles becomes a reference table, copied to
// every node. The job queue (jobs), the lease token sequence and
// schema_migrations stay on the coordinator: leasing jobs is one statement
// over every tenant there, as on a single server (docs/scale.md).
//
// Rows already in the schema are moved to the shards and the
// coordinator's local copies are emptied. Distribute is idempotent: tables
// already distributed as described are left alone, so a second run
// changes nothing. It holds the schema's migration lock, so it never runs
// beside a migration; Stores may stay open, but a Store opened before
// Distribute ran keeps the single-server statements until it is reopened,
// so reopen every Host afterwards.
//
// Without the citus extension it is ErrUnavailable with reason
// ReasonCitusUnavailable; on a Citus worker, ReasonNotCoordinator; on a
// schema not at SchemaVersion, ErrIntegrity with reason
// ReasonSchemaNotMigrated. In each case nothing is changed.
func Distribute(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	const op = "pgstore.distribute"
	schema, err := schemaName(op, schema)
	if err != nil {
		return err
	}
	if pool == nil {
		return memorykit.ConfigError(op, "pool", "missing")
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return connectErr(op, err)
	}
	defer c.Release()
	conn := c.Conn()
	return withSessionLock(ctx, op, conn, schemaLockKey(schema), func() error {
		return distribute(ctx, op, conn, schema)
	})
}

// distribute is Distribute on conn, which holds the schema's migration
// lock.
func distribute(ctx context.Context, op string, conn *pgx.Conn, schema string) error {
	var hasCitus bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&hasCitus); err != nil {
		return mapErr(op, err)
	}
	if !hasCitus {
		return memorykit.NewError(op, memorykit.ErrUnavailable, ReasonCitusUnavailable)
	}
	var coordinator bool
	if err := conn.QueryRow(ctx, `SELECT citus_is_coordinator()`).Scan(&coordinator); err != nil {
		return mapErr(op, err)
	}
	if !coordinator {
		return memorykit.NewError(op, memorykit.ErrUnavailable, ReasonNotCoordinator)
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, quoteIdent(schema)+".schema_migrations").Scan(&exists); err != nil {
		return mapErr(op, err)
	}
	if !exists {
		return memorykit.NewError(op, memorykit.ErrIntegrity, ReasonSchemaNotMigrated)
	}
	applied, err := appliedVersions(ctx, conn, schema, "")
	if err != nil {
		return mapErr(op, err)
	}
	if v, err := storekit.AppliedVersion(op, applied, SchemaVersion); err != nil {
		return err
	} else if v != SchemaVersion {
		return memorykit.NewError(op, memorykit.ErrIntegrity, ReasonSchemaNotMigrated)
	}

	state, err := distributionState(ctx, conn, schema)
	if err != nil {
		return mapErr(op, err)
	}
	if err := state.check(); err != nil {
		return memorykit.WrapError(op, memorykit.ErrIntegrity, ReasonColocationMismatch, err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return mapErr(op, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The trigger functions (migration 13) keep every statement on the
	// changed rows' co-located shards, which is what Citus's check of
	// triggers on distributed tables guards against.
	if _, err := tx.Exec(ctx, `SET LOCAL citus.enable_unsafe_triggers = on`); err != nil {
		return mapErr(op, err)
	}
	// Rows already in a table are copied to its shards in this
	// transaction, over one connection per node.
	if _, err := tx.Exec(ctx, `SET LOCAL citus.multi_shard_modify_mode = sequential`); err != nil {
		return mapErr(op, err)
	}
	ext, err := vectorSchema(ctx, op, tx)
	if err != nil {
		return err
	}
	// Replacing the functions is idempotent, and done before the tables
	// move, so no shard ever runs the single-server forms.
	if _, err := tx.Exec(ctx, renderSQL(citusTriggers, schema, ext)); err != nil {
		return mapErr(op, err)
	}
	// The rows already here are moved with their derived rows (recall
	// text, counts, versions, queue): the triggers must not fire for the
	// copies, or the counts would double. They are back on before commit.
	for _, t := range triggerTables {
		if state.kind[t] == "" {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+qualified(schema, t)+` DISABLE TRIGGER USER`); err != nil {
				return mapErr(op, err)
			}
		}
	}
	moved := false
	for _, t := range referenceTables {
		if state.kind[t] != "" {
			continue
		}
		if _, err := tx.Exec(ctx, `SELECT create_reference_table($1)`, qualified(schema, t)); err != nil {
			return mapErr(op, err)
		}
		moved = true
	}
	for i, t := range distributedTables {
		if state.kind[t] != "" {
			continue
		}
		with := "none"
		if i > 0 {
			with = qualified(schema, distributedTables[0])
		}
		if _, err := tx.Exec(ctx, `SELECT create_distributed_table($1, 'tenant_id', colocate_with => $2)`,
			qualified(schema, t), with); err != nil {
			return mapErr(op, err)
		}
		moved = true
	}
	if moved {
		// create_distributed_table copies existing rows to the shards and
		// leaves the coordinator's local copy behind, unread; empty it.
		// Tables referencing records go first.
		for i := len(distributedTables) - 1; i >= 0; i-- {
			if _, err := tx.Exec(ctx, `SELECT truncate_local_data_after_distributing_table($1)`,
				qualified(schema, distributedTables[i])); err != nil {
				return mapErr(op, err)
			}
		}
		for _, t := range referenceTables {
			if _, err := tx.Exec(ctx, `SELECT truncate_local_data_after_distributing_table($1)`, qualified(schema, t)); err != nil {
				return mapErr(op, err)
			}
		}
	}
	for _, t := range triggerTables {
		if state.kind[t] == "" {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+qualified(schema, t)+` ENABLE TRIGGER USER`); err != nil {
				return mapErr(op, err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return mapErr(op, err)
	}
	return nil
}

// triggerTables are the tables with triggers of their own.
var triggerTables = []string{"records", "embeddings"}

// qualified is schema.table, quoted, as a regclass literal.
func qualified(schema, table string) string { return quoteIdent(schema) + "." + quoteIdent(table) }

// citusState is how the schema's tables are distributed now.
type citusState struct {
	// kind is pg_dist_partition.partmethod by table ("h" hash, "n" none
	// for reference tables); absent when local.
	kind map[string]string
	// column is the distribution column of each hash-distributed table.
	column map[string]string
	// group is each distributed or reference table's co-location group.
	group map[string]int
}

// distributionState reads the Citus metadata of the schema's tables.
func distributionState(ctx context.Context, conn *pgx.Conn, schema string) (citusState, error) {
	st := citusState{kind: map[string]string{}, column: map[string]string{}, group: map[string]int{}}
	rows, err := conn.Query(ctx, `SELECT c.relname, p.partmethod::text,
			coalesce(column_to_column_name(p.logicalrelid, p.partkey), ''), p.colocationid
		FROM pg_dist_partition p
		JOIN pg_class c ON c.oid = p.logicalrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1`, schema)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, kind, col string
		var group int
		if err := rows.Scan(&name, &kind, &col, &group); err != nil {
			return st, err
		}
		st.kind[name], st.column[name], st.group[name] = kind, col, group
	}
	return st, rows.Err()
}

// check reports a distribution Distribute did not make: a table
// distributed by another column or method, or outside records' group.
func (st citusState) check() error {
	first := -1
	for _, t := range distributedTables {
		switch k := st.kind[t]; {
		case k == "":
			continue
		case k != "h" || st.column[t] != "tenant_id":
			return errors.New("table not distributed by tenant_id")
		case first == -1:
			first = st.group[t]
		case st.group[t] != first:
			return errors.New("tables in different co-location groups")
		}
	}
	for _, t := range referenceTables {
		if k := st.kind[t]; k != "" && k != "n" {
			return errors.New("reference table distributed")
		}
	}
	return nil
}

// isDistributed reports whether schema's records table is a Citus
// distributed table (false without Citus).
func isDistributed(ctx context.Context, q rowQuerier, schema string) (bool, error) {
	var yes bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&yes)
	if err != nil || !yes {
		return false, err
	}
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass($1))`,
		qualified(schema, "records")).Scan(&yes)
	return yes, err
}

// testAfterMigrate, when set (by the package's tests on a Citus cluster),
// runs after every migration Open or New makes, on its connection.
var testAfterMigrate func(ctx context.Context, conn *pgx.Conn, schema string) error

// afterMigrate runs testAfterMigrate and reports whether the schema is
// distributed.
func afterMigrate(ctx context.Context, op string, conn *pgx.Conn, schema string) (bool, error) {
	if testAfterMigrate != nil {
		if err := testAfterMigrate(ctx, conn, schema); err != nil {
			return false, err
		}
	}
	d, err := isDistributed(ctx, conn, schema)
	if err != nil {
		return false, mapErr(op, err)
	}
	return d, nil
}

// setDistributed switches the Store to the statement forms a distributed
// schema needs: recall planned per call (Citus cannot build a generic plan
// for a distributed query) and the recall_text scope condition visible to
// Citus's router, so one recall is one single-shard query.
func (s *Store) setDistributed(d bool) {
	s.distributed = d
	if !d {
		return
	}
	for k, q := range s.recallSQL {
		s.recallSQL[k] = strings.ReplaceAll(q, "CASE WHEN t.tenant_id = $1 AND", "t.tenant_id = $1 AND CASE WHEN t.tenant_id = $1 AND")
	}
}

// planCacheMode is the plan_cache_mode of the Store's read statements.
func (s *Store) planCacheMode() string {
	if s.distributed {
		return "auto"
	}
	return "force_generic_plan"
}

// sortedUnique returns the distinct values of xs in order.
func sortedUnique(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}
