package pgstore

import (
	"context"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
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

// VerifyErased looks for canary in every column of every table in schema
// (empty means DefaultSchema), in the rows of scope: rows that carry the
// Scope's tenant and subject, rows of the Scope's records (by record_id),
// and every row of a table with neither (none holds memory text, so any
// hit there is reported). It returns where the canary occurs, or nothing
// when it occurs nowhere.
//
// Each value is read as text and compared in Go, so the server's locale
// cannot change the comparison: ignoring case, also in NFKC form, and in
// every encoding the text can take in storage (storekit.Canary: JSON
// escapes, SQL and COPY quoting, array literals). A JSON column and an
// array are also decoded, and every string and object key inside them is
// compared as the driver returns it, so a metadata value with a quote or
// a tab, or a source reference with quotes, is found while it is live.
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
	match := storekit.NewCanary(canary)
	tables, err := schemaTables(ctx, db, schema)
	if err != nil {
		return nil, mapErr(op, err)
	}
	hasRecords := false
	for _, t := range tables {
		hasRecords = hasRecords || t == "records"
	}
	sc := []any{scope.TenantID, string(scope.SubjectType), scope.SubjectID}
	hits := []ErasureHit{}
	for _, table := range tables {
		cols, err := tableColumns(ctx, db, schema, table)
		if err != nil {
			return nil, mapErr(op, err)
		}
		q, args := scanStatement(schema, table, cols, hasRecords, sc)
		rows, err := db.Query(ctx, q, args...)
		if err != nil {
			return nil, mapErr(op, err)
		}
		for rows.Next() {
			vals := make([]*string, 1+2*len(cols))
			dst := make([]any, len(vals))
			for i := range vals {
				dst[i] = &vals[i]
			}
			if err := rows.Scan(dst...); err != nil {
				rows.Close()
				return nil, mapErr(op, err)
			}
			for i, c := range cols {
				raw, decoded := vals[1+2*i], vals[2+2*i]
				if (raw != nil && match.MatchValue(*raw)) || (decoded != nil && match.MatchValue(*decoded)) {
					hits = append(hits, ErasureHit{Table: table, Column: c.name, Row: deref(vals[0])})
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, mapErr(op, err)
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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// column is a table column and its type name (udt_name).
type column struct {
	name, udt string
}

// valueExprs renders a column as the two texts VerifyErased compares: the
// value cast to text (a JSON column is also decoded in Go), and for an
// array or a tsvector a JSON array of its elements, decoded in Go (NULL
// for other types).
func valueExprs(c column) (string, string) {
	q := quoteIdent(c.name)
	switch {
	case strings.HasPrefix(c.udt, "_"):
		return q + `::text`, `array_to_json(` + q + `)::text`
	case c.udt == "tsvector":
		return q + `::text`, `array_to_json(tsvector_to_array(` + q + `))::text`
	}
	return q + `::text`, `NULL::text`
}

// scanStatement is the query reading a table's rows of the Scope (sc):
// the row's identity, then every column as valueExprs renders it.
func scanStatement(schema, table string, cols []column, hasRecords bool, sc []any) (string, []any) {
	have := map[string]bool{}
	exprs := []string{identityExpr(cols)}
	for _, c := range cols {
		have[c.name] = true
		raw, decoded := valueExprs(c)
		exprs = append(exprs, raw, decoded)
	}
	q := `SELECT ` + strings.Join(exprs, ", ") + ` FROM ` + quoteIdent(schema) + `.` + quoteIdent(table)
	switch {
	case have["tenant_id"] && have["subject_type"] && have["subject_id"]:
		return q + ` WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3`, sc
	case have["record_id"] && hasRecords:
		return q + ` WHERE record_id IN (SELECT id FROM ` + quoteIdent(schema) + `.records
			WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3)`, sc
	}
	return q, nil
}

// identityExpr renders a row's identity columns as "col=value,..." or, for
// a table with none of them, its ctid.
func identityExpr(cols []column) string {
	have := make(map[string]bool, len(cols))
	for _, c := range cols {
		have[c.name] = true
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
func tableColumns(ctx context.Context, db querier, schema, table string) ([]column, error) {
	rows, err := db.Query(ctx, `SELECT column_name::text, udt_name::text FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schema, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.udt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func names(ctx context.Context, db querier, sql string, args ...any) ([]string, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// VerifyErased looks for canary in the store's schema, in the rows of
// scope (see the package-level VerifyErased).
func (s *Store) VerifyErased(ctx context.Context, scope memorykit.Scope, canary string) ([]ErasureHit, error) {
	return VerifyErased(ctx, s.pool, s.schema, scope, canary)
}
