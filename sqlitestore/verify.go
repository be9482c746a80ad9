package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// ErasureHit is one place VerifyErased found the text. A hit in a row
// names the table, the column and the row (by its identity columns, or
// its rowid), with File the database's base name and Offset -1. A hit in
// the raw bytes names the file (the database or a file SQLite keeps
// beside it) and the byte offset of the first occurrence (-1 when only
// the NFKC form of the file matched), with Table empty. It never holds
// the text.
type ErasureHit struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Table  string `json:"table,omitempty"`
	Column string `json:"column,omitempty"`
	Row    string `json:"row,omitempty"`
}

// verifiedSuffixes are the files SQLite keeps beside a database.
var verifiedSuffixes = []string{"", "-wal", "-journal", "-shm"}

// rowIdentity are the columns that name a row without holding memory
// text, in the order a hit renders them.
var rowIdentity = []string{"id", "record_id", "seq", "profile", "name", "tenant_id", "subject_type", "subject_id"}

// queryer is a database handle: the store's own connection, or a
// read-only one of VerifyErased.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// VerifyErased looks for canary in the SQLite database at path, for
// scope, in two ways, and returns every place it is found, or nothing.
//
// Rows: every column of every table is read through the driver and
// compared (storekit.Canary: ignoring case, in NFKC form, in every JSON
// and SQL encoding), and a JSON value (the bodies of records, revisions,
// leases and jobs) is decoded and every string and key inside it
// compared too, so text stored with escapes (&, <, >, U+2028, quotes,
// tabs) is found while it is live. Only rows of scope are reported: rows
// carrying its tenant and subject, rows of its records, and rows of
// tables tied to no Scope.
//
// Raw bytes: the database file and the files SQLite keeps beside it
// (-wal, -journal, -shm) are scanned for every encoded form of canary,
// ignoring case, free pages and WAL frames included: after an erase (which
// checkpoints and truncates the WAL) and a purge (which also vacuums),
// erased text must be in none of them. Raw bytes cannot be told apart by
// Scope, so when a row of another Scope holds the canary live, raw-byte
// hits are not reported (the row scan still covers every live row of
// scope; secure_delete zeroes what erase frees).
//
// The row scan opens the file read-only; a file a running store holds is
// ErrUnavailable with reason ReasonLocked (use Store.VerifyErased then). A
// missing file is ErrNotFound.
func VerifyErased(ctx context.Context, path string, scope memorykit.Scope, canary string) ([]ErasureHit, error) {
	const op = "sqlitestore.verify_erased"
	match, err := checkVerify(op, path, scope, canary)
	if err != nil {
		return nil, err
	}
	raw, err := rawHits(op, path, match)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro&_pragma=busy_timeout(200)"))
	if err != nil {
		return nil, mapErr(op, err)
	}
	defer db.Close()
	rows, shared, err := rowHits(ctx, op, db, filepath.Base(path), scope, match)
	if err != nil {
		return nil, err
	}
	return mergeHits(rows, raw, shared), nil
}

// VerifyErased looks for canary in the store's file for scope, as the
// package function does, reading rows through the store's own connection
// (so it works while the store runs).
func (s *Store) VerifyErased(ctx context.Context, scope memorykit.Scope, canary string) ([]ErasureHit, error) {
	const op = "sqlitestore.verify_erased"
	match, err := checkVerify(op, s.path, scope, canary)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.conn == nil {
		return nil, memorykit.NewError(op, memorykit.ErrUnavailable, "closed")
	}
	raw, err := rawHits(op, s.path, match)
	if err != nil {
		return nil, err
	}
	rows, shared, err := rowHits(ctx, op, s.conn, filepath.Base(s.path), scope, match)
	if err != nil {
		return nil, err
	}
	return mergeHits(rows, raw, shared), nil
}

func checkVerify(op, path string, scope memorykit.Scope, canary string) (*storekit.Canary, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(canary) == "" {
		return nil, memorykit.FieldError(op, "canary", "empty")
	}
	if path == "" {
		return nil, memorykit.FieldError(op, "path", "missing")
	}
	return storekit.NewCanary(canary), nil
}

// mergeHits is the row hits of the Scope, then the raw-byte hits unless a
// row of another Scope holds the canary (shared).
func mergeHits(rows, raw []ErasureHit, shared bool) []ErasureHit {
	out := append([]ErasureHit{}, rows...)
	if !shared {
		out = append(out, raw...)
	}
	return out
}

// rawHits scans the bytes of the database file and the files beside it.
func rawHits(op, path string, match *storekit.Canary) ([]ErasureHit, error) {
	var needles [][]byte
	for _, f := range match.Forms() {
		needles = append(needles, []byte(f))
	}
	var hits []ErasureHit
	found := false
	for _, suffix := range verifiedSuffixes {
		raw, err := os.ReadFile(path + suffix)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, memorykit.WrapError(op, memorykit.ErrUnavailable, "read_failed", err)
		}
		if suffix == "" {
			found = true
		}
		lower := storekit.FoldCaseBytes(raw)
		offset := int64(-1)
		for _, n := range needles {
			if i := bytes.Index(lower, n); i >= 0 && (offset < 0 || int64(i) < offset) {
				offset = int64(i)
			}
		}
		hit := offset >= 0
		if !hit {
			// Text stored in a compatibility form (full-width letters).
			hit = match.Match(string(raw))
		}
		if hit {
			hits = append(hits, ErasureHit{File: filepath.Base(path + suffix), Offset: offset})
		}
	}
	if !found {
		return nil, memorykit.NewError(op, memorykit.ErrNotFound, "no_database_file")
	}
	return hits, nil
}

// rowHits reads every row of every table through q and returns the hits
// (a virtual table's rows are those of its shadow tables, read as tables)
// in rows of scope, and whether a row of another Scope holds the canary.
func rowHits(ctx context.Context, op string, q queryer, file string, scope memorykit.Scope, match *storekit.Canary) ([]ErasureHit, bool, error) {
	tables, err := strList(ctx, q, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
		AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name`)
	if err != nil {
		return nil, false, mapErr(op, err)
	}
	// Tables without a rowid name their rows by their columns only.
	noRowid, err := strList(ctx, q, `SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID%'`)
	if err != nil {
		return nil, false, mapErr(op, err)
	}
	// The Scope of every record, for the tables tied to records by id.
	recScope := map[string]bool{}
	hasRecords := false
	for _, t := range tables {
		hasRecords = hasRecords || t == "records"
	}
	if hasRecords {
		rs, err := q.QueryContext(ctx, `SELECT id, tenant_id = ? AND subject_type = ? AND subject_id = ? FROM records`,
			scope.TenantID, string(scope.SubjectType), scope.SubjectID)
		if err != nil {
			return nil, false, mapErr(op, err)
		}
		for rs.Next() {
			var id string
			var mine bool
			if err := rs.Scan(&id, &mine); err != nil {
				rs.Close()
				return nil, false, mapErr(op, err)
			}
			recScope[id] = mine
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, false, mapErr(op, err)
		}
	}
	var hits []ErasureHit
	shared := false
	for _, table := range tables {
		cols, err := strList(ctx, q, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			return nil, false, mapErr(op, err)
		}
		have := map[string]bool{}
		exprs := []string{"rowid"}
		if slices.Contains(noRowid, table) {
			exprs[0] = "NULL"
		}
		for _, c := range cols {
			have[c] = true
			exprs = append(exprs, `CAST(`+quoteSQLiteIdent(c)+` AS TEXT)`)
		}
		rs, err := q.QueryContext(ctx, `SELECT `+strings.Join(exprs, ", ")+` FROM `+quoteSQLiteIdent(table))
		if err != nil {
			return nil, false, mapErr(op, err)
		}
		for rs.Next() {
			vals := make([]sql.NullString, 1+len(cols))
			dst := make([]any, len(vals))
			for i := range vals {
				dst[i] = &vals[i]
			}
			if err := rs.Scan(dst...); err != nil {
				rs.Close()
				return nil, false, mapErr(op, err)
			}
			byName := map[string]string{}
			for i, c := range cols {
				byName[c] = vals[1+i].String
			}
			mine := true
			switch {
			case have["tenant_id"] && have["subject_type"] && have["subject_id"]:
				mine = byName["tenant_id"] == scope.TenantID && byName["subject_type"] == string(scope.SubjectType) &&
					byName["subject_id"] == scope.SubjectID
			case have["record_id"] && hasRecords:
				mine = recScope[byName["record_id"]]
			}
			for i, c := range cols {
				if !vals[1+i].Valid || !match.MatchValue(vals[1+i].String) {
					continue
				}
				if !mine {
					shared = true
					continue
				}
				hits = append(hits, ErasureHit{File: file, Offset: -1, Table: table, Column: c, Row: rowName(have, byName, vals[0].String)})
			}
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, false, mapErr(op, err)
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
	return hits, shared, nil
}

// rowName renders a row's identity columns as "col=value,...", or its
// rowid for a table with none of them.
func rowName(have map[string]bool, byName map[string]string, rowid string) string {
	var parts []string
	for _, c := range rowIdentity {
		if have[c] {
			parts = append(parts, c+"="+byName[c])
		}
	}
	if len(parts) == 0 {
		return "rowid=" + rowid
	}
	return strings.Join(parts, ",")
}

// quoteSQLiteIdent quotes an SQLite identifier.
func quoteSQLiteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func strList(ctx context.Context, q queryer, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
