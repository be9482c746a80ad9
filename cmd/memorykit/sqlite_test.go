package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestCLISQLite runs the commands on an embedded Host's SQLite file with
// --sqlite as on --dsn: migrate, status, review actions, rebuild, purge
// and verify-erased (which scans the file's bytes). The file is seeded
// through sqlitestore while the CLI is not running, since one process
// holds the file at a time; a file held open is refused.
func TestCLISQLite(t *testing.T) {
	bin := buildCLI(t)
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "memorykit.db")
	common := []string{"--sqlite", file}
	scoped := func(args ...string) []string {
		return append(append(args, common...), "--tenant", "acme", "--project", "apollo", "--operator", "ops-ana")
	}

	r := runCLI(t, bin, scoped("status")...).want(t, 1, "status before migrate")
	if !strings.Contains(r.stderr, "no such file") || strings.Contains(r.stderr, "not migrated") {
		t.Errorf("status on a missing file: %q", r.stderr)
	}
	r = runCLI(t, bin, append([]string{"migrate"}, common...)...).want(t, 0, "migrate")
	if want := fmt.Sprintf("file %s: migrated, version %d\n", file, sqlitestore.SchemaVersion); r.stdout != want {
		t.Errorf("migrate: %q, want %q", r.stdout, want)
	}
	runCLI(t, bin, "migrate", "--sqlite", file, "--dsn", "postgres://x").want(t, 2, "--sqlite with --dsn")

	guard, err := memorykit.NewWriteGuard(cliLimits(), acceptAll{})
	if err != nil {
		t.Fatal(err)
	}
	open := func() *sqlitestore.Store {
		t.Helper()
		s, err := sqlitestore.Open(ctx, file, sqlitestore.Config{Clock: clock.New(), Guard: guard, Tombstones: storetest.NewTombstones(t)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	store := open()
	acme, _ := memorykit.ProjectScope("acme", "apollo")
	user := memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}
	model := memorykit.Actor{Kind: memorykit.ActorModel, ID: "assistant"}
	create := func(status memorykit.Status, actor memorykit.Actor, key, content string) string {
		t.Helper()
		rec, err := store.Create(ctx, memorykit.NewRecord{Scope: acme, Kind: memorykit.KindFact, Key: key, Content: content, Status: status, Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		return rec.ID
	}
	active := create(memorykit.StatusActive, user, "deploy region", "CANARY-A runs in eu-west-1")
	cand := create(memorykit.StatusCandidate, model, "on call", "CANARY-D page the SRE")
	if _, err := store.EnqueueJob(ctx, storekit.NewJob{ID: "job_cli_sqlite", Scope: acme, Payload: "CANARY-G transcript", MaxAttempts: 3, MaxReaps: 3}); err != nil {
		t.Fatal(err)
	}
	// While a store holds the file, the CLI is refused.
	r = runCLI(t, bin, scoped("status")...).want(t, 1, "status on a held file")
	if !strings.Contains(r.stderr, sqlitestore.ReasonLocked) || !strings.Contains(r.stderr, "stop the Host first") {
		t.Errorf("status on a held file: %q", r.stderr)
	}
	// The Host embeds with memorykit/hash-v2: the record is embedded for
	// that profile and pending only for hash-v1.
	rec, err := store.Get(ctx, acme, active)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EmbedAll(t, store, embedder.NewLocalV2(), rec)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	r = runCLI(t, bin, scoped("status")...).want(t, 0, "status")
	for _, line := range []string{
		"file " + file, fmt.Sprintf("schema version %d", sqlitestore.SchemaVersion), "records candidate 1", "records active 1",
		"pending embeddings (memorykit/hash-v1) 1", "pending embeddings (memorykit/hash-v2) 0", "jobs queued 1",
		"pending embeddings (memorykit/hash-v2, all projects) 0",
	} {
		if !strings.Contains(squeeze(r.stdout), line+"\n") {
			t.Errorf("status lacks %q:\n%s", line, r.stdout)
		}
	}
	assertNoContent(t, "status", r)
	// Without the variable the CLI names it, unless the Host's secret file
	// sits beside the SQLite file.
	noSecret := []string{"MEMORYKIT_TOMBSTONE_SECRET="}
	r = runCLIEnv(t, bin, noSecret, scoped("status")...).want(t, 2, "status without a secret")
	if !strings.Contains(r.stderr, "MEMORYKIT_TOMBSTONE_SECRET") {
		t.Errorf("status without a secret: %q", r.stderr)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(file), "tombstone.secret"), []byte(storetest.TestTombstoneSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLIEnv(t, bin, noSecret, scoped("status")...).want(t, 0, "status with the Host's secret file")
	// One profile when --profile names it; a path the Host would clean
	// ("//tmp/…") names the same file.
	r = runCLI(t, bin, "status", "--sqlite", "/"+file, "--tenant", "acme", "--project", "apollo", "--operator", "ops-ana",
		"--profile", "memorykit/hash-v2").want(t, 0, "status --profile on a doubled-slash path")
	if !strings.Contains(squeeze(r.stdout), "pending embeddings (memorykit/hash-v2) 0\n") || strings.Contains(r.stdout, "hash-v1") {
		t.Errorf("status --profile memorykit/hash-v2:\n%s", r.stdout)
	}
	r = runCLI(t, bin, scoped("candidates", "list")...).want(t, 0, "candidates list")
	if !strings.Contains(r.stdout, "1 candidates in acme/project/apollo") || !strings.Contains(r.stdout, cand) {
		t.Errorf("candidates list:\n%s", r.stdout)
	}
	// The hints: nothing to supersede; the active record shares the word
	// "canary" with the candidate (full text).
	if !strings.Contains(r.stdout, "  supersedes nothing\n") ||
		!strings.Contains(r.stdout, "  similar "+active+"  fact  key=\"deploy region\"  version=1  score=") ||
		!strings.Contains(r.stdout, "reason=similar_content\n    content=\"CANARY-A runs in eu-west-1\"\n") {
		t.Errorf("candidates list hints:\n%s", r.stdout)
	}
	runCLI(t, bin, scoped("candidates", "activate", "--id", cand)...).want(t, 0, "activate")
	runCLI(t, bin, scoped("forget", "--id", cand)...).want(t, 0, "forget")
	r = runCLI(t, bin, scoped("erase", "--id", cand)...).want(t, 0, "erase")
	if !strings.HasPrefix(r.stdout, cand+": erased, version 4") {
		t.Errorf("erase: %q", r.stdout)
	}
	r = runCLI(t, bin, scoped("embeddings", "rebuild")...).want(t, 0, "rebuild")
	if !strings.HasSuffix(r.stdout, "rebuild done: 1 rounds, 1 stored, 0 pending in acme/project/apollo\n") {
		t.Errorf("rebuild:\n%s", r.stdout)
	}

	verify := func(text string) []string {
		return append(append([]string{"verify-erased"}, common...), "--tenant", "acme", "--project", "apollo", "--canary", text)
	}
	runCLI(t, bin, verify("canary-d")...).want(t, 0, "verify-erased of the erased candidate")
	r = runCLI(t, bin, verify("canary-a")...).want(t, 1, "verify-erased of a kept record")
	if !strings.Contains(r.stdout, "memorykit.db") || strings.Contains(strings.ToLower(r.stdout+r.stderr), "canary-a") {
		t.Errorf("verify-erased of a kept record:\n%s%s", r.stdout, r.stderr)
	}
	runCLI(t, bin, scoped("purge", "--reason-code", "project_closed")...).want(t, 0, "purge")
	for _, text := range []string{"canary-a", "canary-g", "CANARY-D"} {
		runCLI(t, bin, verify(text)...).want(t, 0, "verify-erased after purge")
	}

	// The file reopens with the operator's actions in it.
	again := open()
	defer again.Close()
	got, err := again.Get(ctx, acme, cand)
	if err != nil || got.Status != memorykit.StatusErased || got.Content != "" {
		t.Fatalf("after the CLI: %+v, %v", got, err)
	}
}
