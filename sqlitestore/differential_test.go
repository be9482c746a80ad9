package sqlitestore_test

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestDifferentialAgainstMemorystore runs the same seeded random sequence
// of every kind of write and read on a memorystore and a sqlitestore that
// share one mock clock, compares every answer (values and errors), and
// every few operations closes and reopens the SQLite file and compares the
// whole state: what sqlitestore answers is memorystore's answer, and what
// its file reloads to is memorystore's state. The evicting runs give the
// store a budget of one byte, so every call loads the Scopes it needs and
// the next call that needs others evicts them: answers across Scopes
// (leases, jobs, counts) and a reopen find them on disk, and a recall of a
// Scope not loaded is answered by the file's recall index (no background
// load follows it).
func TestDifferentialAgainstMemorystore(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) { differential(t, seed, 0) })
		t.Run("seed"+strconv.FormatInt(seed, 10)+"-evicting", func(t *testing.T) { differential(t, seed, 1) })
	}
}

func differential(t *testing.T, seed int64, budget int64) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(seed))
	clk := storetest.NewClock()
	mem, err := memorystore.New(memorystore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "d.db")
	open := func() *sqlitestore.Store {
		s := openBudget(t, path, clk, sqlitestore.SyncNormal, budget)
		if budget > 0 {
			sqlitestore.NoBackgroundLoads(s)
		}
		return s
	}
	sq := open()
	scopes := []memorykit.Scope{storetest.Scope(t, "tenant-d", "p1"), storetest.Scope(t, "tenant-d", "p2")}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"}
	keys := []string{"k1", "k2", "k3", "k4"}
	text := func(n int) string {
		var b []string
		for i := 0; i < n; i++ {
			b = append(b, words[rng.Intn(len(words))])
		}
		return strings.Join(b, " ")
	}
	vec := func() []float32 { return []float32{rng.Float32() + 0.1, rng.Float32(), rng.Float32(), rng.Float32()} }
	var ids []string
	var jobIDs []string
	var tasks []storekit.EmbeddingTask
	var jobs []storekit.Job
	n := 0
	newRec := func(status memorykit.Status) memorykit.NewRecord {
		n++
		id := fmt.Sprintf("mem_d%d_%04d", seed, n)
		ids = append(ids, id)
		return memorykit.NewRecord{ID: id, Scope: scopes[rng.Intn(2)], Kind: memorykit.KindFact, Key: keys[rng.Intn(len(keys))],
			Content: text(3), Status: status, Actor: actor, Metadata: map[string]string{"w": words[rng.Intn(len(words))]}}
	}
	pickID := func() (memorykit.Scope, string) {
		if len(ids) == 0 {
			return scopes[0], "mem_none"
		}
		id := ids[rng.Intn(len(ids))]
		r, err := mem.Get(ctx, scopes[0], id)
		if err != nil {
			return scopes[1], id
		}
		return r.Scope, id
	}
	step := 0
	same := func(what string, a, b any, errA, errB error) {
		t.Helper()
		ea, eb := fmt.Sprint(errA), strings.ReplaceAll(fmt.Sprint(errB), "sqlitestore.", "memorystore.")
		va, vb := fmt.Sprintf("%+v", a), fmt.Sprintf("%+v", b)
		if ea != eb || va != vb {
			t.Fatalf("step %d %s differs:\nmemorystore: %s %s\nsqlitestore: %s %s", step, what, va, ea, vb, eb)
		}
	}
	operator := memorykit.Actor{Kind: memorykit.ActorOperator, ID: "op"}
	for step = 0; step < 400; step++ {
		switch op := rng.Intn(20); op {
		case 0, 1:
			in := newRec(memorykit.StatusActive)
			if rng.Intn(2) == 0 {
				in.Status = memorykit.StatusCandidate
			}
			a, ea := mem.Create(ctx, in)
			b, eb := sq.Create(ctx, in)
			same("create", a, b, ea, eb)
		case 2:
			items := []storekit.BatchItem{{Record: newRec(memorykit.StatusActive)}, {Record: newRec(memorykit.StatusActive),
				Embedding: &storekit.BatchEmbedding{Profile: "p/a", Vector: vec()}}}
			items[1].Record.Scope = items[0].Record.Scope
			a, ea := mem.CreateBatch(ctx, items)
			b, eb := sq.CreateBatch(ctx, items)
			same("batch", a, b, ea, eb)
		case 3, 4:
			sc, id := pickID()
			tr := storekit.Transition{Scope: sc, ID: id, Actor: actor, Reason: "because"}
			var a, b memorykit.Record
			var ea, eb error
			switch rng.Intn(5) {
			case 0:
				a, ea = mem.Activate(ctx, tr)
				b, eb = sq.Activate(ctx, tr)
			case 1:
				a, ea = mem.Reject(ctx, tr)
				b, eb = sq.Reject(ctx, tr)
			case 2:
				a, ea = mem.Forget(ctx, tr)
				b, eb = sq.Forget(ctx, tr)
			case 3:
				a, ea = mem.Erase(ctx, tr)
				b, eb = sq.Erase(ctx, tr)
			case 4:
				c := storekit.Correction{Transition: tr, Content: text(4)}
				a, ea = mem.Correct(ctx, c)
				b, eb = sq.Correct(ctx, c)
			}
			same("transition", a, b, ea, eb)
		case 5, 6:
			p := storekit.EmbeddingLease{Profile: "p/a", WorkerID: "w" + strconv.Itoa(rng.Intn(2)), TTL: time.Minute, Max: 1 + rng.Intn(3)}
			a, ea := mem.LeaseEmbeddings(ctx, p)
			b, eb := sq.LeaseEmbeddings(ctx, p)
			same("lease embeddings", a, b, ea, eb)
			tasks = append(tasks, a...)
		case 7, 8:
			if len(tasks) == 0 {
				continue
			}
			k := tasks[rng.Intn(len(tasks))]
			if rng.Intn(3) == 0 {
				r := storekit.EmbeddingRelease{Scope: k.Scope, RecordID: k.RecordID, Profile: k.Profile, ContentHash: k.ContentHash,
					WorkerID: "w0", LeaseToken: k.LeaseToken, Park: rng.Intn(2) == 0, Reason: "embed_failed", RetryAt: clk.Now().Add(time.Minute)}
				same("release embedding", nil, nil, mem.ReleaseEmbedding(ctx, r), sq.ReleaseEmbedding(ctx, r))
				continue
			}
			p := storekit.EmbeddingPut{Scope: k.Scope, RecordID: k.RecordID, Profile: k.Profile, ContentHash: k.ContentHash,
				Vector: vec(), WorkerID: "w0", LeaseToken: k.LeaseToken}
			same("put embedding", nil, nil, mem.PutEmbedding(ctx, p), sq.PutEmbedding(ctx, p))
		case 9:
			a, ea := mem.ReapEmbeddingLeases(ctx)
			b, eb := sq.ReapEmbeddingLeases(ctx)
			same("reap embeddings", a, b, ea, eb)
			a, ea = mem.ReapJobLeases(ctx)
			b, eb = sq.ReapJobLeases(ctx)
			same("reap jobs", a, b, ea, eb)
		case 10:
			j := storekit.NewJob{ID: fmt.Sprintf("job-%d-%d", seed, step), Scope: scopes[rng.Intn(2)], Payload: text(5), MaxAttempts: 2, MaxReaps: 2}
			jobIDs = append(jobIDs, j.ID)
			a, ea := mem.EnqueueJob(ctx, j)
			b, eb := sq.EnqueueJob(ctx, j)
			same("enqueue", a, b, ea, eb)
		case 11:
			p := storekit.JobLease{WorkerID: "x", TTL: time.Minute, Max: 2}
			a, ea := mem.LeaseJobs(ctx, p)
			b, eb := sq.LeaseJobs(ctx, p)
			same("lease jobs", a, b, ea, eb)
			jobs = append(jobs, a...)
		case 12:
			if len(jobs) == 0 {
				continue
			}
			j := jobs[rng.Intn(len(jobs))]
			switch rng.Intn(3) {
			case 0:
				c := storekit.JobCompletion{JobID: j.ID, WorkerID: "x", LeaseToken: j.LeaseToken}
				if rng.Intn(2) == 0 {
					cand := newRec(memorykit.StatusCandidate)
					cand.Scope, cand.Actor = j.Scope, memorykit.Actor{Kind: memorykit.ActorModel, ID: "m"}
					c.Candidates = []memorykit.NewRecord{cand}
				}
				a, ea := mem.CompleteJob(ctx, c)
				b, eb := sq.CompleteJob(ctx, c)
				same("complete", a, b, ea, eb)
			case 1:
				f := storekit.JobFailure{JobID: j.ID, WorkerID: "x", LeaseToken: j.LeaseToken, Reason: "extract_failed"}
				a, ea := mem.FailJob(ctx, f)
				b, eb := sq.FailJob(ctx, f)
				same("fail", a, b, ea, eb)
			case 2:
				r := storekit.JobRelease{JobID: j.ID, WorkerID: "x", LeaseToken: j.LeaseToken}
				same("release job", nil, nil, mem.ReleaseJob(ctx, r), sq.ReleaseJob(ctx, r))
			}
		case 13:
			if rng.Intn(2) == 0 {
				sc := scopes[rng.Intn(2)]
				a, ea := mem.DeleteEmbeddings(ctx, "p/a", sc)
				b, eb := sq.DeleteEmbeddings(ctx, "p/a", sc)
				same("delete embeddings", a, b, ea, eb)
			} else {
				a, ea := mem.DeleteAllEmbeddings(ctx, "p/a")
				b, eb := sq.DeleteAllEmbeddings(ctx, "p/a")
				same("delete all embeddings", a, b, ea, eb)
			}
		case 14:
			if rng.Intn(6) != 0 {
				continue
			}
			sc := scopes[rng.Intn(2)]
			a, ea := mem.Purge(ctx, sc, operator, "project_closed")
			b, eb := sq.Purge(ctx, sc, operator, "project_closed")
			same("purge", a, b, ea, eb)
		case 15, 16:
			q := storekit.RecallQuery{Scope: scopes[rng.Intn(2)], ExactKeys: []string{keys[rng.Intn(len(keys))]},
				Terms: strings.Fields(text(2)), ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5}
			if rng.Intn(2) == 0 {
				q.Vector, q.Profile = vec(), "p/a"
			}
			a, ea := mem.Recall(ctx, q)
			b, eb := sq.Recall(ctx, q)
			same("recall", a, b, ea, eb)
			pa, ea := mem.PendingEmbeddings(ctx, "p/a")
			pb, eb := sq.PendingEmbeddings(ctx, "p/a")
			same("pending", pa, pb, ea, eb)
		case 17:
			sc, id := pickID()
			a, ea := mem.Revisions(ctx, sc, id)
			b, eb := sq.Revisions(ctx, sc, id)
			same("revisions", a, b, ea, eb)
			ca, ea := mem.CountJobs(ctx)
			cb, eb := sq.CountJobs(ctx)
			same("count jobs", ca, cb, ea, eb)
			if len(jobIDs) > 0 {
				id := jobIDs[rng.Intn(len(jobIDs))]
				sc := scopes[rng.Intn(2)]
				ja, ea := mem.GetJob(ctx, sc, id)
				jb, eb := sq.GetJob(ctx, sc, id)
				same("get job", ja, jb, ea, eb)
			}
		case 18:
			clk.Add(time.Duration(rng.Intn(90)) * time.Second)
		case 19:
			if err := sq.Close(); err != nil {
				t.Fatal(err)
			}
			sq = open()
			if a, b := mem.Dump(), mirrorDump(t, sq); a != b {
				t.Fatalf("step %d: the reopened file differs from memorystore:\n%s\n---\n%s", step, a, b)
			}
		}
	}
	if err := sq.Close(); err != nil {
		t.Fatal(err)
	}
	sq = openBudget(t, path, clk, sqlitestore.SyncNormal, budget)
	if a, b := mem.Dump(), mirrorDump(t, sq); a != b {
		t.Fatalf("at the end the reopened file differs from memorystore:\n%s\n---\n%s", a, b)
	}
}
