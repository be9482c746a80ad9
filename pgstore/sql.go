package pgstore

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// Static SQL lives in .sql files, not in Go strings.
//
// Layout:
//
//   - migrations/NNNN_name.up.sql and NNNN_name.down.sql: one pair per
//     schema version (migrate.go, migrate_down.go). A new version takes the
//     next free number and comes with both files; a data step in Go, if
//     any, goes in dataSteps.
//   - sql/<file>.sql: the statements of <file>.go, each under a line
//     "-- name: <name>" (lower snake case, unique across every file, by
//     convention the calling function's name, with _2, _3... for its later
//     statements). Everything up to the next such line is the statement;
//     comments before the first name line describe the file. Code runs a
//     statement with s.stmt("<name>"); TestStatementsAreUsed checks that
//     every name in the code exists and every statement is used.
//   - recallsql.go: the one place SQL is generated at run time: the
//     full-text recall statement, whose shape depends on the number of
//     query lexemes (see that file).
//
// Placeholders: the fragments below, filled in once when the package
// loads, which stay in Go because Go code depends on them (column lists in
// the order rows.go scans them) or because several statements share them;
// then {schema} and {ext} (the quoted schemas of the tables and of the
// vector extension, which fragments may hold too), filled in once per
// Store by newStore.
//
// Why not sqlc: the statements are parameterised by schema at run time
// (several stores share one database in different schemas), pgvector
// types and jsonb go through hand-written scanners (rows.go), and half the
// statements are CTEs whose result columns sqlc would map to generated
// structs that the code converts straight back to memorykit types. A
// named-statement loader keeps the SQL in .sql files, reviewable and
// runnable in psql once the placeholders are filled, without a generator
// in the build.

//go:embed sql/*.sql
var statementFS embed.FS

// statementFragments are the placeholders besides {schema} and {ext}.
var statementFragments = []string{
	"{record_cols}", recordCols,
	"{record_cols_r}", recordColsR,
	"{job_cols}", jobCols,
	"{job_cols_j}", jobColsJ,
	"{reason_code}", reasonCodeSQL,
	"{no_current_embedding}", noCurrentEmbedding,
}

// statements are the templates of sql/*.sql by name, parsed once, with
// the fragments filled in.
var statements = mustParseStatements(statementFS)

func mustParseStatements(fsys fs.FS) map[string]string {
	out, err := parseStatements(fsys)
	if err != nil {
		panic("pgstore: embedded SQL: " + err.Error())
	}
	frag := strings.NewReplacer(statementFragments...)
	for name, tmpl := range out {
		out[name] = frag.Replace(tmpl)
	}
	return out
}

// parseStatements reads every sql/*.sql file of fsys into named
// templates, refusing a name defined twice and text outside a name.
func parseStatements(fsys fs.FS) (map[string]string, error) {
	files, err := fs.Glob(fsys, "sql/*.sql")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, path := range files {
		body, err := fs.ReadFile(fsys, path)
		if err != nil {
			return nil, err
		}
		name := ""
		var text strings.Builder
		flush := func() error {
			if name == "" {
				return nil
			}
			stmt := strings.TrimSpace(text.String())
			if stmt == "" {
				return fmt.Errorf("%s: statement %q is empty", path, name)
			}
			if _, dup := out[name]; dup {
				return fmt.Errorf("%s: statement %q defined twice", path, name)
			}
			out[name] = stmt
			return nil
		}
		for _, line := range strings.SplitAfter(string(body), "\n") {
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
				if err := flush(); err != nil {
					return nil, err
				}
				name, text = strings.TrimSpace(n), strings.Builder{}
				if name == "" {
					return nil, fmt.Errorf("%s: a name line without a name", path)
				}
				continue
			}
			if name == "" {
				if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
					return nil, fmt.Errorf("%s: SQL before the first name line", path)
				}
				continue
			}
			text.WriteString(line)
		}
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// renderStatements fills the placeholders of every template with rep.
func renderStatements(rep *strings.Replacer) map[string]string {
	out := make(map[string]string, len(statements))
	for name, tmpl := range statements {
		out[name] = rep.Replace(tmpl)
	}
	return out
}

// stmt returns the named statement rendered for this store. An unknown
// name is a programming error (TestStatementsAreUsed catches it) and
// panics.
func (s *Store) stmt(name string) string {
	q, ok := s.stmts[name]
	if !ok {
		panic("pgstore: no SQL statement named " + name)
	}
	return q
}
