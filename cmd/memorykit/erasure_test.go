package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestCLIVerifyErasedPostgres: verify-erased finds a planted text before
// erase (exit 1, naming table, column and row only) and nowhere after
// (exit 0); purge prints the deletion report and leaves nothing behind.
func TestCLIVerifyErasedPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	bin := buildCLI(t)
	ctx := context.Background()
	common := []string{"--dsn", dsn, "--schema", schema}
	runCLI(t, bin, append([]string{"migrate"}, common...)...).want(t, 0, "migrate")

	guard, err := memorykit.NewWriteGuard(cliLimits(), acceptAll{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.Open(ctx, dsn, pgstore.Config{Clock: clock.New(), Guard: guard, Tombstones: storetest.NewTombstones(t), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	const canary = "Vk9Canary"
	user := memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}
	rec, err := store.Create(ctx, memorykit.NewRecord{
		Scope: scope, Kind: memorykit.KindFact, Key: "patient " + canary, Content: "the file of " + canary,
		Metadata: map[string]string{"who": canary}, Sources: []memorykit.Source{{Kind: "chat", Ref: "run-" + canary}},
		Status: memorykit.StatusActive, Actor: user, Reason: "said by " + canary,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Forget(ctx, storekit.Transition{Scope: scope, ID: rec.ID, Actor: user, Reason: "forget " + canary}); err != nil {
		t.Fatal(err)
	}
	verify := func(text string) []string {
		return append(append([]string{"verify-erased"}, common...), "--tenant", "acme", "--project", "apollo", "--canary", text)
	}
	r := runCLI(t, bin, verify(canary)...).want(t, 1, "verify-erased before erase")
	for _, where := range []string{"records", "revisions", "content", "key", "metadata", "sources", "reason", "id=" + rec.ID} {
		if !strings.Contains(r.stdout, where) {
			t.Errorf("verify-erased before erase does not name %q:\n%s", where, r.stdout)
		}
	}
	if strings.Contains(strings.ToLower(r.stdout+r.stderr), strings.ToLower(canary)) {
		t.Fatalf("verify-erased printed the text it looked for:\n%s%s", r.stdout, r.stderr)
	}
	// The full-width form of the text is found too (NFKC).
	runCLI(t, bin, verify("ｖｋ９ｃａｎａｒｙ")...).want(t, 1, "verify-erased with a full-width canary")

	scoped := append(append([]string(nil), common...), "--tenant", "acme", "--project", "apollo", "--operator", "ops-ana")
	runCLI(t, bin, append([]string{"erase", "--id", rec.ID, "--reason", "subject_request"}, scoped...)...).want(t, 0, "erase")
	r = runCLI(t, bin, verify(canary)...).want(t, 0, "verify-erased after erase")
	if strings.TrimSpace(r.stdout) != "not found" {
		t.Fatalf("verify-erased after erase: %q", r.stdout)
	}

	// purge: every other record of the project, in one report.
	const other = "Wq2Canary"
	var ids []string
	for _, key := range []string{"one", "two", "three"} {
		r, err := store.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: key + " " + other,
			Content: other, Status: memorykit.StatusActive, Actor: user})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if _, err := store.EnqueueJob(ctx, storekit.NewJob{ID: storekit.ExtractionJobID(scope, "run-9"), Scope: scope,
		Payload: "turn about " + other, MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	runCLI(t, bin, verify(other)...).want(t, 1, "verify-erased before purge")
	runCLI(t, bin, append([]string{"purge"}, scoped...)...).want(t, 2, "purge without a reason code")
	r = runCLI(t, bin, append([]string{"purge", "--reason-code", "project_closed"}, scoped...)...).want(t, 0, "purge")
	var rep purgeJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("purge output is not the JSON report: %v\n%s", err, r.stdout)
	}
	sort.Strings(ids)
	if rep.Records != 3 || strings.Join(rep.RecordIDs, ",") != strings.Join(ids, ",") || rep.Jobs != 1 || rep.Operator != "ops-ana" ||
		rep.ReasonCode != "project_closed" || !strings.HasPrefix(rep.Digest, "sha256:") {
		t.Fatalf("purge report: %+v", rep)
	}
	runCLI(t, bin, verify(other)...).want(t, 0, "verify-erased after purge")
}

// TestCLIVerifyErasedIsScopedAndSeesEscapes: verify-erased finds live text
// that storage escapes (&, <, >, quotes, a tab in a metadata value, quotes
// in a source reference), and with --tenant acme --project apollo it
// reports acme's rows only: once acme's copy is erased it answers "not
// found" although another tenant holds the same text, which that
// tenant's verify still finds. On PostgreSQL and on a SQLite file.
func TestCLIVerifyErasedIsScopedAndSeesEscapes(t *testing.T) {
	bin := buildCLI(t)
	ctx := context.Background()
	guard, err := memorykit.NewWriteGuard(cliLimits(), acceptAll{})
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := memorykit.ProjectScope("acme", "apollo")
	globex, _ := memorykit.ProjectScope("globex", "apollo")
	user := memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}
	const content = `Tom & Jerry <script> zq8`
	const meta = "tab\there \"q\" zq8"
	const ref = `ref "quoted" zq8`
	plant := func(t *testing.T, s storekit.Store) string {
		t.Helper()
		in := memorykit.NewRecord{Scope: acme, Kind: memorykit.KindFact, Key: "cartoon", Content: content,
			Metadata: map[string]string{"note": meta}, Sources: []memorykit.Source{{Kind: "doc", Ref: ref}},
			Status: memorykit.StatusActive, Actor: user}
		rec, err := s.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		in.Scope = globex
		if _, err := s.Create(ctx, in); err != nil {
			t.Fatal(err)
		}
		return rec.ID
	}
	check := func(t *testing.T, common []string) {
		verify := func(tenant, text string) []string {
			return append(append([]string{"verify-erased"}, common...), "--tenant", tenant, "--project", "apollo", "--canary", text)
		}
		for _, text := range []string{content, meta, ref} {
			r := runCLI(t, bin, verify("acme", text)...).want(t, 1, "verify-erased of live escaped text")
			if strings.Contains(r.stdout, "globex") {
				t.Errorf("acme's verify lists globex's rows:\n%s", r.stdout)
			}
		}
		scoped := append(append([]string(nil), common...), "--tenant", "acme", "--project", "apollo", "--operator", "ops-ana")
		runCLI(t, bin, append([]string{"purge", "--reason-code", "project_closed"}, scoped...)...).want(t, 0, "purge")
		for _, text := range []string{content, meta, ref} {
			r := runCLI(t, bin, verify("acme", text)...).want(t, 0, "verify-erased after acme's purge")
			if strings.TrimSpace(r.stdout) != "not found" {
				t.Errorf("after purge: %q", r.stdout)
			}
			runCLI(t, bin, verify("globex", text)...).want(t, 1, "verify-erased of globex's live copy")
		}
	}
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.DSN(t)
		schema := pgtest.Schema(t, dsn)
		common := []string{"--dsn", dsn, "--schema", schema}
		runCLI(t, bin, append([]string{"migrate"}, common...)...).want(t, 0, "migrate")
		store, err := pgstore.Open(ctx, dsn, pgstore.Config{Clock: clock.New(), Guard: guard, Tombstones: storetest.NewTombstones(t), Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		plant(t, store)
		check(t, common)
	})
	t.Run("sqlite", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "memorykit.db")
		store, err := sqlitestore.Open(ctx, file, sqlitestore.Config{Clock: clock.New(), Guard: guard, Tombstones: storetest.NewTombstones(t)})
		if err != nil {
			t.Fatal(err)
		}
		plant(t, store)
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, []string{"--sqlite", file})
	})
}
