package memorykit_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rootDocBudget is the most lines `go doc -short .` may print for the root
// package: what a Host author reads in one sitting. Store-author helpers
// belong in storekit, and the library's own helpers in internal packages.
const rootDocBudget = 60

// shortDocLines counts the lines `go doc -short` prints for the package in
// dir: one per top-level const or var group, function and type, and under
// each type one per const or var group of that type and per function
// returning it. Methods are not listed.
func shortDocLines(t *testing.T, dir string) (int, []string) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/goagents/memorykit")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	values := func(indent string, vs []*doc.Value) {
		for _, v := range vs {
			lines = append(lines, indent+strings.Join(v.Names, ","))
		}
	}
	values("", p.Consts)
	values("", p.Vars)
	for _, f := range p.Funcs {
		lines = append(lines, "func "+f.Name)
	}
	for _, ty := range p.Types {
		lines = append(lines, "type "+ty.Name)
		values("    ", ty.Consts)
		values("    ", ty.Vars)
		for _, f := range ty.Funcs {
			lines = append(lines, "    func "+f.Name)
		}
	}
	return len(lines), lines
}

// TestRootPackageFitsItsBudget fails when the root package's exported API
// grows past rootDocBudget lines of `go doc -short .`.
func TestRootPackageFitsItsBudget(t *testing.T) {
	n, lines := shortDocLines(t, ".")
	if n < 20 {
		t.Fatalf("counted only %d lines: the count is broken", n)
	}
	if n > rootDocBudget {
		t.Fatalf("go doc -short . would print %d lines, budget %d; move store-author helpers to storekit:\n%s",
			n, rootDocBudget, strings.Join(lines, "\n"))
	}
	t.Logf("go doc -short .: %d of %d lines", n, rootDocBudget)
}

// TestShortDocLinesCountsLikeGoDoc checks the counter on a package with
// every kind of entry, so the budget test counts what go doc prints.
func TestShortDocLinesCountsLikeGoDoc(t *testing.T) {
	n, lines := shortDocLines(t, "testdata/apisize")
	// go doc -short ./testdata/apisize prints 8 lines.
	if n != 8 {
		t.Fatalf("counted %d lines, go doc prints 8:\n%s", n, strings.Join(lines, "\n"))
	}
}
