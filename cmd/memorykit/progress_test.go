package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storetest"
)

// TestProgressOnATerminal runs embeddings rebuild, status, purge and
// verify-erased in-process on a SQLite file, with the output taken for a
// terminal and not: on a terminal a bar (or a count) redrawn in place with
// counts only, erased before the command's own output; otherwise the
// plain lines, with no bar.
func TestProgressOnATerminal(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "memorykit.db")
	getenv := func(k string) string {
		if k == "MEMORYKIT_TOMBSTONE_SECRET" {
			return storetest.TestTombstoneSecret
		}
		return ""
	}
	cmd := func(tty bool, args ...string) (stdout string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := runCLIWith(ctx, &cli{out: &out, errOut: &errOut, tty: tty}, args, getenv); code != exitOK {
			t.Fatalf("%v (tty %v): exit %d\n%s%s", args, tty, code, out.String(), errOut.String())
		}
		if strings.Contains(out.String()+errOut.String(), "CANARY") {
			t.Errorf("%v (tty %v) printed content:\n%q", args, tty, out.String()+errOut.String())
		}
		return out.String()
	}
	scoped := func(args ...string) []string {
		return append(args, "--sqlite", file, "--tenant", "acme", "--project", "apollo", "--operator", "ops-ana")
	}
	cmd(false, "migrate", "--sqlite", file)

	guard, err := memorykit.NewWriteGuard(cliLimits(), acceptAll{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitestore.Open(ctx, file, sqlitestore.Config{Clock: clock.New(), Guard: guard, Tombstones: storetest.NewTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	const n = 5
	for i := range n {
		if _, err := store.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: fmt.Sprintf("key %d", i),
			Content: fmt.Sprintf("CANARY-%d secret", i), Status: memorykit.StatusActive,
			Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	// Not a terminal: one line per round, no bar.
	out := cmd(false, scoped("embeddings", "rebuild", "--batch", "2")...)
	for _, line := range []string{
		"rebuild: round 1, leased 2, stored 2, pending before the round 5\n",
		"rebuild: round 3, leased 5, stored 5, pending before the round 1\n",
		"rebuild done: 3 rounds, 5 stored, 0 pending in acme/project/apollo\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("rebuild, not a terminal, lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "\r") || strings.Contains(out, "embedding acme") {
		t.Errorf("rebuild drew a bar on output that is not a terminal:\n%q", out)
	}

	// A terminal: the bar counts stored records out of those to embed,
	// replaces the per-round lines and is erased before the summary.
	out = cmd(true, scoped("embeddings", "rebuild", "--batch", "2")...)
	if strings.Contains(out, "rebuild: round") {
		t.Errorf("rebuild printed round lines under the bar:\n%q", out)
	}
	for _, frame := range []string{"embedding acme/project/apollo", "(2/5)", "(4/5)"} {
		if !strings.Contains(out, frame) {
			t.Errorf("the bar never showed %q:\n%q", frame, out)
		}
	}
	last := out[strings.LastIndex(out, "\r")+1:]
	if last != "rebuild done: 3 rounds, 5 stored, 0 pending in acme/project/apollo\n" {
		t.Errorf("after the bar: %q", last)
	}

	// status: a count of the records read, then the table.
	plain := cmd(false, scoped("status")...)
	out = cmd(true, scoped("status")...)
	if strings.Contains(plain, "\r") || !strings.Contains(out, fmt.Sprintf("reading the records of acme/project/apollo: %d", n)) {
		t.Errorf("status: plain %q, terminal %q", plain, out)
	}
	if got := out[strings.LastIndex(out, "\r")+1:]; got != plain {
		t.Errorf("status on a terminal ends with\n%s\nnot the plain table\n%s", got, plain)
	}

	// purge: a spinner while the transaction runs, then the JSON report
	// alone on the line.
	out = cmd(true, scoped("purge", "--reason-code", "project_closed")...)
	if !strings.Contains(out, "purging acme/project/apollo") {
		t.Errorf("purge on a terminal:\n%q", out)
	}
	var rep purgeJSON
	if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "\r")+1:]), &rep); err != nil || rep.Records != n {
		t.Errorf("purge report after the spinner: %v %+v\n%q", err, rep, out)
	}

	// verify-erased: a spinner during the search, then the answer.
	out = cmd(true, "verify-erased", "--sqlite", file, "--tenant", "acme", "--project", "apollo", "--canary", "CANARY-1")
	if !strings.Contains(out, "searching acme/project/apollo") || out[strings.LastIndex(out, "\r")+1:] != "not found\n" {
		t.Errorf("verify-erased on a terminal:\n%q", out)
	}
}
