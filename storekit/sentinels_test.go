package storekit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// TestSentinelsMatchTheRootPackage: ContainAs's list of sentinel kinds is
// every Err* variable the root package declares, but ErrPurging (a write
// refused by a purge is contained as unavailable with reason "purging").
// A sentinel added to the root package without being added here fails.
func TestSentinelsMatchTheRootPackage(t *testing.T) {
	fset := token.NewFileSet()
	root, err := parser.ParseFile(fset, "../errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range root.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "Err") && n.Name != "ErrPurging" {
					want = append(want, n.Name)
				}
			}
		}
	}
	kit, err := parser.ParseFile(fset, "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	ast.Inspect(kit, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "sentinels" {
			for _, e := range vs.Values[0].(*ast.CompositeLit).Elts {
				got = append(got, e.(*ast.SelectorExpr).Sel.Name)
			}
		}
		return true
	})
	if len(want) < 10 {
		t.Fatalf("found only %d root sentinels (%v): the parse is broken", len(want), want)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("storekit sentinels %v, root package declares %v", got, want)
	}
}
