package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

var actor = memorykit.Actor{Kind: memorykit.ActorUser, ID: "u1"}

func openAt(t testing.TB, path string, clk clock.Clock, sync sqlitestore.SyncMode) *sqlitestore.Store {
	t.Helper()
	return openBudget(t, path, clk, sync, 0)
}

// openBudget is openAt with a memory budget (1 evicts every Scope a call
// does not need).
func openBudget(t testing.TB, path string, clk clock.Clock, sync sqlitestore.SyncMode, budget int64) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t),
		Sync: sync, MemoryBudget: budget})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func reason(err error) string {
	var me *memorykit.Error
	if errors.As(err, &me) {
		return me.Reason
	}
	return ""
}

// mirrorDump is the in-process part of Dump (the file's rows come first).
func mirrorDump(t *testing.T, s *sqlitestore.Store) string {
	t.Helper()
	d, err := s.Dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, m, ok := strings.Cut(d, "\nmirror\n")
	if !ok {
		t.Fatalf("dump has no mirror part")
	}
	return m
}

// TestReopenKeepsEveryKindOfState: records with revisions, vectors,
// embedding leases, jobs (leased too) and tokens survive Close and Open,
// and the reopened store goes on from them (fencing tokens keep growing).
func TestReopenKeepsEveryKindOfState(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	clk := storetest.NewClock()
	s := openAt(t, path, clk, sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "tenant-a", "project-1")
	r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "color", Content: "the sky is teal",
		Status: memorykit.StatusActive, Actor: actor, Metadata: map[string]string{"m": "1"}, Sources: []memorykit.Source{{Kind: "doc", Ref: "r1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: scope, ID: r.ID, Actor: actor}, Content: "the sky is cyan"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "other", Content: "a candidate",
		Status: memorykit.StatusCandidate, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	tasks, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p/one", WorkerID: "w1", TTL: time.Minute, Max: 5})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("lease = %v, %v", tasks, err)
	}
	if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: r.ID, Profile: "p/one", ContentHash: r.ContentHash,
		Vector: []float32{0.5, -1.25}, WorkerID: "w1", LeaseToken: tasks[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p/two", WorkerID: "w2", TTL: time.Minute, Max: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: "job-1", Scope: scope, Payload: "turn text", MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: "x1", TTL: time.Minute, Max: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("lease jobs = %v, %v", jobs, err)
	}
	before := mirrorDump(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openAt(t, path, clk, sqlitestore.SyncNormal)
	if after := mirrorDump(t, again); after != before {
		t.Fatalf("state differs after reopening:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	res, err := again.Recall(ctx, storekit.RecallQuery{Scope: scope, Terms: []string{"cyan"}, Vector: []float32{0.5, -1.25}, Profile: "p/one",
		ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if err != nil || len(res.FullText) != 1 || len(res.Vector) != 1 {
		t.Fatalf("recall after reopen = %+v, %v", res, err)
	}
	if _, err := again.EnqueueJob(ctx, storekit.NewJob{ID: "job-2", Scope: scope, Payload: "more", MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	next, err := again.LeaseJobs(ctx, storekit.JobLease{WorkerID: "x2", TTL: time.Minute, Max: 1})
	if err != nil || len(next) != 1 || next[0].LeaseToken <= jobs[0].LeaseToken {
		t.Fatalf("lease after reopen = %+v, %v; want a token above %d", next, err, jobs[0].LeaseToken)
	}
}

// TestSecondOpenIsLocked: while a store holds the file, another Open of it
// fails with ReasonLocked and changes nothing; after Close it opens.
func TestSecondOpenIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	clk := storetest.NewClock()
	s := openAt(t, path, clk, sqlitestore.SyncNormal)
	_, err := sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)})
	if !errors.Is(err, memorykit.ErrUnavailable) || reason(err) != sqlitestore.ReasonLocked {
		t.Fatalf("second Open = %v; want ErrUnavailable %s", err, sqlitestore.ReasonLocked)
	}
	if _, err := s.Create(context.Background(), memorykit.NewRecord{Scope: storetest.Scope(t, "t", "p"), Kind: memorykit.KindFact, Key: "k",
		Content: "still writable", Status: memorykit.StatusActive, Actor: actor}); err != nil {
		t.Fatalf("the first store no longer writes: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	openAt(t, path, clk, sqlitestore.SyncNormal)
}

// TestFailedCommitPoisonsTheStore: once a commit fails, every call fails
// with ReasonPoisoned (memory may be ahead of the file), and reopening
// shows only what was committed.
func TestFailedCommitPoisonsTheStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	clk := storetest.NewClock()
	s := openAt(t, path, clk, sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "t", "p")
	kept, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "a", Content: "kept", Status: memorykit.StatusActive, Actor: actor})
	if err != nil {
		t.Fatal(err)
	}
	sqlitestore.Poison(s)
	_, err = s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "b", Content: "lost", Status: memorykit.StatusActive, Actor: actor})
	if !errors.Is(err, memorykit.ErrUnavailable) || reason(err) != sqlitestore.ReasonPoisoned {
		t.Fatalf("create with a failing commit = %v; want %s", err, sqlitestore.ReasonPoisoned)
	}
	if _, err := s.Get(ctx, scope, kept.ID); reason(err) != sqlitestore.ReasonPoisoned {
		t.Fatalf("get on a poisoned store = %v; want %s", err, sqlitestore.ReasonPoisoned)
	}
	if _, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: "w", TTL: time.Minute, Max: 1}); reason(err) != sqlitestore.ReasonPoisoned {
		t.Fatalf("lease on a poisoned store = %v; want %s", err, sqlitestore.ReasonPoisoned)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openAt(t, path, clk, sqlitestore.SyncNormal)
	list, err := again.List(ctx, storekit.ListFilter{Scope: scope, Limit: 10})
	if err != nil || len(list) != 1 || list[0].ID != kept.ID {
		t.Fatalf("after reopen List = %+v, %v; want only %s", list, err, kept.ID)
	}
}

// TestOpenRefusesANewerSchema: a file migrated by a newer sqlitestore is
// ErrIntegrity with ReasonSchemaVersionNewer, and is left as it was.
func TestOpenRefusesANewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	clk := storetest.NewClock()
	s := openAt(t, path, clk, sqlitestore.SyncNormal)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 'x')`, sqlitestore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)})
	if !errors.Is(err, memorykit.ErrIntegrity) || reason(err) != sqlitestore.ReasonSchemaVersionNewer {
		t.Fatalf("Open of a newer schema = %v; want %s", err, sqlitestore.ReasonSchemaVersionNewer)
	}
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != sqlitestore.SchemaVersion+1 {
		t.Fatalf("schema_migrations rows = %d, %v; want %d (unchanged)", n, err, sqlitestore.SchemaVersion+1)
	}
}

// TestOpenValidatesConfig: a missing path, clock, guard or tombstones, or
// an unknown sync mode, is ErrInvalidConfig and creates no file.
func TestOpenValidatesConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.db")
	ok := sqlitestore.Config{Clock: clock.NewMock(), Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)}
	noClock, noGuard, noKeys, badSync := ok, ok, ok, ok
	noClock.Clock, noGuard.Guard, noKeys.Tombstones, badSync.Sync = nil, nil, nil, 7
	for name, c := range map[string]struct {
		path string
		cfg  sqlitestore.Config
	}{"no path": {"", ok}, "no clock": {path, noClock}, "no guard": {path, noGuard}, "no tombstones": {path, noKeys}, "bad sync": {path, badSync}} {
		if s, err := sqlitestore.Open(context.Background(), c.path, c.cfg); s != nil || !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("%s: Open = %v, %v; want ErrInvalidConfig", name, s, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Fatalf("a rejected config created files: %v", m)
	}
}

// TestFileSchemaVersionAndCountScope: the version of a file reads without
// migrating it (0 for a missing file), and a Scope's job counts come from
// the file.
func TestFileSchemaVersionAndCountScope(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	if v, err := sqlitestore.FileSchemaVersion(ctx, path); err != nil || v != 0 {
		t.Fatalf("version of a missing file = %d, %v", v, err)
	}
	s := openAt(t, path, storetest.NewClock(), sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "t", "p")
	for _, id := range []string{"j1", "j2"} {
		if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: id, Scope: scope, Payload: "x", MaxAttempts: 1, MaxReaps: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: "j3", Scope: storetest.Scope(t, "t", "q"), Payload: "x", MaxAttempts: 1, MaxReaps: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: "w", TTL: time.Minute, Max: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := s.CountScope(ctx, "p/x", scope)
	if err != nil || c.Jobs.Queued+c.Jobs.Leased != 2 || c.Jobs.Leased > 1 {
		t.Fatalf("CountScope = %+v, %v", c, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := sqlitestore.FileSchemaVersion(ctx, path); err != nil || v != sqlitestore.SchemaVersion {
		t.Fatalf("version = %d, %v; want %d", v, err, sqlitestore.SchemaVersion)
	}
}

// TestConcurrentOpensMigrateOnce: stores opening one new file at the same
// time: exactly one gets it (and migrates it once); the others are
// refused with ReasonLocked.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	clk := storetest.NewClock()
	const n = 4
	type result struct {
		s   *sqlitestore.Store
		err error
	}
	results := make(chan result, n)
	guard, keys := storetest.NewGuard(t), storetest.NewTombstones(t)
	for i := 0; i < n; i++ {
		go func() {
			s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: clk, Guard: guard, Tombstones: keys, Sync: sqlitestore.SyncNormal})
			results <- result{s, err}
		}()
	}
	var winner *sqlitestore.Store
	for i := 0; i < n; i++ {
		r := <-results
		switch {
		case r.err == nil && winner == nil:
			winner = r.s
		case r.err == nil:
			t.Errorf("two stores opened the file")
			_ = r.s.Close()
		case reason(r.err) != sqlitestore.ReasonLocked:
			t.Errorf("a losing Open = %v; want %s", r.err, sqlitestore.ReasonLocked)
		}
	}
	if winner == nil {
		t.Fatal("no Open won")
	}
	if err := winner.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != sqlitestore.SchemaVersion {
		t.Fatalf("schema_migrations rows = %d, %v; want %d", rows, err, sqlitestore.SchemaVersion)
	}
}

// TestNewFileIsPrivateAndPathIsLiteral: a file Open creates is readable by
// its owner only, and so are its -wal and -shm files; a path holding URI
// syntax ('?', '#', '%') names exactly that file, never parameters.
func TestNewFileIsPrivateAndPathIsLiteral(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "odd?mode=ro&_pragma=x#%41.db")
	s := openAt(t, path, storetest.NewClock(), sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "tenant-a", "project-1")
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "k", Content: "c", Actor: actor, Status: memorykit.StatusActive}); err != nil {
		t.Fatalf("write through a path with URI syntax: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v, want no group or other access", e.Name(), perm)
		}
	}
	base := filepath.Base(path)
	if !slices.Contains(names, base) || !slices.Contains(names, base+"-wal") {
		t.Errorf("files %q, want %q and its -wal", names, base)
	}
}
