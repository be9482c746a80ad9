package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// buildCLI builds the binary into the test's temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "memorykit")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, bin string, args ...string) result {
	t.Helper()
	return runCLIEnv(t, bin, nil, args...)
}

// runCLIEnv is runCLI with env appended to the test's environment (a
// later value of a variable wins).
func runCLIEnv(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "MEMORYKIT_DSN=", // only --dsn counts in tests
		"MEMORYKIT_TOMBSTONE_SECRET="+storetest.TestTombstoneSecret)
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func (r result) want(t *testing.T, code int, what string) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// TestCLIUsage needs no database: help, unknown commands and bad input.
func TestCLIUsage(t *testing.T) {
	bin := buildCLI(t)
	r := runCLI(t, bin, "--help").want(t, 0, "--help")
	for _, c := range commands {
		if !strings.Contains(r.stdout, c.name) {
			t.Errorf("--help does not list %q", c.name)
		}
	}
	runCLI(t, bin).want(t, 2, "no arguments")
	runCLI(t, bin, "help", "status").want(t, 0, "help status")
	for _, c := range commands {
		args := append(strings.Fields(c.name), "--help")
		r := runCLI(t, bin, args...).want(t, 0, c.name+" --help")
		if !strings.Contains(r.stdout, "usage: memorykit "+c.name) || !strings.Contains(r.stdout, "-dsn") {
			t.Errorf("%s --help:\n%s", c.name, r.stdout)
		}
		if c.scoped && (!strings.Contains(r.stdout, "-operator") || !strings.Contains(r.stdout, "trusted")) {
			t.Errorf("%s --help does not explain the operator and the trust:\n%s", c.name, r.stdout)
		}
	}
	runCLI(t, bin, "candidates", "--help").want(t, 0, "candidates --help")

	scope := []string{"--dsn", "postgres://nobody@127.0.0.1:1/none", "--tenant", "acme", "--project", "apollo", "--operator", "ops"}
	bad := map[string][]string{
		"unknown command":       {"frobnicate"},
		"unknown subcommand":    {"candidates", "approve"},
		"missing subcommand":    {"embeddings"},
		"unknown flag":          append([]string{"status", "--colour", "red"}, scope...),
		"stray argument":        append([]string{"status", "extra"}, scope...),
		"no dsn":                {"status", "--tenant", "acme", "--project", "apollo", "--operator", "ops"},
		"no tenant":             {"status", "--dsn", "postgres://x", "--project", "apollo", "--operator", "ops"},
		"no operator":           {"forget", "--id", "mem_1", "--dsn", "postgres://x", "--tenant", "acme", "--project", "apollo"},
		"bad project":           {"status", "--dsn", "postgres://x", "--tenant", "acme", "--project", "apollo/../zeus", "--operator", "ops"},
		"bad operator":          {"status", "--dsn", "postgres://x", "--tenant", "acme", "--project", "apollo", "--operator", "ops team"},
		"no id":                 append([]string{"forget"}, scope...),
		"bad id":                append([]string{"erase", "--id", "mem 1"}, scope...),
		"negative version":      append([]string{"forget", "--id", "mem_1", "--expect-version", "-1"}, scope...),
		"limit too large":       append([]string{"candidates", "list", "--limit", "100000"}, scope...),
		"bad batch":             append([]string{"embeddings", "rebuild", "--batch", "0"}, scope...),
		"not a local profile":   append([]string{"embeddings", "rebuild", "--profile", "openai/text-embedding-3-small"}, scope...),
		"unknown embedder":      append([]string{"embeddings", "rebuild", "--embedder", "magic"}, scope...),
		"openai without url":    append([]string{"embeddings", "rebuild", "--embedder", "openai", "--model", "m", "--dimension", "4", "--profile", "openai/m@4"}, scope...),
		"ollama without model":  append([]string{"embeddings", "rebuild", "--embedder", "ollama", "--url", "http://localhost:1", "--dimension", "4", "--profile", "ollama/m@4"}, scope...),
		"remote local profile":  append([]string{"embeddings", "rebuild", "--embedder", "ollama", "--url", "http://localhost:1", "--model", "m", "--dimension", "4"}, scope...),
		"bad profile":           append([]string{"status", "--profile", "has space"}, scope...),
		"unparsable dsn":        {"migrate", "--dsn", "postgres://user:s3cret-pw@host:notaport/db"},
		"unparsable dsn scoped": {"status", "--dsn", "postgres://user:s3cret-pw@host:notaport/db", "--tenant", "acme", "--project", "apollo", "--operator", "ops"},
	}
	for name, args := range bad {
		r := runCLI(t, bin, args...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("%s: exit %d, want 2 with a message (stderr %q)", name, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "s3cret-pw") {
			t.Errorf("%s: the password reached stderr", name)
		}
	}
	// A database that cannot be reached is a failed command, not bad input.
	r = runCLI(t, bin, append([]string{"status"}, scope...)...).want(t, 1, "unreachable database")
	if !strings.Contains(r.stderr, "cannot connect") {
		t.Errorf("unreachable database: %q", r.stderr)
	}
}

// TestHelpNeverPrintsTheDSN: the DSN comes from the environment after
// parsing, so no help text shows it as a default.
func TestHelpNeverPrintsTheDSN(t *testing.T) {
	getenv := func(k string) string {
		if k == "MEMORYKIT_DSN" {
			return "postgres://ops:hunter2-pw@db.internal/memorykit"
		}
		return ""
	}
	for _, c := range commands {
		var out, errOut bytes.Buffer
		args := append(strings.Fields(c.name), "--help")
		if code := run(context.Background(), args, &out, &errOut, getenv); code != 0 {
			t.Errorf("%s --help: exit %d", c.name, code)
		}
		if strings.Contains(out.String()+errOut.String(), "hunter2-pw") {
			t.Errorf("%s --help printed the DSN", c.name)
		}
	}
}

// acceptAll lets the test seed content the CLI itself never writes.
type acceptAll struct{}

func (acceptAll) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

// TestCLIPostgres runs every command against real PostgreSQL in a schema
// of its own.
func TestCLIPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	bin := buildCLI(t)
	ctx := context.Background()
	common := []string{"--dsn", dsn, "--schema", schema}
	scoped := func(args ...string) []string {
		return append(append(args, common...), "--tenant", "acme", "--project", "apollo", "--operator", "ops-ana")
	}

	// Nothing works before migrate, and nothing gets migrated by accident.
	r := runCLI(t, bin, scoped("status")...).want(t, 1, "status before migrate")
	if !strings.Contains(r.stderr, "not migrated") {
		t.Errorf("status before migrate: %q", r.stderr)
	}
	r = runCLI(t, bin, append([]string{"migrate"}, common...)...).want(t, 0, "migrate")
	if want := fmt.Sprintf("schema %s: migrated, version %d\n", schema, pgstore.SchemaVersion); r.stdout != want {
		t.Errorf("migrate: %q, want %q", r.stdout, want)
	}
	runCLI(t, bin, append([]string{"migrate"}, common...)...).want(t, 0, "migrate again")

	// Seed through pgstore, the way a Host would have written.
	guard, err := memorykit.NewWriteGuard(cliLimits(), acceptAll{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.Open(ctx, dsn, pgstore.Config{Clock: clock.New(), Guard: guard, Tombstones: storetest.NewTombstones(t), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	acme, _ := memorykit.ProjectScope("acme", "apollo")
	globex, _ := memorykit.ProjectScope("globex", "apollo")
	user := memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}
	model := memorykit.Actor{Kind: memorykit.ActorModel, ID: "assistant"}
	create := func(s memorykit.Scope, status memorykit.Status, actor memorykit.Actor, key, content string) string {
		t.Helper()
		rec, err := store.Create(ctx, memorykit.NewRecord{Scope: s, Kind: memorykit.KindFact, Key: key, Content: content, Status: status, Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		return rec.ID
	}
	active1 := create(acme, memorykit.StatusActive, user, "deploy region", "CANARY-A runs in eu-west-1")
	create(acme, memorykit.StatusActive, user, "database", "CANARY-B PostgreSQL")
	cand1 := create(acme, memorykit.StatusCandidate, model, "deploy region", "CANARY-C moved to us-east-1\n\tsecond line")
	cand2 := create(acme, memorykit.StatusCandidate, model, "on call", "CANARY-D page the SRE")
	foreign := create(globex, memorykit.StatusActive, user, "deploy region", "CANARY-E globex secret")
	create(globex, memorykit.StatusCandidate, model, "x", "CANARY-F globex candidate")
	if _, err := store.EnqueueJob(ctx, storekit.NewJob{ID: "job_cli_test", Scope: acme, Payload: "CANARY-G transcript", MaxAttempts: 3, MaxReaps: 3}); err != nil {
		t.Fatal(err)
	}

	// status: numbers only.
	r = runCLI(t, bin, scoped("status")...).want(t, 0, "status")
	for _, line := range []string{
		fmt.Sprintf("schema version %d", pgstore.SchemaVersion), "scope acme/project/apollo", "records candidate 2", "records active 2",
		"records total 4", "pending embeddings (memorykit/hash-v1) 2", "jobs queued 1", "jobs leased 0",
		"pending embeddings (memorykit/hash-v1, all projects) 3", "jobs queued (all projects) 1",
		"pending embeddings (memorykit/hash-v2) 2", "pending embeddings (memorykit/hash-v2, all projects) 3",
	} {
		if !strings.Contains(squeeze(r.stdout), line+"\n") {
			t.Errorf("status lacks %q:\n%s", line, r.stdout)
		}
	}
	assertNoContent(t, "status", r)

	// candidates list: only this Scope's, content quoted.
	r = runCLI(t, bin, scoped("candidates", "list")...).want(t, 0, "candidates list")
	if !strings.Contains(r.stdout, "2 candidates in acme/project/apollo") || !strings.Contains(r.stdout, cand1) ||
		!strings.Contains(r.stdout, cand2) || strings.Contains(r.stdout, "CANARY-F") {
		t.Errorf("candidates list:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "\tsecond line") || !strings.Contains(r.stdout, `us-east-1\n\tsecond line"`) {
		t.Errorf("candidate content reached the terminal unquoted:\n%q", r.stdout)
	}
	// Review hints: cand1 would supersede active1 (same kind and key);
	// globex's record with the same key is never shown; cand2 supersedes
	// nothing.
	if !strings.Contains(r.stdout, "  supersedes "+active1+"  fact  key=\"deploy region\"  version=1\n    content=\"CANARY-A runs in eu-west-1\"\n") ||
		!strings.Contains(r.stdout, "  supersedes nothing\n") || strings.Contains(r.stdout, foreign) ||
		strings.Contains(r.stdout, "CANARY-E") || strings.Contains(r.stdout, "hints degraded") {
		t.Errorf("candidates list hints:\n%s", r.stdout)
	}
	r = runCLI(t, bin, scoped("candidates", "list", "--limit", "1")...).want(t, 0, "candidates list page")
	first := strings.Fields(r.stdout[strings.Index(r.stdout, "more: --after "):])[2]
	r = runCLI(t, bin, scoped("candidates", "list", "--limit", "1", "--after", first)...).want(t, 0, "candidates list page 2")
	if strings.Contains(r.stdout, first) || !strings.Contains(r.stdout, "1 candidates") {
		t.Errorf("second page:\n%s", r.stdout)
	}

	// Review actions, recorded under the operator's identity.
	runCLI(t, bin, scoped("candidates", "activate", "--id", cand1, "--expect-version", "5")...).want(t, 1, "stale activate")
	r = runCLI(t, bin, scoped("candidates", "activate", "--id", cand1, "--reason", "checked with ops")...).want(t, 0, "activate")
	if r.stdout != cand1+": active, version 2, by operator:ops-ana\n" {
		t.Errorf("activate: %q", r.stdout)
	}
	got, err := store.Get(ctx, acme, active1)
	if err != nil || got.Status != memorykit.StatusSuperseded {
		t.Errorf("activation did not supersede: %v %v", got.Status, err)
	}
	runCLI(t, bin, scoped("candidates", "reject", "--id", cand2)...).want(t, 0, "reject")
	r = runCLI(t, bin, scoped("candidates", "reject", "--id", cand2)...).want(t, 1, "reject twice")
	if !strings.Contains(r.stderr, "invalid transition") || !strings.Contains(r.stderr, "next: the record is out of recall already") {
		t.Errorf("reject twice: %q", r.stderr)
	}

	// forget then erase.
	runCLI(t, bin, scoped("erase", "--id", cand1)...).want(t, 1, "erase an active record")
	runCLI(t, bin, scoped("forget", "--id", cand1, "--reason", "outdated")...).want(t, 0, "forget")
	r = runCLI(t, bin, scoped("erase", "--id", cand1, "--reason", "customer request")...).want(t, 0, "erase")
	if !strings.HasPrefix(r.stdout, cand1+": erased, version 4") {
		t.Errorf("erase: %q", r.stdout)
	}
	got, err = store.Get(ctx, acme, cand1)
	if err != nil || got.Content != "" || got.ContentHash != "" {
		t.Errorf("erase left content: %+v %v", got, err)
	}

	// Another tenant's record is out of reach, and stays as it was.
	for _, cmd := range [][]string{{"forget"}, {"erase"}, {"audit"}, {"candidates", "activate"}} {
		r := runCLI(t, bin, scoped(append(cmd, "--id", foreign)...)...).want(t, 1, strings.Join(cmd, " ")+" of a foreign record")
		if !strings.Contains(r.stderr, "not found") {
			t.Errorf("%v of a foreign record: %q", cmd, r.stderr)
		}
	}
	if got, err := store.Get(ctx, globex, foreign); err != nil || got.Status != memorykit.StatusActive || got.Version != 1 {
		t.Errorf("foreign record changed: %v %v", got.Status, err)
	}

	// audit: every action, with the operator and reason codes, no content
	// (erase drops free-text reasons).
	r = runCLI(t, bin, scoped("audit", "--id", cand1)...).want(t, 0, "audit")
	want := []string{
		`^VERSION +ACTION +ACTOR +STATUS +AT +SNAPSHOT +REASON$`,
		`^1 +create +model:assistant +candidate +\S+Z +scrubbed +""$`,
		`^2 +activate +operator:ops-ana +active +\S+Z +scrubbed +""$`,
		`^3 +forget +operator:ops-ana +inactive +\S+Z +scrubbed +"outdated"$`,
		`^4 +erase +operator:ops-ana +erased +\S+Z +scrubbed +""$`,
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(want) {
		t.Fatalf("audit:\n%s", r.stdout)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("audit line %d = %q, want %s", i, lines[i], re)
		}
	}
	assertNoContent(t, "audit", r)
	r = runCLI(t, bin, scoped("audit", "--id", active1)...).want(t, 0, "audit kept")
	if !strings.Contains(r.stdout, "kept") {
		t.Errorf("audit of a superseded record keeps its snapshot:\n%s", r.stdout)
	}

	// embeddings rebuild: runs the worker until nothing of this project
	// is pending, and leases nothing of another project.
	r = runCLI(t, bin, scoped("embeddings", "rebuild", "--batch", "1")...).want(t, 0, "rebuild")
	if !strings.Contains(r.stdout, "deleted 0 embeddings of memorykit/hash-v1 in acme/project/apollo") ||
		!strings.Contains(r.stdout, "rebuild: round 1, leased 1, stored 1") ||
		!strings.HasSuffix(r.stdout, "rebuild done: 1 rounds, 1 stored, 0 pending in acme/project/apollo\n") {
		t.Errorf("rebuild:\n%s", r.stdout)
	}
	assertNoContent(t, "rebuild", r)
	if n, err := store.PendingEmbeddingsIn(ctx, acme, "memorykit/hash-v1"); err != nil || n != 0 {
		t.Errorf("pending after rebuild: %d %v", n, err)
	}
	if n, err := store.PendingEmbeddingsIn(ctx, globex, "memorykit/hash-v1"); err != nil || n != 1 {
		t.Errorf("the other project's record was embedded by this project's rebuild: pending %d %v", n, err)
	}
	r = runCLI(t, bin, scoped("embeddings", "rebuild")...).want(t, 0, "rebuild again")
	if !strings.Contains(r.stdout, "deleted 1 embeddings") || !strings.Contains(r.stdout, "rebuild done: 1 rounds, 1 stored, 0 pending") {
		t.Errorf("second rebuild (only this project's vector is deleted):\n%s", r.stdout)
	}
	// The hash-v2 profile is rebuilt apart: its own vectors, hash-v1's kept.
	r = runCLI(t, bin, scoped("embeddings", "rebuild", "--profile", "memorykit/hash-v2")...).want(t, 0, "rebuild hash-v2")
	if !strings.Contains(r.stdout, "deleted 0 embeddings of memorykit/hash-v2 in acme/project/apollo") ||
		!strings.HasSuffix(r.stdout, " 0 pending in acme/project/apollo\n") {
		t.Errorf("hash-v2 rebuild:\n%s", r.stdout)
	}
	for _, profile := range []string{"memorykit/hash-v1", "memorykit/hash-v2"} {
		if n, err := store.PendingEmbeddingsIn(ctx, acme, profile); err != nil || n != 0 {
			t.Errorf("%s pending after the hash-v2 rebuild: %d %v", profile, n, err)
		}
	}
	// An OpenAI-compatible server: the key comes from the environment
	// variable --api-key-env names, and the vectors go to the profile given.
	var served atomic.Int32
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer sk-cli-test" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var out struct {
			Data []item `json:"data"`
		}
		for i := range req.Input {
			out.Data = append(out.Data, item{Index: i, Embedding: []float64{1, 0, 0, float64(i + 1)}})
		}
		served.Add(int32(len(req.Input)))
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer fake.Close()
	t.Setenv("CLI_TEST_EMBED_KEY", "sk-cli-test")
	r = runCLI(t, bin, scoped("embeddings", "rebuild", "--embedder", "openai", "--url", fake.URL, "--model", "m-small",
		"--dimension", "4", "--profile", "openai/m-small@4", "--api-key-env", "CLI_TEST_EMBED_KEY")...).want(t, 0, "rebuild openai")
	if !strings.HasSuffix(r.stdout, "rebuild done: 1 rounds, 1 stored, 0 pending in acme/project/apollo\n") || served.Load() != 1 || strings.Contains(r.stdout+r.stderr, "sk-cli-test") {
		t.Errorf("openai rebuild (served %d):\n%s%s", served.Load(), r.stdout, r.stderr)
	}
	r = runCLI(t, bin, scoped("status")...).want(t, 0, "status after")
	for _, line := range []string{"records active 1", "records superseded 1", "records rejected 1", "records erased 1", "records total 4", "pending embeddings (memorykit/hash-v1) 0"} {
		if !strings.Contains(squeeze(r.stdout), line+"\n") {
			t.Errorf("status after lacks %q:\n%s", line, r.stdout)
		}
	}
	assertNoContent(t, "status after", r)
}

// squeeze collapses runs of spaces, so tabwriter alignment does not matter.
func squeeze(s string) string { return regexp.MustCompile(` +`).ReplaceAllString(s, " ") }

func assertNoContent(t *testing.T, what string, r result) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, "CANARY") {
		t.Errorf("%s printed memory content:\n%s%s", what, r.stdout, r.stderr)
	}
}
