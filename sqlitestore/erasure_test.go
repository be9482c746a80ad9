package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestEraseAndPurgeLeaveNoTextInTheFile plants a canary in a record's
// content, metadata, sources, a correction's revision, a candidate, a
// vector's record and a job payload, and checks the raw bytes of the
// database file and its WAL: the canary is found before, absent after
// erase and purge, while another Scope's text is still found.
func TestEraseAndPurgeLeaveNoTextInTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "e.db")
	s := openAt(t, path, storetest.NewClock(), sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "tenant-e", "doomed")
	other := storetest.Scope(t, "tenant-e", "kept")
	const canary = "qzxcanaryvk9"
	const keep = "qzxkeepsake"
	r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "topic-" + canary, Content: "about " + canary,
		Status: memorykit.StatusActive, Actor: actor, Metadata: map[string]string{"note": canary}, Sources: []memorykit.Source{{Kind: "doc", Ref: canary}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: scope, ID: r.ID, Actor: actor}, Content: "now " + strings.ToUpper(canary)}); err != nil {
		t.Fatal(err)
	}
	tasks, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p/e", WorkerID: "w", TTL: time.Minute, Max: 5})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("lease = %v, %v", tasks, err)
	}
	if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: r.ID, Profile: "p/e", ContentHash: r.ContentHash,
		Vector: []float32{1, 2}, WorkerID: "w", LeaseToken: tasks[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindPreference, Key: "cand", Content: "maybe " + canary,
		Status: memorykit.StatusCandidate, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: "job-e", Scope: scope, Payload: "the user said " + canary, MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: other, Kind: memorykit.KindFact, Key: "stay", Content: "stays " + keep,
		Status: memorykit.StatusActive, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.VerifyErased(ctx, scope, canary); err != nil || len(hits) == 0 {
		t.Fatalf("before erase VerifyErased = %v, %v; want the canary found", hits, err)
	}

	if _, err := s.Forget(ctx, storekit.Transition{Scope: scope, ID: r.ID, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Erase(ctx, storekit.Transition{Scope: scope, ID: r.ID, Actor: actor, Reason: "erase_request"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Purge(ctx, scope, memorykit.Actor{Kind: memorykit.ActorOperator, ID: "op"}, "erasure_request"); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.VerifyErased(ctx, scope, canary); err != nil || len(hits) != 0 {
		t.Fatalf("after erase and purge VerifyErased = %v, %v; want nothing", hits, err)
	}
	if hits, err := s.VerifyErased(ctx, other, keep); err != nil || len(hits) == 0 {
		t.Fatalf("VerifyErased(%q) = %v, %v; want the other Scope's text found", keep, hits, err)
	}
	// And after a restart: nothing of it comes back.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if hits, err := sqlitestore.VerifyErased(ctx, path, scope, canary); err != nil || len(hits) != 0 {
		t.Fatalf("after close VerifyErased = %v, %v; want nothing", hits, err)
	}
	again := openAt(t, path, storetest.NewClock(), sqlitestore.SyncNormal)
	if d := mirrorDump(t, again); strings.Contains(strings.ToLower(d), canary) {
		t.Fatalf("the reopened store holds the canary:\n%s", d)
	}
}

// TestVerifyErasedFindsCompatibilityForms: a full-width canary stored in
// the file is found by its plain form and by itself.
func TestVerifyErasedFindsCompatibilityForms(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	s := openAt(t, path, storetest.NewClock(), sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "tenant-v", "p")
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "k", Content: "ｖｋ９ｃａｎａｒｙ",
		Status: memorykit.StatusActive, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"vk9canary", "ｖｋ９ｃａｎａｒｙ", "VK9CANARY"} {
		if hits, err := s.VerifyErased(ctx, scope, c); err != nil || len(hits) == 0 {
			t.Errorf("VerifyErased(%q) = %v, %v; want found", c, hits, err)
		}
	}
	if _, err := sqlitestore.VerifyErased(ctx, filepath.Join(t.TempDir(), "missing.db"), scope, "x"); err == nil {
		t.Error("VerifyErased of a missing file succeeded")
	}
}

// TestSingleEraseLeavesNoTextInTheFile: one erase, without a purge, takes
// the record's text out of the file's bytes and its WAL (the rewrite
// zeroes the old cells, secure_delete, and the WAL is checkpointed and
// truncated), while the record's neighbours stay.
func TestSingleEraseLeavesNoTextInTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "one.db")
	s := openAt(t, path, storetest.NewClock(), sqlitestore.SyncFull)
	scope := storetest.Scope(t, "tenant-o", "p")
	const canary = "qzxsingleerase"
	var target memorykit.Record
	for i := 0; i < 30; i++ {
		content := fmt.Sprintf("neighbour number %d", i)
		if i == 17 {
			content = "the secret is " + canary
		}
		r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: fmt.Sprintf("k%d", i), Content: content,
			Status: memorykit.StatusActive, Actor: actor, Sources: []memorykit.Source{{Kind: "doc", Ref: "ref-" + content}}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 17 {
			target = r
		}
	}
	if _, err := s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: scope, ID: target.ID, Actor: actor},
		Content: "still about " + canary}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.VerifyErased(ctx, scope, canary); err != nil || len(hits) == 0 {
		t.Fatalf("before erase VerifyErased = %v, %v; want found", hits, err)
	}
	if _, err := s.Forget(ctx, storekit.Transition{Scope: scope, ID: target.ID, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Erase(ctx, storekit.Transition{Scope: scope, ID: target.ID, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.VerifyErased(ctx, scope, canary); err != nil || len(hits) != 0 {
		t.Fatalf("after erase VerifyErased = %v, %v; want nothing", hits, err)
	}
	if hits, err := s.VerifyErased(ctx, scope, "neighbour number 29"); err != nil || len(hits) == 0 {
		t.Fatalf("a neighbour's text is gone: %v, %v", hits, err)
	}
}

// TestVerifyErasedFindsEscapedText: the verifier finds canaries with every
// special character class in every content-bearing field while they are
// live, both through a running store and on the closed file, and none
// once erased; another Scope's live copy is not reported for the first
// Scope (storetest.RunVerifierConformance).
func TestVerifyErasedFindsEscapedText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s := openAt(t, path, storetest.NewClock(), sqlitestore.SyncNormal)
	storetest.RunVerifierConformance(t, s, func(ctx context.Context, scope memorykit.Scope, canary string) (int, error) {
		hits, err := s.VerifyErased(ctx, scope, canary)
		return len(hits), err
	})
	if t.Failed() {
		return
	}
	scope := storetest.Scope(t, "tenant-v", "verify")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if hits, err := sqlitestore.VerifyErased(ctx, path, scope, "vq14Tom & Jerry <script>'\"\\zkcontent"); err != nil || len(hits) != 0 {
		t.Fatalf("closed file, erased canary: %v, %v", hits, err)
	}
	other := storetest.Scope(t, "tenant-w", "verify")
	if hits, err := sqlitestore.VerifyErased(ctx, path, other, "Tom & Jerry <script>"); err != nil || len(hits) == 0 {
		t.Fatalf("closed file, the other Scope's live text: %v, %v; want found", hits, err)
	}
}

// TestVerifyErasedOnALockedFile: a file a running store holds cannot be
// read row by row from outside; the verifier says so (ErrUnavailable,
// ReasonLocked) instead of answering from the raw bytes alone.
func TestVerifyErasedOnALockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	s := openAt(t, path, storetest.NewClock(), sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "tenant-l", "p")
	if _, err := s.Create(context.Background(), memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "k",
		Content: "Tom & Jerry <script>", Status: memorykit.StatusActive, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	_, err := sqlitestore.VerifyErased(context.Background(), path, scope, "nothing like it")
	if !errors.Is(err, memorykit.ErrUnavailable) || reason(err) != sqlitestore.ReasonLocked {
		t.Fatalf("VerifyErased of a held file: %v; want ErrUnavailable %s", err, sqlitestore.ReasonLocked)
	}
}

// TestEraseLeavesNoRunRefInTheFile: the Host's turn id a finished job
// was enqueued with, and that the erased record names as its source, is
// in neither the job's tombstone nor the file's bytes after erase.
func TestEraseLeavesNoRunRefInTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s := openAt(t, path, storetest.NewClock(), sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "tenant-r", "p")
	const ref = "run-zqturnref/turn-7"
	id := storekit.ExtractionJobID(scope, ref)
	if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: id, Scope: scope, RunRef: ref, Payload: "hello", MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: "w", TTL: time.Minute, Max: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("lease: %v, %v", jobs, err)
	}
	if _, err := s.CompleteJob(ctx, storekit.JobCompletion{JobID: id, WorkerID: "w", LeaseToken: jobs[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: "k", Content: "c",
		Sources: []memorykit.Source{{Kind: "chat", Ref: ref}}, Status: memorykit.StatusActive, Actor: actor})
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := s.VerifyErased(ctx, scope, "zqturnref"); err != nil || len(hits) < 2 {
		t.Fatalf("before erase: %v, %v; want the job and the record", hits, err)
	}
	if _, err := s.Forget(ctx, storekit.Transition{Scope: scope, ID: r.ID, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Erase(ctx, storekit.Transition{Scope: scope, ID: r.ID, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if j, err := s.GetJob(ctx, scope, id); err != nil || j.RunRef != "" || j.State != storekit.JobDone {
		t.Fatalf("the finished job after erase: %+v, %v", j, err)
	}
	if hits, err := s.VerifyErased(ctx, scope, "zqturnref"); err != nil || len(hits) != 0 {
		t.Fatalf("after erase: %v, %v; want nothing", hits, err)
	}
}
