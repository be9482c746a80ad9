package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// dumpTables are the tables Dump renders, each with its ordering.
var dumpTables = []struct{ name, order string }{
	{"records", "id"},
	{"revisions", "record_id, seq"},
	{"embeddings", "record_id, profile"},
	{"embedding_leases", "record_id, profile"},
	{"embedding_tokens", "record_id, profile"},
	{"jobs", "id"},
	{"purges", "tenant_id, subject_type, subject_id"},
	{"meta", "name"},
}

// Dump renders every row of the file's tables as text, then the
// in-process mirror (memorystore.Store.Dump) after loading every Scope
// the file holds, whatever the memory budget, deterministically. It is
// for tests and debugging: it contains content.
func (s *Store) Dump(ctx context.Context) (string, error) {
	const op = "sqlitestore.dump"
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.broken(op); err != nil {
		return "", err
	}
	all, err := s.scopeRows(`SELECT tenant_id, subject_type, subject_id FROM records
		UNION SELECT tenant_id, subject_type, subject_id FROM jobs
		UNION SELECT tenant_id, subject_type, subject_id FROM purges`)
	if err != nil {
		return "", mapErr(op, err)
	}
	if err := s.ensureLocked(op, all); err != nil {
		return "", err
	}
	defer s.evictLocked(nil)
	var b strings.Builder
	for _, t := range dumpTables {
		fmt.Fprintf(&b, "table %s\n", t.name)
		err := s.each(ctx, "SELECT * FROM "+t.name+" ORDER BY "+t.order, func(rows *sql.Rows) error {
			cols, err := rows.Columns()
			if err != nil {
				return err
			}
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			b.WriteString(" ")
			for i, c := range cols {
				if t.name == "embeddings" && c == "rec" {
					// The record's row number: where the file put it.
					continue
				}
				v := vals[i]
				if c == "vector" {
					if raw, ok := v.([]byte); ok {
						v = decodeVector(raw)
					}
				}
				if raw, ok := v.([]byte); ok {
					v = string(raw)
				}
				fmt.Fprintf(&b, " %s=%v", c, v)
			}
			b.WriteString("\n")
			return nil
		})
		if err != nil {
			return "", mapErr(op, err)
		}
	}
	b.WriteString("mirror\n")
	b.WriteString(s.mem.Dump())
	return b.String(), nil
}
