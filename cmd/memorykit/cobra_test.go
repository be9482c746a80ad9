package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runIn runs one command line in-process; out is not a terminal.
func runIn(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut, func(string) string { return "" })
	return code, out.String(), errOut.String()
}

// TestCommandReferenceIsCurrent regenerates the command reference and
// fails when docs/cli differs: a changed command, flag or help text needs
// 'go generate ./cmd/memorykit'.
func TestCommandReferenceIsCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := genDocs(newRoot(&cli{out: io.Discard, errOut: io.Discard}, os.Getenv), dir); err != nil {
		t.Fatal(err)
	}
	const committed = "../../docs/cli"
	names := func(d string) []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(d, "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		slices.Sort(m)
		return m
	}
	want, got := names(dir), names(committed)
	if !slices.Equal(want, got) {
		t.Fatalf("docs/cli holds %v, the commands make %v: run 'go generate ./cmd/memorykit'", got, want)
	}
	if len(want) < len(commands)+len(groups)+2 { // + root and completion
		t.Fatalf("only %d pages for %d commands", len(want), len(commands))
	}
	for _, name := range want {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, old) {
			t.Errorf("docs/cli/%s is stale: run 'go generate ./cmd/memorykit'", name)
		}
		if bytes.Contains(fresh, []byte("Auto generated")) {
			t.Errorf("docs/cli/%s carries the generator's date line", name)
		}
	}
	// Every command of the table has its page, with its flags.
	for _, c := range commands {
		page, err := os.ReadFile(filepath.Join(dir, "memorykit_"+strings.ReplaceAll(c.name, " ", "_")+".md"))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !bytes.Contains(page, []byte("--dsn string")) || (c.scoped && !bytes.Contains(page, []byte("--operator string"))) {
			t.Errorf("%s: the page lacks the common flags:\n%s", c.name, page)
		}
	}
}

// TestCompletion: 'completion bash|zsh|fish' prints the shell's script,
// another shell or none is bad input, and the scripts' helper completes
// commands and the values of --embedder.
func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash": "complete -o default -F __start_memorykit memorykit",
		"zsh":  "#compdef memorykit",
		"fish": "complete -c memorykit",
	} {
		code, out, errOut := runIn("completion", shell)
		if code != exitOK || !strings.Contains(out, marker) {
			t.Errorf("completion %s: exit %d, script has %q: %v\n%s", shell, code, marker, strings.Contains(out, marker), errOut)
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "powershell"}, {"completion", "bash", "zsh"}} {
		if code, _, errOut := runIn(args...); code != exitUsage || !strings.Contains(errOut, "bash, zsh or fish") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	_, out, _ := runIn("__complete", "embeddings", "rebuild", "--embedder", "")
	if got := strings.Fields(out); len(got) < 3 || strings.Join(got[:3], " ") != "local openai ollama" {
		t.Errorf("--embedder completes to %q", out)
	}
	_, out, _ = runIn("__complete", "cand")
	if !strings.HasPrefix(out, "candidates\t") {
		t.Errorf("'cand' completes to %q", out)
	}
	_, out, _ = runIn("__complete", "status", "--ten")
	if !strings.HasPrefix(out, "--tenant\t") {
		t.Errorf("'status --ten' completes to %q", out)
	}
}

// TestBadInputIsNotEchoed: what the parser rejects is described by the
// flag the command defines, never by what was typed, which may be a
// secret in the wrong place; exit 2 with a pointer to the help.
func TestBadInputIsNotEchoed(t *testing.T) {
	const secret = "s3cret-pw"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"status", "--" + secret}, "memorykit status: unknown flag or bad flag syntax\nrun 'memorykit status --help'\n"},
		{[]string{"status", "--limit=" + secret}, "memorykit status: unknown flag or bad flag syntax\n"},
		{[]string{"candidates", "list", "--limit", secret}, "memorykit candidates list: --limit has an invalid value\nrun 'memorykit candidates list --help'\n"},
		{[]string{"forget", "--id"}, "memorykit forget: --id needs a value\n"},
		{[]string{"status", secret}, "memorykit status: unexpected argument (every value needs its --flag)\n"},
		{[]string{secret}, "memorykit: unknown command; run 'memorykit --help'\n"},
		{[]string{"--" + secret}, "memorykit: unknown flag or bad flag syntax\n"},
		{[]string{"help", secret}, "memorykit help: unknown command; run 'memorykit --help'\n"},
		{[]string{"candidates", secret}, "memorykit candidates: missing or unknown subcommand\n"},
		{[]string{"gen-docs"}, "memorykit gen-docs: name the directory to write into\n"},
	}
	for _, c := range cases {
		code, out, errOut := runIn(c.args...)
		if code != exitUsage || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", c.args, code, errOut, c.want)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%v: the typed text was echoed: %q", c.args, out+errOut)
		}
	}
}

// TestSingleDashFlags: "-name" works as "--name" for the command's own
// flags, as the standard flag package allowed; values are left alone,
// even when they look like flags.
func TestSingleDashFlags(t *testing.T) {
	root := newRoot(&cli{out: io.Discard, errOut: io.Discard}, os.Getenv)
	cases := []struct{ in, want string }{
		{"status -dsn x -tenant acme", "status --dsn x --tenant acme"},
		{"candidates list -limit=5 -after mem_1", "candidates list --limit=5 --after mem_1"},
		{"forget --reason -tenant -id mem_1", "forget --reason -tenant --id mem_1"},
		{"forget -reason -tenant -id mem_1", "forget --reason -tenant --id mem_1"},
		{"status -colour red -h", "status -colour red -h"},
		{"-help", "--help"},
		{"status -help", "status --help"},
		{"status -- -dsn", "status -- -dsn"},
		{"frobnicate -dsn x", "frobnicate -dsn x"},
	}
	for _, c := range cases {
		if got := strings.Join(singleDashFlags(root, strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
	// End to end: a single-dash command line parses.
	code, _, errOut := runIn("forget", "-id", "mem_1", "-tenant", "acme", "-project", "apollo", "-operator", "ops")
	if code != exitUsage || !strings.Contains(errOut, "--dsn (or $MEMORYKIT_DSN) or --sqlite is required") {
		t.Errorf("single-dash forget: exit %d, %q", code, errOut)
	}
}
