package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// RunIsolationConformance checks Scope isolation between two tenants and
// two projects: every operation from one Scope on another Scope's IDs is
// ErrNotFound and changes nothing, recall never crosses Scopes, and
// Scope-limited maintenance touches only its Scope.
func RunIsolationConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"OtherScopeIsNotFound", testIsoNotFound},
		{"RecallNeverCrossesScopes", testIsoRecall},
		{"SameKeyInTwoScopes", testIsoSameKey},
		{"IDTakenInAnotherScope", testIsoIDs},
		{"DeleteEmbeddingsTouchesOneScope", testIsoDelete},
		{"WorkQueuesCarryScope", testIsoQueues},
	})
}

const isoProfile = "test/iso-v1"

// isoScopes returns three Scopes: A (tenant-a/project-1, the env default),
// B (tenant-a/project-2: same tenant, other project) and C
// (tenant-b/project-1: other tenant, same project ID).
func (e *env) isoScopes() (a, b, c memorykit.Scope) {
	return e.scope, Scope(e.t, "tenant-a", "project-2"), Scope(e.t, "tenant-b", "project-1")
}

// isoData is one Scope's population for the isolation cases.
type isoData struct {
	scope                       memorykit.Scope
	active, cand, inactive, rej memorykit.Record
	job                         storekit.Job
	task                        storekit.EmbeddingTask
	worker                      string
}

func (e *env) populate(scope memorykit.Scope, worker string) isoData {
	e.t.Helper()
	d := isoData{scope: scope, worker: worker}
	d.active = e.create(newRec(scope, memorykit.KindFact, "shared key", "zebra crossing on "+scope.SubjectID, memorykit.StatusActive))
	d.cand = e.create(newRec(scope, memorykit.KindFact, "shared key", "zebra candidate", memorykit.StatusCandidate))
	in := e.create(newRec(scope, memorykit.KindNote, "old note", "zebra history", memorykit.StatusActive))
	d.inactive = e.must(actForget, tr(scope, in.ID, reviewer))
	rj := e.create(newRec(scope, memorykit.KindNote, "rejected note", "zebra rejected", memorykit.StatusCandidate))
	d.rej = e.must(actReject, tr(scope, rj.ID, reviewer))
	e.embed(d.active, isoProfile, []float32{1, 0})
	j, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: storekit.ExtractionJobID(scope, "turn-1"), Scope: scope, Payload: "zebra talk", MaxAttempts: 3, MaxReaps: 3})
	if err != nil {
		e.t.Fatal(err)
	}
	d.job = j
	tasks, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: "test/iso-v2", WorkerID: worker, TTL: time.Hour, Max: 10})
	if err != nil || len(tasks) != 1 || tasks[0].RecordID != d.active.ID {
		e.t.Fatalf("setup lease in %s: %+v, %v", scope, tasks, err)
	}
	d.task = tasks[0]
	return d
}

func testIsoNotFound(t *testing.T, e *env) {
	a, b, c := e.isoScopes()
	data := []isoData{e.populate(b, "embedder-b"), e.populate(c, "embedder-c")}
	before := e.dump()
	for _, d := range data {
		for _, from := range []memorykit.Scope{a, b, c} {
			if from == d.scope {
				continue
			}
			e.probeForeign(t, from, d)
		}
	}
	e.unchanged(t, before, "foreign-Scope probes")
	// The owners still see everything.
	for _, d := range data {
		diffRecord(t, "owner Get", e.get(d.scope, d.active.ID), d.active)
	}
}

// probeForeign tries every Scope-taking operation from scope `from` on
// d's IDs.
func (e *env) probeForeign(t *testing.T, from memorykit.Scope, d isoData) {
	t.Helper()
	where := " from " + from.String() + " on " + d.scope.String()
	for _, r := range []memorykit.Record{d.active, d.cand, d.inactive, d.rej} {
		if _, err := e.s.Get(e.ctx, from, r.ID); err == nil {
			t.Fatalf("Get%s returned a record", where)
		} else {
			wantErr(t, err, memorykit.ErrNotFound)
		}
		_, err := e.s.Revisions(e.ctx, from, r.ID)
		wantErr(t, err, memorykit.ErrNotFound)
	}
	// from may hold its own record for the key; it must never see d's.
	fa, err := e.s.FindActive(e.ctx, from, memorykit.KindFact, "shared key")
	if err == nil && (fa.ID == d.active.ID || fa.Scope != from) {
		t.Fatalf("FindActive%s returned a foreign record", where)
	} else if err != nil {
		wantErr(t, err, memorykit.ErrNotFound)
	}
	list, err := e.s.List(e.ctx, storekit.ListFilter{Scope: from, Limit: 20})
	if err != nil {
		t.Fatalf("List%s: %v", where, err)
	}
	for _, r := range list {
		if r.Scope != from {
			t.Fatalf("List%s returned a record of %s", where, r.Scope)
		}
	}
	ops := []struct {
		a  action
		id string
	}{
		{actActivate, d.cand.ID}, {actReject, d.cand.ID}, {actCorrect, d.active.ID}, {actCorrect, d.cand.ID},
		{actForget, d.active.ID}, {actErase, d.inactive.ID}, {actErase, d.rej.ID},
	}
	for _, op := range ops {
		e.refused(t, op.a.name+where, memorykit.ErrNotFound, func() error {
			_, err := op.a.do(e.ctx, e.s, tr(from, op.id, operator))
			return err
		})
	}
	e.refused(t, "PutEmbedding"+where, memorykit.ErrNotFound, func() error {
		return e.s.PutEmbedding(e.ctx, storekit.EmbeddingPut{Scope: from, RecordID: d.active.ID, Profile: isoProfile,
			ContentHash: d.active.ContentHash, Vector: []float32{0, 1}, WorkerID: "embedder-x"})
	})
	e.refused(t, "ReleaseEmbedding"+where, memorykit.ErrNotFound, func() error {
		return e.s.ReleaseEmbedding(e.ctx, storekit.EmbeddingRelease{Scope: from, RecordID: d.task.RecordID, Profile: d.task.Profile,
			ContentHash: d.task.ContentHash, WorkerID: d.worker, LeaseToken: d.task.LeaseToken, Reason: "probe", Park: true})
	})
	_, err = e.s.GetJob(e.ctx, from, d.job.ID)
	wantErr(t, err, memorykit.ErrNotFound)
	q := query(from)
	q.ExactKeys = []string{"shared key", "old note"}
	q.Terms = []string{"zebra", "crossing"}
	q.Vector, q.Profile = []float32{1, 0}, isoProfile
	res := e.recall(q)
	for _, hits := range [][]storekit.Hit{res.Exact, res.FullText, res.FullTextBelow, res.Vector} {
		for _, h := range hits {
			if h.ID == d.active.ID {
				t.Fatalf("Recall%s returned a foreign record", where)
			}
		}
	}
}

func testIsoRecall(t *testing.T, e *env) {
	a, b, c := e.isoScopes()
	mine := e.create(newRec(a, memorykit.KindFact, "shared key", "zebra crossing", memorykit.StatusActive))
	e.create(newRec(a, memorykit.KindNote, "other", "unrelated words", memorykit.StatusActive))
	e.embed(mine, isoProfile, []float32{1, 0})
	for _, s := range []memorykit.Scope{b, c} {
		for _, k := range memorykit.Kinds() {
			r := e.create(newRec(s, k, "shared key", "zebra crossing", memorykit.StatusActive))
			e.embed(r, isoProfile, []float32{1, 0})
		}
	}
	q := query(a)
	q.ExactKeys = []string{"shared key"}
	q.Terms = []string{"zebra", "crossing"}
	q.Vector, q.Profile = []float32{1, 0}, isoProfile
	res := e.recall(q)
	for name, hits := range map[string][]storekit.Hit{"exact": res.Exact, "full-text": res.FullText, "vector": res.Vector} {
		wantIDs(t, name, ids(hits), []string{mine.ID})
	}
	if len(res.FullTextBelow) != 0 || len(res.Records) != 1 || res.Records[mine.ID].Scope != a {
		t.Fatalf("recall in %s: %+v", a, res)
	}
	// IDF counts only this Scope's records: n=2, df=1 per term.
	wantWeight(t, res.FullText[0], storekit.RoundWeight(2*storekit.IDF(2, 1)))
}

func testIsoSameKey(t *testing.T, e *env) {
	a, b, _ := e.isoScopes()
	ra := e.create(newRec(a, memorykit.KindFact, "shared key", "value in a", memorykit.StatusActive))
	rb := e.create(newRec(b, memorykit.KindFact, "shared key", "value in b", memorykit.StatusActive))
	cb := e.create(newRec(b, memorykit.KindFact, "shared key", "new value in b", memorykit.StatusCandidate))
	e.must(actActivate, tr(b, cb.ID, reviewer))
	if got := e.get(a, ra.ID); got.Status != memorykit.StatusActive || got.Version != 1 {
		t.Fatalf("activity in another Scope touched %s: %+v", a, got)
	}
	if got := e.get(b, rb.ID); got.Status != memorykit.StatusSuperseded {
		t.Fatalf("b's old record is %s", got.Status)
	}
	fa, err := e.s.FindActive(e.ctx, a, memorykit.KindFact, "shared key")
	if err != nil || fa.ID != ra.ID {
		t.Fatalf("FindActive in a = %s, %v", fa.ID, err)
	}
	in := newRec(a, memorykit.KindFact, "shared key", "guarded", memorykit.StatusActive)
	in.Expect = &memorykit.ActiveExpectation{ID: cb.ID, Version: 2}
	e.refused(t, "Expect naming another Scope's record", memorykit.ErrVersionConflict, func() error {
		_, err := e.s.Create(e.ctx, in)
		return err
	})
}

func testIsoIDs(t *testing.T, e *env) {
	a, b, _ := e.isoScopes()
	in := newRec(b, memorykit.KindFact, "k", "b's private content", memorykit.StatusActive)
	in.ID = "mem-shared-1"
	e.create(in)
	if _, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: "job-shared-1", Scope: b, Payload: "b's private turn", MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	before := e.dump()
	in.Scope = a
	got, err := e.s.Create(e.ctx, in)
	wantErr(t, err, memorykit.ErrAlreadyExists)
	if d := cmp.Diff(memorykit.Record{}, got); d != "" {
		t.Fatalf("Create leaked another Scope's record (-want +got):\n%s", d)
	}
	job, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: "job-shared-1", Scope: a, Payload: "mine", MaxAttempts: 2, MaxReaps: 2})
	wantErr(t, err, memorykit.ErrAlreadyExists)
	if d := cmp.Diff(storekit.Job{}, job); d != "" {
		t.Fatalf("EnqueueJob leaked another Scope's job (-want +got):\n%s", d)
	}
	e.unchanged(t, before, "creates with IDs taken in another Scope")
}

func testIsoDelete(t *testing.T, e *env) {
	a, b, c := e.isoScopes()
	var recs []memorykit.Record
	for _, s := range []memorykit.Scope{a, b, c} {
		r := e.create(newRec(s, memorykit.KindFact, "k", "text", memorykit.StatusActive))
		e.embed(r, isoProfile, []float32{1, 0})
		recs = append(recs, r)
	}
	if n, err := e.s.DeleteEmbeddings(e.ctx, isoProfile, a); err != nil || n != 1 {
		t.Fatalf("DeleteEmbeddings(a) = %d, %v; want 1", n, err)
	}
	for i, s := range []memorykit.Scope{a, b, c} {
		q := query(s)
		q.Vector, q.Profile = []float32{1, 0}, isoProfile
		got := ids(e.recall(q).Vector)
		want := []string{recs[i].ID}
		if i == 0 {
			want = nil
		}
		wantIDs(t, "vector hits in "+s.String(), got, want)
	}
	if n := e.pending(isoProfile); n != 1 {
		t.Fatalf("pending = %d, want 1", n)
	}
}

func testIsoQueues(t *testing.T, e *env) {
	a, b, c := e.isoScopes()
	want := map[string]memorykit.Scope{}
	for _, s := range []memorykit.Scope{a, b, c} {
		r := e.create(newRec(s, memorykit.KindFact, "k", "text", memorykit.StatusActive))
		want[r.ID] = s
		j, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: storekit.ExtractionJobID(s, "turn"), Scope: s, Payload: "p", MaxAttempts: 1, MaxReaps: 1})
		if err != nil {
			t.Fatal(err)
		}
		want[j.ID] = s
	}
	tasks, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: isoProfile, WorkerID: "embedder-1", TTL: time.Minute, Max: 10})
	if err != nil || len(tasks) != 3 {
		t.Fatalf("LeaseEmbeddings = %d tasks, %v; want 3", len(tasks), err)
	}
	for _, task := range tasks {
		if task.Scope != want[task.RecordID] {
			t.Fatalf("task %s carries Scope %s, want %s", task.RecordID, task.Scope, want[task.RecordID])
		}
	}
	jobs, err := e.s.LeaseJobs(e.ctx, storekit.JobLease{WorkerID: "worker-1", TTL: time.Minute, Max: 10})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("LeaseJobs = %d jobs, %v; want 3", len(jobs), err)
	}
	for _, j := range jobs {
		if j.Scope != want[j.ID] {
			t.Fatalf("job %s carries Scope %s, want %s", j.ID, j.Scope, want[j.ID])
		}
	}
}
