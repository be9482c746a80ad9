package pgstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// TestStatementsAreUsed: every s.stmt("name") of the package names a
// statement of sql/*.sql, and every statement is named somewhere in the
// package's code (a call of stmt or a name handed to one, like touch's).
func TestStatementsAreUsed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	literals := map[string]bool{}
	calls := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BasicLit:
				if x.Kind == token.STRING {
					if v, err := strconv.Unquote(x.Value); err == nil {
						literals[v] = true
					}
				}
			case *ast.CallExpr:
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "stmt" || len(x.Args) != 1 {
					return true
				}
				calls++
				if lit, ok := x.Args[0].(*ast.BasicLit); ok {
					name, _ := strconv.Unquote(lit.Value)
					if _, ok := statements[name]; !ok {
						t.Errorf("%s: stmt(%q): no such statement in sql/*.sql", fset.Position(x.Pos()), name)
					}
				}
			}
			return true
		})
	}
	if calls < len(statements)/2 {
		t.Fatalf("found %d stmt calls for %d statements; is the scan looking at the right files?", calls, len(statements))
	}
	for name := range statements {
		if !literals[name] {
			t.Errorf("statement %q is in sql/*.sql but no code names it", name)
		}
	}
}

// TestParseStatements: names split the files into statements; a name
// defined twice, an empty statement or SQL before the first name is an
// error.
func TestParseStatements(t *testing.T) {
	got, err := parseStatements(fstest.MapFS{
		"sql/a.sql": {Data: []byte("-- about a\n\n-- name: one\nSELECT 1\n-- a comment in it\n\n-- name: two\n  SELECT\n    2;\n")},
		"sql/b.sql": {Data: []byte("-- name:three\nSELECT 3")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"one": "SELECT 1\n-- a comment in it", "two": "SELECT\n    2;", "three": "SELECT 3"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for name, data := range map[string]string{
		"twice":  "-- name: x\nSELECT 1\n-- name: x\nSELECT 2",
		"empty":  "-- name: x\n\n-- name: y\nSELECT 1",
		"before": "SELECT 0\n-- name: x\nSELECT 1",
		"blank":  "-- name:\nSELECT 1",
	} {
		if _, err := parseStatements(fstest.MapFS{"sql/x.sql": {Data: []byte(data)}}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
