package storetest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestProfilesListsEverySuiteProfile: every valid profile name the suites'
// source spells out (a Profile field's value, or any "test/..." string) is
// in storetest.Profiles, which a Populated harness relies on to keep its
// other tenants' records off the suites' queues.
func TestProfilesListsEverySuiteProfile(t *testing.T) {
	listed := storetest.Profiles()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		note := func(lit ast.Expr) {
			bl, ok := lit.(*ast.BasicLit)
			if !ok || bl.Kind != token.STRING {
				return
			}
			if v, err := strconv.Unquote(bl.Value); err == nil && storekit.ValidateProfile("test", v) == nil {
				found[v] = fset.Position(bl.Pos()).String()
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.KeyValueExpr:
				if id, ok := x.Key.(*ast.Ident); ok && id.Name == "Profile" {
					note(x.Value)
				}
			case *ast.BasicLit:
				if x.Kind == token.STRING && strings.HasPrefix(x.Value, `"test/`) {
					note(x)
				}
			}
			return true
		})
	}
	if len(found) < 10 {
		t.Fatalf("found only %d profiles in the suites' source; the scan is broken", len(found))
	}
	for p, at := range found {
		if !slices.Contains(listed, p) {
			t.Errorf("%s: profile %q is not in storetest.Profiles", at, p)
		}
	}
}
