package pgstore

import (
	"context"
	"strings"
)

// dumpTables lists every table of the schema with the order its rows are
// dumped in.
var dumpTables = []struct{ name, order string }{
	{"schema_migrations", "version"},
	{"records", "id"},
	{"revisions", "record_id, version"},
	{"embeddings", "record_id, profile"},
	{"embedding_leases", "record_id, profile"},
	{"jobs", "id"},
	{"recall_text", "record_id"},
	{"term_df", "tenant_id, subject_type, subject_id, term"},
	{"embedding_profiles", "profile"},
	{"embedding_queue", "profile, record_id"},
	{"purges", "tenant_id, subject_type, subject_id"},
}

// Dump renders every row of every memorykit table in the store's schema as
// text, one "table: {json}" line per row, in a stable order. It exists for
// tests (the erase canary test and "nothing changed" checks). Its output
// holds memory content; never log it.
func (s *Store) Dump(ctx context.Context) (string, error) {
	const op = "pgstore.dump"
	if err := live(ctx, op); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, t := range dumpTables {
		rows, err := s.pool.Query(ctx, s.q(`SELECT row_to_json(t)::text FROM {schema}.`+t.name+` t ORDER BY `+t.order))
		if err != nil {
			return "", mapErr(op, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return "", mapErr(op, err)
			}
			b.WriteString(t.name)
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
