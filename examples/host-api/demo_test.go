package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/demo.golden and the demo output in docs/host-api.md")

const (
	goldenPath = "testdata/demo.golden"
	docPath    = "../../docs/host-api.md"
	docStart   = "<!-- demo-output:start -->\n```text\n"
	docEnd     = "```\n<!-- demo-output:end -->"
)

var recordID = regexp.MustCompile(`mem_[0-9a-f]{28}`)

// maskIDs replaces each random record ID with mem_#N, numbered by first
// appearance, so the same record keeps the same mask.
func maskIDs(s string) string {
	seen := map[string]string{}
	return recordID.ReplaceAllStringFunc(s, func(id string) string {
		if m, ok := seen[id]; ok {
			return m
		}
		m := "mem_#" + strconv.Itoa(len(seen)+1)
		seen[id] = m
		return m
	})
}

// TestDemoGolden runs the walk-through and compares its output (record IDs
// masked) with testdata/demo.golden and with the copy in docs/host-api.md.
// Run `go -C examples/host-api test . -run TestDemoGolden -update` after an
// intended change.
func TestDemoGolden(t *testing.T) {
	var out bytes.Buffer
	if err := runDemo(context.Background(), &out); err != nil {
		t.Fatalf("demo: %v", err)
	}
	got := maskIDs(out.String())
	if *update {
		if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("demo output drifted from %s (-golden +now); rerun with -update if intended:\n%s", goldenPath, diff)
	}

	doc, err := os.ReadFile(filepath.FromSlash(docPath))
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), docStart)
	block, after, ok2 := strings.Cut(rest, docEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no demo output markers", docPath)
	}
	if *update {
		block = got
		if err := os.WriteFile(filepath.FromSlash(docPath), []byte(before+docStart+block+docEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(got, block); diff != "" {
		t.Errorf("the demo output in %s drifted (-doc +now); rerun with -update:\n%s", docPath, diff)
	}
}

// TestDemoIsReproducible runs the demo twice: apart from record IDs the
// output is identical.
func TestDemoIsReproducible(t *testing.T) {
	var a, b bytes.Buffer
	if err := runDemo(context.Background(), &a); err != nil {
		t.Fatal(err)
	}
	if err := runDemo(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(maskIDs(a.String()), maskIDs(b.String())); diff != "" {
		t.Errorf("two demo runs differ:\n%s", diff)
	}
	if strings.Contains(a.String(), "mem_#") {
		t.Error("the demo itself must print real IDs; only the golden masks them")
	}
}
