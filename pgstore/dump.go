package pgstore

import (
	"context"
	"strings"
)

// Dump renders every row of every table in the store's schema as text, one
// "table: {json}" line per row, tables by name and rows by their text, so
// two dumps of the same state are equal. The tables are read from the
// catalog, so a table added by a later migration is never left out. It
// exists for tests (the erase canary tests and "nothing changed" checks).
// Its output holds memory content; never log it.
//
// scope_versions and scope_changes are left out: they count the
// transactions that touched a Scope and name the version of each record's
// last change (for the recall cache), so one batch and the same writes one
// by one leave equal state but different counts. They hold Scope and
// record ids and numbers only; VerifyErased still scans them.
func (s *Store) Dump(ctx context.Context) (string, error) {
	const op = "pgstore.dump"
	if err := live(ctx, op); err != nil {
		return "", err
	}
	tables, err := schemaTables(ctx, s.pool, s.schema)
	if err != nil {
		return "", mapErr(op, err)
	}
	var b strings.Builder
	for _, t := range tables {
		if t == "scope_versions" || t == "scope_changes" {
			continue
		}
		rows, err := s.pool.Query(ctx, `SELECT row_to_json(t)::text AS j FROM `+quoteIdent(s.schema)+`.`+quoteIdent(t)+` t ORDER BY j`)
		if err != nil {
			return "", mapErr(op, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return "", mapErr(op, err)
			}
			b.WriteString(t)
			b.WriteString(": ")
			b.WriteString(line)
			b.WriteByte('\n')
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", mapErr(op, err)
		}
	}
	return b.String(), nil
}
