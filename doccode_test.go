package memorykit_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docFiles are the documents whose Go code blocks a user may copy.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "examples/host-api/README.md"}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	adapters, err := filepath.Glob("adapters/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(append(files, more...), adapters...)
}

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// normLines splits code into lines with the indentation and inner runs of
// white space made uniform and the blank lines dropped, so a block matches
// its example however gofmt aligned the comments.
func normLines(code string) []string {
	var out []string
	for _, l := range strings.Split(code, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}

// exampleFile is one example*_test.go file, normalized; top marks the
// lines that start in the first column (declarations and their closing
// braces).
type exampleFile struct {
	path  string
	lines []string
	top   []bool
}

func newExampleFile(path, src string) exampleFile {
	f := exampleFile{path: path}
	for _, l := range strings.Split(src, "\n") {
		if fields := strings.Fields(l); len(fields) > 0 {
			f.lines = append(f.lines, strings.Join(fields, " "))
			f.top = append(f.top, l[0] != ' ' && l[0] != '\t')
		}
	}
	return f
}

func exampleFiles(t *testing.T) []exampleFile {
	t.Helper()
	var out []exampleFile
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "example") && strings.HasSuffix(d.Name(), "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, newExampleFile(path, string(b)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runBy reports where block runs: the example file and function whose
// body holds block verbatim, when that function is an Example with an
// Output comment or is called by one, or by a Test, in the same file.
// "" when none.
func runBy(files []exampleFile, block []string) string {
	for _, f := range files {
		for i := 0; i+len(block) <= len(f.lines); i++ {
			if !equalLines(f.lines[i:i+len(block)], block) || anyTop(f.top[i:i+len(block)]) {
				continue
			}
			name := enclosingFunc(f, i)
			if name == "" {
				continue
			}
			if strings.HasPrefix(name, "Example") && hasOutput(f, name) {
				return f.path + ":" + name
			}
			for _, ex := range runners(f) {
				if (strings.HasPrefix(ex, "Test") || hasOutput(f, ex)) && strings.Contains(strings.Join(funcBody(f, ex), "\n"), name+"(") {
					return f.path + ":" + ex + "->" + name
				}
			}
		}
	}
	return ""
}

func equalLines(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func anyTop(top []bool) bool {
	for _, t := range top {
		if t {
			return true
		}
	}
	return false
}

var funcDecl = regexp.MustCompile(`^func (?:\([^)]*\) )?([A-Za-z0-9_]+)\(`)

// enclosingFunc names the top-level function whose body holds line i.
func enclosingFunc(f exampleFile, i int) string {
	for j := i - 1; j >= 0; j-- {
		if !f.top[j] {
			continue
		}
		if m := funcDecl.FindStringSubmatch(f.lines[j]); m != nil {
			return m[1]
		}
		return ""
	}
	return ""
}

// runners names the file's Example and Test functions.
func runners(f exampleFile) []string {
	var out []string
	for i, l := range f.lines {
		if m := funcDecl.FindStringSubmatch(l); m != nil && f.top[i] && (strings.HasPrefix(m[1], "Example") || strings.HasPrefix(m[1], "Test")) {
			out = append(out, m[1])
		}
	}
	return out
}

// funcBody returns the lines of the top-level function name.
func funcBody(f exampleFile, name string) []string {
	for i, l := range f.lines {
		if m := funcDecl.FindStringSubmatch(l); m != nil && f.top[i] && m[1] == name {
			for j := i + 1; j < len(f.lines); j++ {
				if f.top[j] {
					return f.lines[i:j]
				}
			}
		}
	}
	return nil
}

func hasOutput(f exampleFile, name string) bool {
	for _, l := range funcBody(f, name) {
		if strings.HasPrefix(l, "// Output:") || strings.HasPrefix(l, "// Unordered output:") {
			return true
		}
	}
	return false
}

// TestDocCodeBlocksAreRunExamples: every Go code block of the README, the
// docs and the example Host's README is a verbatim copy of code that
// go test compiles and runs: the body of an Example with an Output
// comment, or of a function such an Example (or a Test) in the same
// example*_test.go file calls. A block that drifts from its example, or that
// no example holds, fails here.
func TestDocCodeBlocksAreRunExamples(t *testing.T) {
	files := exampleFiles(t)
	if len(files) == 0 {
		t.Fatal("no example files found; the check would be vacuous")
	}
	blocks := 0
	for _, doc := range docFiles(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goBlock.FindAllStringSubmatchIndex(string(b), -1) {
			code := string(b[m[2]:m[3]])
			line := 1 + strings.Count(string(b[:m[0]]), "\n")
			blocks++
			if where := runBy(files, normLines(code)); where == "" {
				t.Errorf("%s:%d: this Go block is not a verbatim copy of a run example (an Example with Output, or a function one or a Test calls, in an example*_test.go file)", doc, line)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no Go code blocks found; the check would be vacuous")
	}
}

// TestDocCodeBlockCheckCanFail: the checker refuses a block no example
// holds, a block that differs from its example by one token, and a block
// held only by a function no Example with Output runs.
func TestDocCodeBlockCheckCanFail(t *testing.T) {
	files := []exampleFile{newExampleFile("example_test.go", `
func helper() {
	a := 1
	fmt.Println(a)
}

func unused() {
	b := 2
	fmt.Println(b)
}

func Example_x() {
	helper()
	// Output:
	// 1
}
`)}
	if where := runBy(files, normLines("a := 1\n\tfmt.Println(a)")); where != "example_test.go:Example_x->helper" {
		t.Fatalf("a block run through an example: %q", where)
	}
	for name, block := range map[string]string{
		"nowhere":      "c := 3",
		"one token":    "a := 2\nfmt.Println(a)",
		"not run":      "b := 2\nfmt.Println(b)",
		"across funcs": "fmt.Println(a)\n}\nfunc unused() {",
	} {
		if where := runBy(files, normLines(block)); where != "" {
			t.Errorf("%s: accepted as %q", name, where)
		}
	}
}
