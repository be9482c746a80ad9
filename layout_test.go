package memorykit_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTestSupportNeverShips: no non-test Go file outside
// internal/testsupport imports a package under it, in this module or the
// nested ones (adapters, examples), so test support never ends up in a
// binary. internal/plumbing is the tree that ships.
func TestTestSupportNeverShips(t *testing.T) {
	const tree = "github.com/goagents/memorykit/internal/testsupport"
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "testsupport":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if p == tree || strings.HasPrefix(p, tree+"/") {
				t.Errorf("%s imports %s: test support must not ship", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: the walk is broken", checked)
	}
}
