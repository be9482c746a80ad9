package pgstore

import (
	"context"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	unorm "golang.org/x/text/unicode/norm"

	"github.com/goagents/memorykit"
)

// ErasureHit is one place VerifyErased found the canary: the table, the
// column and the row, named by its identity columns (ids, Scope, profile,
// version) or, for a table without any, its physical position (ctid). It
// never holds the value that matched.
type ErasureHit struct {
	Table  string `json:"table"`
	Column string `json:"column"`
	Row    string `json:"row"`
}

// rowIdentity are the columns that name a row without holding memory
// text, in the order a hit renders them.
var rowIdentity = []string{"id", "record_id", "version", "profile", "tenant_id", "subject_type", "subject_id"}

// querier is what VerifyErased needs of a pool, a connection or a Store.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// VerifyErased scans every column of every table in schema (empty means
// DefaultSchema), cast to text, for canary: ignoring case, and also in its
// NFKC form against the NFKC form of the stored text, so a canary stored
// in a compatibility form (full-width letters, say) is found too. It
// returns where the canary occurs, or nothing when it occurs nowhere. The
// whole schema is scanned, not only the rows of scope: erased text must
// not survive anywhere; scope is checked so a caller cannot mistype it.
//
// It reads live row versions only. Old versions of rewritten rows, and
// index entries pointing at them, stay on disk until VACUUM reclaims them
// (Purge runs VACUUM when it finishes).
func VerifyErased(ctx context.Context, db querier, schema string, scope memorykit.Scope, canary string) ([]ErasureHit, error) {
	const op = "pgstore.verify_erased"
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(canary) == "" {
		return nil, memorykit.FieldError(op, "canary", "empty")
	}
	if schema == "" {
		schema = DefaultSchema
	}
	if !schemaPattern.MatchString(schema) {
		return nil, memorykit.FieldError(op, "schema", "bad_name")
	}
	plain := strings.ToLower(canary)
	folded := strings.ToLower(unorm.NFKC.String(canary))
	tables, err := schemaTables(ctx, db, schema)
	if err != nil {
		return nil, mapErr(op, err)
	}
	hits := []ErasureHit{}
	for _, table := range tables {
		cols, err := tableColumns(ctx, db, schema, table)
		if err != nil {
			return nil, mapErr(op, err)
		}
		ident := identityExpr(cols)
		for _, col := range cols {
			c := quoteIdent(col) + `::text`
			rows, err := db.Query(ctx, `SELECT `+ident+` FROM `+quoteIdent(schema)+`.`+quoteIdent(table)+`
				WHERE strpos(lower(`+c+`), $1) > 0 OR strpos(lower(normalize(`+c+`, NFKC)), $2) > 0`, plain, folded)
			if err != nil {
				return nil, mapErr(op, err)
			}
			for rows.Next() {
				var row string
				if err := rows.Scan(&row); err != nil {
					rows.Close()
					return nil, mapErr(op, err)
				}
				hits = append(hits, ErasureHit{Table: table, Column: col, Row: row})
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, mapErr(op, err)
			}
		}
	}
	sort.Slice(hits, func(i, k int) bool {
		a, b := hits[i], hits[k]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Row < b.Row
	})
	return hits, nil
}

// identityExpr renders a row's identity columns as "col=value,..." or, for
// a table with none of them, its ctid.
func identityExpr(cols []string) string {
	have := make(map[string]bool, len(cols))
	for _, c := range cols {
		have[c] = true
	}
	var parts []string
	for _, c := range rowIdentity {
		if have[c] {
			parts = append(parts, `'`+c+`=' || coalesce(`+quoteIdent(c)+`::text, '')`)
		}
	}
	if len(parts) == 0 {
		return `'ctid=' || ctid::text`
	}
	return strings.Join(parts, ` || ',' || `)
}

// schemaTables lists the ordinary tables of schema by name.
func schemaTables(ctx context.Context, db querier, schema string) ([]string, error) {
	return names(ctx, db, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`, schema)
}

// tableColumns lists a table's columns in their order.
func tableColumns(ctx context.Context, db querier, schema, table string) ([]string, error) {
	return names(ctx, db, `SELECT column_name::text FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schema, table)
}

func names(ctx context.Context, db querier, sql string, args ...any) ([]string, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// VerifyErased scans the store's schema for canary (see the package-level
// VerifyErased).
func (s *Store) VerifyErased(ctx context.Context, scope memorykit.Scope, canary string) ([]ErasureHit, error) {
	return VerifyErased(ctx, s.pool, s.schema, scope, canary)
}
