package pgstore

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// queueRows returns the record IDs queued for profile (migration 0004).
func (b *bundle) queueRows(t *testing.T, profile string) []string {
	t.Helper()
	return b.idList(t, `SELECT record_id FROM {schema}.embedding_queue WHERE profile = $1 ORDER BY record_id`, profile)
}

// pendingRecords computes, without the queue, the active records that
// lack a current embedding of profile.
func (b *bundle) pendingRecords(t *testing.T, profile string) []string {
	t.Helper()
	return b.idList(t, `SELECT r.id FROM {schema}.records r
		LEFT JOIN {schema}.embeddings e ON e.record_id = r.id AND e.tenant_id = r.tenant_id AND e.profile = $1
		WHERE r.status = 'active' AND (e.record_id IS NULL OR e.content_hash <> r.content_hash)
		ORDER BY r.id`, profile)
}

// idList runs a query returning one text column.
func (b *bundle) idList(t *testing.T, query string, args ...any) []string {
	t.Helper()
	rows, err := b.s.pool.Query(b.ctx, b.s.q(query), args...)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestPostgresEmbeddingQueueTracksPendingRecords walks a profile through
// every way a record can start or stop needing a vector and checks after
// each step that the queue holds exactly the pending records, and that
// PendingEmbeddings agrees.
func TestPostgresEmbeddingQueueTracksPendingRecords(t *testing.T) {
	b := setup(t)
	const profile = "test/queue-v1"
	check := func(step string, registered bool) {
		t.Helper()
		want := b.pendingRecords(t, profile)
		got := b.queueRows(t, profile)
		if !registered {
			want = nil
		}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("%s: queue (-want +got):\n%s", step, d)
		}
		n, err := b.s.PendingEmbeddings(b.ctx, profile)
		if err != nil || n != len(b.pendingRecords(t, profile)) {
			t.Fatalf("%s: PendingEmbeddings = %d, %v; want %d", step, n, err, len(b.pendingRecords(t, profile)))
		}
	}
	lease := func(max int) []storekit.EmbeddingTask {
		t.Helper()
		tasks, err := b.s.LeaseEmbeddings(b.ctx, storekit.EmbeddingLease{Profile: profile, WorkerID: "w1", TTL: time.Minute, Max: max})
		if err != nil {
			t.Fatal(err)
		}
		return tasks
	}
	put := func(tasks ...storekit.EmbeddingTask) {
		t.Helper()
		puts := make([]storekit.EmbeddingPut, len(tasks))
		for i, tk := range tasks {
			puts[i] = storekit.EmbeddingPut{Scope: tk.Scope, RecordID: tk.RecordID, Profile: tk.Profile,
				ContentHash: tk.ContentHash, Vector: []float32{1, float32(i)}, WorkerID: "w1", LeaseToken: tk.LeaseToken}
		}
		errs, err := b.s.PutEmbeddings(b.ctx, puts)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range errs {
			if e != nil {
				t.Fatalf("put %d: %v", i, e)
			}
		}
	}

	a := b.create(t, memorykit.KindFact, "a", "alpha", memorykit.StatusActive)
	b.create(t, memorykit.KindFact, "b", "bravo", memorykit.StatusActive)
	cand := b.create(t, memorykit.KindFact, "c", "charlie", memorykit.StatusCandidate)
	check("before the profile is registered", false)

	tasks := lease(1)
	if len(tasks) != 1 || tasks[0].RecordID != min(a.ID, tasks[0].RecordID) {
		t.Fatalf("first lease: %+v", tasks)
	}
	check("after registration", true)
	put(tasks[0])
	check("after a put", true)

	d := b.create(t, memorykit.KindFact, "d", "delta", memorykit.StatusActive)
	check("after a create", true)
	if _, err := b.s.Activate(b.ctx, storekit.Transition{Scope: b.scope, ID: cand.ID, Actor: author, Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	check("after an activation", true)
	put(lease(10)...)
	check("after embedding everything", true)
	if got := b.queueRows(t, profile); len(got) != 0 {
		t.Fatalf("queue not empty: %v", got)
	}

	if _, err := b.s.Correct(b.ctx, storekit.Correction{Transition: storekit.Transition{Scope: b.scope, ID: a.ID,
		Actor: author, Reason: "fix"}, Content: "alpha, corrected"}); err != nil {
		t.Fatal(err)
	}
	check("after a correction", true)
	if _, err := b.s.Forget(b.ctx, storekit.Transition{Scope: b.scope, ID: d.ID, Actor: author, Reason: "old"}); err != nil {
		t.Fatal(err)
	}
	check("after a forget", true)

	// A batch: items with a vector of the profile are not queued.
	items := []storekit.BatchItem{
		{Record: memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindNote, Key: "e", Content: "echo",
			Status: memorykit.StatusActive, Actor: author, Reason: "import"},
			Embedding: &storekit.BatchEmbedding{Profile: profile, Vector: []float32{0, 1}}},
		{Record: memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindNote, Key: "f", Content: "foxtrot",
			Status: memorykit.StatusActive, Actor: author, Reason: "import"}},
		{Record: memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindNote, Key: "g", Content: "golf",
			Status: memorykit.StatusActive, Actor: author, Reason: "import"},
			Embedding: &storekit.BatchEmbedding{Profile: "test/other-v1", Vector: []float32{0, 1}}},
	}
	if _, err := b.s.CreateBatch(b.ctx, items); err != nil {
		t.Fatal(err)
	}
	check("after a batch", true)

	// A batch over two tenants: each tenant's items given a vector are
	// taken off the queue (on Citus, by one statement per tenant).
	third, _ := memorykit.ProjectScope("tenant-b", "project-1")
	items = []storekit.BatchItem{
		{Record: memorykit.NewRecord{Scope: third, Kind: memorykit.KindNote, Key: "i", Content: "india",
			Status: memorykit.StatusActive, Actor: author, Reason: "import"},
			Embedding: &storekit.BatchEmbedding{Profile: profile, Vector: []float32{0, 1}}},
		{Record: memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindNote, Key: "j", Content: "juliett",
			Status: memorykit.StatusActive, Actor: author, Reason: "import"},
			Embedding: &storekit.BatchEmbedding{Profile: profile, Vector: []float32{1, 0}}},
		{Record: memorykit.NewRecord{Scope: third, Kind: memorykit.KindNote, Key: "k", Content: "kilo",
			Status: memorykit.StatusActive, Actor: author, Reason: "import"}},
	}
	if _, err := b.s.CreateBatch(b.ctx, items); err != nil {
		t.Fatal(err)
	}
	check("after a batch over two tenants", true)
	put(lease(10)...)
	check("after embedding everything again", true)

	other, _ := memorykit.ProjectScope("tenant-a", "project-2")
	if _, err := b.s.Create(b.ctx, memorykit.NewRecord{Scope: other, Kind: memorykit.KindFact, Key: "h", Content: "hotel",
		Status: memorykit.StatusActive, Actor: author, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	put(lease(10)...)
	if n, err := b.s.DeleteEmbeddings(b.ctx, profile, b.scope); err != nil || n == 0 {
		t.Fatalf("DeleteEmbeddings = %d, %v", n, err)
	}
	check("after a rebuild of one scope", true)
	if q := b.queueRows(t, profile); len(q) == 0 || slices.Contains(q, "") {
		t.Fatalf("the rebuild queued %v", q)
	}
	put(lease(20)...)
	check("after the rebuild", true)
	if _, err := b.s.Correct(b.ctx, storekit.Correction{Transition: storekit.Transition{Scope: b.scope, ID: a.ID,
		Actor: author, Reason: "fix"}, Content: "alpha, corrected again"}); err != nil {
		t.Fatal(err)
	}
	check("after a second correction", true)
	if _, err := b.s.Forget(b.ctx, storekit.Transition{Scope: b.scope, ID: a.ID, Actor: author, Reason: "old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Erase(b.ctx, storekit.Transition{Scope: b.scope, ID: a.ID, Actor: author, Reason: "gdpr"}); err != nil {
		t.Fatal(err)
	}
	check("after forget and erase", true)
}

// TestPostgresCountScope: the operator counts of one Scope leave out the
// records and jobs of every other Scope, and agree with the database-wide
// counters when only one Scope has any.
func TestPostgresCountScope(t *testing.T) {
	b := setup(t)
	const profile = "test/count-v1"
	other, _ := memorykit.ProjectScope("tenant-a", "project-2")
	mk := func(sc memorykit.Scope, key string, st memorykit.Status) memorykit.Record {
		r, err := b.s.Create(b.ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: key, Content: "text of " + key,
			Status: st, Actor: author, Reason: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := mk(b.scope, "a", memorykit.StatusActive)
	mk(b.scope, "b", memorykit.StatusActive)
	mk(b.scope, "c", memorykit.StatusCandidate)
	for _, k := range []string{"x", "y", "z"} {
		mk(other, k, memorykit.StatusActive)
	}
	if err := b.s.PutEmbedding(b.ctx, storekit.EmbeddingPut{Scope: b.scope, RecordID: a.ID, Profile: profile,
		ContentHash: a.ContentHash, Vector: []float32{1, 0}, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	for i, sc := range []memorykit.Scope{b.scope, other, other} {
		if _, err := b.s.EnqueueJob(b.ctx, storekit.NewJob{ID: fmt.Sprintf("job-%d", i), Scope: sc, Payload: "turn", MaxAttempts: 2, MaxReaps: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.s.LeaseJobs(b.ctx, storekit.JobLease{WorkerID: "w", TTL: time.Minute, Max: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := b.s.CountScope(b.ctx, profile, b.scope)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ScopeCounts{PendingEmbeddings: 1, Jobs: storekit.JobCounts{Leased: 1}}); got != want {
		t.Fatalf("CountScope = %+v, want %+v", got, want)
	}
	got, err = b.s.CountScope(b.ctx, profile, other)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ScopeCounts{PendingEmbeddings: 3, Jobs: storekit.JobCounts{Queued: 2}}); got != want {
		t.Fatalf("CountScope(other) = %+v, want %+v", got, want)
	}
	all, err := b.s.PendingEmbeddings(b.ctx, profile)
	if err != nil || all != 4 {
		t.Fatalf("PendingEmbeddings = %d, %v; want 4", all, err)
	}
	if _, err := b.s.CountScope(b.ctx, profile, memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectUser, SubjectID: "u"}); !errors.Is(err, memorykit.ErrInvalidScope) {
		t.Fatalf("CountScope of a user Scope: %v", err)
	}
}

// TestPostgresProfileRegistrationGivesWayToLongWriters: a transaction that
// holds records keeps the first lease of a new profile from registering it;
// the lease fails recoverably after registerLockTimeout instead of queueing
// every writer behind it, and succeeds once the writer is gone.
func TestPostgresProfileRegistrationGivesWayToLongWriters(t *testing.T) {
	defer func(d time.Duration) { registerLockTimeout = d }(registerLockTimeout)
	registerLockTimeout = 50 * time.Millisecond
	b := setup(t)
	b.create(t, memorykit.KindFact, "a", "alpha", memorykit.StatusActive)
	conn := adminConn(t)
	tx, err := conn.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(b.ctx, `LOCK TABLE `+quoteIdent(b.schema)+`.records IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	lease := storekit.EmbeddingLease{Profile: "test/late-v1", WorkerID: "w", TTL: time.Minute, Max: 5}
	_, err = b.s.LeaseEmbeddings(b.ctx, lease)
	if me := wantKind(t, err, memorykit.ErrUnavailable); !memorykit.IsRecoverable(err) {
		t.Fatalf("lease while a writer holds records: %v (%+v), want a recoverable error", err, me)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	tasks, err := b.s.LeaseEmbeddings(b.ctx, lease)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("lease after the writer ended: %d tasks, %v", len(tasks), err)
	}
}
