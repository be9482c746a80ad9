package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// RunErasureConformance checks that erase and purge leave nothing of a
// record behind: its content, key, metadata, sources and free-text
// reasons, and the extraction jobs it came from, are gone from everything
// Harness.Dump renders. The store must implement storekit.Purger and be
// built with NewTombstones.
func RunErasureConformance(t *testing.T, h Harness) {
	t.Helper()
	runCases(t, h, []tcase{
		{"EraseEverywhere", testEraseEverywhere},
		{"EraseLeasedJobHandback", testEraseLeasedHandback},
		{"TombstoneKeyDigest", testTombstoneKeyDigest},
		{"EraseScrubsQuotingJobs", testEraseScrubsQuotingJobs},
	})
	runSessionCases(t, h, []tcase{
		{"Purge", testPurge},
		{"PurgeCountsJobs", testPurgeCountsJobs},
		{"PurgeHoldsWrites", testPurgeHoldsWrites},
		{"PurgeResumesAfterKill", testPurgeResume},
	})
}

// eraseCanary is planted in every field erase must clear. Its mixed case
// checks that the scans ignore case (keys are stored lower-cased).
const eraseCanary = "QxKanary7319"

// noCanaryIn fails when the store's dump still holds canary, ignoring case.
func (e *env) noCanaryIn(t testing.TB, what, canary string) {
	t.Helper()
	if d := e.dump(); strings.Contains(strings.ToLower(d), strings.ToLower(canary)) {
		t.Fatalf("%s: the canary survives in the store's dump:\n%s", what, d)
	}
}

func (e *env) hasCanary(t testing.TB, what, canary string) {
	t.Helper()
	if !strings.Contains(strings.ToLower(e.dump()), strings.ToLower(canary)) {
		t.Fatalf("%s: the canary is not in the dump; the check would prove nothing", what)
	}
}

// enqueue stores a queued job for ref whose payload holds text.
func (e *env) enqueueRef(scope memorykit.Scope, ref, text string) string {
	e.t.Helper()
	id := storekit.ExtractionJobID(scope, ref)
	if _, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: id, Scope: scope, Payload: text, MaxAttempts: 3, MaxReaps: 3}); err != nil {
		e.t.Fatalf("EnqueueJob(%s): %v", ref, err)
	}
	return id
}

// leaseJob leases the one available job, which must be id.
func (e *env) leaseJob(id, worker string) {
	e.t.Helper()
	got, err := e.s.LeaseJobs(e.ctx, storekit.JobLease{WorkerID: worker, TTL: time.Hour, Max: 1})
	if err != nil || len(got) != 1 || got[0].ID != id {
		e.t.Fatalf("LeaseJobs = %+v, %v; want job %s", got, err, id)
	}
}

func (e *env) job(scope memorykit.Scope, id string) storekit.Job {
	e.t.Helper()
	j, err := e.s.GetJob(e.ctx, scope, id)
	if err != nil {
		e.t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j
}

// proposal builds the candidate a job would store for key.
func proposal(scope memorykit.Scope, jobID, key, content string) memorykit.NewRecord {
	return memorykit.NewRecord{
		ID:    storekit.CandidateID(scope, jobID, memorykit.KindFact, storekit.NormalizeKey(key)),
		Scope: scope, Kind: memorykit.KindFact, Key: key, Content: content,
		Status: memorykit.StatusCandidate, Actor: workerAc, Reason: storekit.ExtractionCandidateReason(jobID),
	}
}

func testEraseEverywhere(t *testing.T, e *env) {
	leasedRef, queuedRef := "run-"+eraseCanary+"/turn-2", "run-"+eraseCanary+"/turn-1"
	// The leased job is enqueued and leased first, so the lease takes it.
	leased := e.enqueueRef(e.scope, leasedRef, "user: my name is "+eraseCanary)
	e.leaseJob(leased, "extractor-1")
	queued := e.enqueueRef(e.scope, queuedRef, "user: call me "+eraseCanary)
	unrelated := e.enqueueRef(e.scope, "run-7/turn-1", "user: the deploy window is friday")

	key := "patient " + eraseCanary + " doe"
	in := e.active(memorykit.KindFact, key, "the record of "+eraseCanary)
	in.Metadata = map[string]string{"note": "about " + eraseCanary, strings.ToLower(eraseCanary): "as a metadata key"}
	in.Sources = []memorykit.Source{{Kind: "conversation", Ref: queuedRef}, {Kind: "conversation", Ref: leasedRef}}
	in.Reason = "asked by " + eraseCanary
	r := e.create(in)
	e.embed(r, "test/erase-v1", []float32{1, 0, 0})
	c, err := e.s.Correct(e.ctx, storekit.Correction{
		Transition: storekit.Transition{Scope: e.scope, ID: r.ID, Actor: reviewer, Reason: "fixing " + eraseCanary},
		Content:    "corrected " + eraseCanary, Sources: in.Sources,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.embed(c, "test/erase-v1", []float32{0, 1, 0})
	e.hasCanary(t, "before erase", eraseCanary)

	e.advance(time.Minute)
	e.must(actForget, storekit.Transition{Scope: e.scope, ID: r.ID, Actor: reviewer, Reason: "forget " + eraseCanary})
	e.advance(time.Minute)
	got := e.must(actErase, storekit.Transition{Scope: e.scope, ID: r.ID, Actor: operator, Reason: "subject_request"})

	e.noCanaryIn(t, "after erase", eraseCanary)
	digest := NewTombstones(t).Digest(e.scope, storekit.NormalizeKey(key))
	if got.Key != digest || got.Status != memorykit.StatusErased || got.Kind != memorykit.KindFact || got.Scope != e.scope {
		t.Fatalf("tombstone: %+v; want key %s", got, digest)
	}
	revs := e.revisions(e.scope, r.ID)
	wantReasons := []string{"", "", "", "subject_request"}
	for i, v := range revs {
		if v.Reason != wantReasons[i] {
			t.Fatalf("revision %d reason %q; want %q (codes stay, free text goes)", i, v.Reason, wantReasons[i])
		}
	}
	if j := e.job(e.scope, queued); j.State != storekit.JobFailed || j.LastError != storekit.ReasonErased || j.Payload != "" {
		t.Fatalf("queued job after erase: %+v", j)
	}
	if j := e.job(e.scope, leased); j.State != storekit.JobLeased || j.Payload != "" || j.LeasedBy != "extractor-1" {
		t.Fatalf("leased job after erase: %+v", j)
	}
	if j := e.job(e.scope, unrelated); j.State != storekit.JobQueued || j.Payload == "" {
		t.Fatalf("an unrelated job was touched: %+v", j)
	}

	// The worker hands the leased job back with a proposal for the erased
	// key (dropped) and one for another key (stored).
	n, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: leased, WorkerID: "extractor-1", LeaseToken: e.job(e.scope, leased).LeaseToken, Candidates: []memorykit.NewRecord{
		proposal(e.scope, leased, strings.ToUpper(key), "name: "+eraseCanary),
		proposal(e.scope, leased, "deploy window", "friday"),
	}})
	if err != nil || n != 1 {
		t.Fatalf("CompleteJob of the scrubbed job = %d, %v; want 1 (the erased key's proposal dropped)", n, err)
	}
	if j := e.job(e.scope, leased); j.State != storekit.JobDone || j.Candidates != 1 || j.Payload != "" {
		t.Fatalf("leased job after hand-back: %+v", j)
	}
	e.noCanaryIn(t, "after the leased job's hand-back", eraseCanary)
	kept, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Key: "deploy window", Limit: 5})
	if err != nil || len(kept) != 1 {
		t.Fatalf("the other proposal: %+v, %v", kept, err)
	}
}

func testEraseLeasedHandback(t *testing.T, e *env) {
	refs := []string{"run-1/turn-1", "run-1/turn-2", "run-1/turn-3"}
	ids := make([]string, len(refs))
	for i, ref := range refs {
		ids[i] = e.enqueueRef(e.scope, ref, "transcript "+eraseCanary)
		e.leaseJob(ids[i], "extractor-1")
	}
	in := e.active(memorykit.KindFact, "k "+eraseCanary, "c")
	for _, ref := range refs {
		in.Sources = append(in.Sources, memorykit.Source{Kind: "conversation", Ref: ref})
	}
	r := e.create(in)
	e.must(actForget, tr(e.scope, r.ID, reviewer))
	e.must(actErase, tr(e.scope, r.ID, operator))
	e.noCanaryIn(t, "after erase", eraseCanary)

	// A failure with attempts left does not queue the scrubbed job again.
	j, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: ids[0], WorkerID: "extractor-1", LeaseToken: e.job(e.scope, ids[0]).LeaseToken, Reason: "boom"})
	if err != nil || j.State != storekit.JobFailed || j.LastError != storekit.ReasonErased {
		t.Fatalf("FailJob of a scrubbed job = %+v, %v", j, err)
	}
	if err := e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: ids[1], WorkerID: "extractor-1", LeaseToken: e.job(e.scope, ids[1]).LeaseToken}); err != nil {
		t.Fatal(err)
	}
	if j := e.job(e.scope, ids[1]); j.State != storekit.JobFailed || j.LastError != storekit.ReasonErased || j.LeasedBy != "" {
		t.Fatalf("released scrubbed job: %+v", j)
	}
	e.advance(2 * time.Hour)
	if n, err := e.s.ReapJobLeases(e.ctx); err != nil || n != 1 {
		t.Fatalf("ReapJobLeases = %d, %v; want 1", n, err)
	}
	if j := e.job(e.scope, ids[2]); j.State != storekit.JobFailed || j.LastError != storekit.ReasonErased {
		t.Fatalf("reaped scrubbed job: %+v", j)
	}
	if got, err := e.s.LeaseJobs(e.ctx, storekit.JobLease{WorkerID: "extractor-2", TTL: time.Hour, Max: 5}); err != nil || len(got) != 0 {
		t.Fatalf("a scrubbed job was leased again: %+v, %v", got, err)
	}
}

func testTombstoneKeyDigest(t *testing.T, e *env) {
	other := Scope(t, "tenant-b", "project-9")
	erase := func(scope memorykit.Scope, key string) memorykit.Record {
		r := e.create(newRec(scope, memorykit.KindFact, key, "v", memorykit.StatusActive))
		e.must(actForget, tr(scope, r.ID, reviewer))
		return e.must(actErase, tr(scope, r.ID, operator))
	}
	a := erase(e.scope, "Jane Doe")
	b := erase(e.scope, "jane doe")
	c := erase(other, "jane doe")
	d := erase(e.scope, "john roe")
	if a.Key != b.Key || !storekit.IsKeyDigest(a.Key) {
		t.Fatalf("two tombstones of one key: %q and %q; want one keyed digest", a.Key, b.Key)
	}
	if c.Key == a.Key || d.Key == a.Key {
		t.Fatal("tombstones of another Scope or key share the digest")
	}
	e.noCanaryIn(t, "after erase", "jane doe")
	// A lookup by key still finds the tombstones (and only them).
	got, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Key: "JANE DOE", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a.ID, b.ID}
	sort.Strings(want)
	if d := cmp.Diff(want, sortedIDs(got)); d != "" {
		t.Fatalf("List by an erased key (-want +got):\n%s", d)
	}
	live := e.create(e.active(memorykit.KindNote, "jane doe", "a new record of the key"))
	got, err = e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Key: "jane doe", Statuses: []memorykit.Status{memorykit.StatusActive}, Limit: 10})
	if err != nil || len(got) != 1 || got[0].ID != live.ID {
		t.Fatalf("List active by key: %+v, %v", got, err)
	}
}

func sortedIDs(recs []memorykit.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	sort.Strings(out)
	return out
}

func (e *env) purger(t testing.TB) storekit.Purger {
	t.Helper()
	p, ok := e.s.(storekit.Purger)
	if !ok {
		t.Fatalf("storetest: %T does not implement storekit.Purger", e.s)
	}
	return p
}

// purgeFixture fills scope with n records, cycling through every
// lifecycle state (candidate, active, rejected, superseded, inactive,
// erased), each carrying canary in its key, content, metadata, sources and
// reasons; active records get an embedding, and the Scope gets a queued
// and a leased extraction job whose transcripts hold canary. It returns
// the ids of the records not yet erased, sorted, and how many revision
// rows they have.
func (e *env) purgeFixture(scope memorykit.Scope, n int, canary, prefix string) (ids []string, revisions int) {
	e.t.Helper()
	leased := e.enqueueRef(scope, prefix+"/leased", "transcript of "+canary)
	e.leaseJob(leased, "extractor-"+prefix)
	e.enqueueRef(scope, prefix+"/queued", "another transcript of "+canary)
	mk := func(i int, status memorykit.Status, key string) memorykit.Record {
		in := newRec(scope, memorykit.KindFact, key, fmt.Sprintf("fact %d about %s", i, canary), status)
		in.ID = fmt.Sprintf("%s-%03d", prefix, i)
		in.Metadata = map[string]string{"who": canary}
		in.Sources = []memorykit.Source{{Kind: "conversation", Ref: prefix + "/turn-" + canary}}
		in.Reason = "told by " + canary
		return e.create(in)
	}
	why := func(id string, a memorykit.Actor) storekit.Transition {
		return storekit.Transition{Scope: scope, ID: id, Actor: a, Reason: "because " + canary}
	}
	var all []memorykit.Record
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("key %d %s", i, canary)
		switch i % 6 {
		case 0:
			all = append(all, mk(i, memorykit.StatusCandidate, key))
		case 1:
			r := mk(i, memorykit.StatusActive, key)
			e.embed(r, "test/purge-v1", []float32{1, float32(i), 0})
			all = append(all, r)
		case 2:
			r := mk(i, memorykit.StatusCandidate, key)
			e.must(actReject, why(r.ID, reviewer))
			all = append(all, r)
		case 3:
			// Superseded by the next record, which takes the same key.
			all = append(all, mk(i, memorykit.StatusActive, fmt.Sprintf("key %d %s", i+1, canary)))
		case 4:
			r := mk(i, memorykit.StatusActive, key)
			e.must(actForget, why(r.ID, reviewer))
			all = append(all, r)
		case 5:
			r := mk(i, memorykit.StatusActive, key)
			e.must(actForget, why(r.ID, reviewer))
			e.must(actErase, why(r.ID, operator))
			all = append(all, r)
		}
	}
	for _, r := range all {
		if got := e.get(scope, r.ID); got.Status != memorykit.StatusErased {
			ids = append(ids, r.ID)
			revisions += len(e.revisions(scope, r.ID)) + 1 // and the purge revision
		}
	}
	sort.Strings(ids)
	return ids, revisions
}

func testPurge(t *testing.T, e *env) {
	const otherCanary = "ZzOtherKanary"
	other := Scope(t, "tenant-b", "project-2")
	ids, revisions := e.purgeFixture(e.scope, 50, eraseCanary, "p")
	e.purgeFixture(other, 12, otherCanary, "o")
	// An embedding lease of another profile leaves queue state behind.
	if _, err := e.s.LeaseEmbeddings(e.ctx, storekit.EmbeddingLease{Profile: "test/purge-v2", WorkerID: "embedder-2", TTL: time.Hour, Max: 20}); err != nil {
		t.Fatal(err)
	}
	statuses := map[memorykit.Status]int{}
	for _, id := range ids {
		statuses[e.get(e.scope, id).Status]++
	}
	if len(statuses) != 5 {
		t.Fatalf("fixture statuses %v; want every status but erased", statuses)
	}
	otherBefore, err := e.s.List(e.ctx, storekit.ListFilter{Scope: other, Limit: Limits().MaxListSize})
	if err != nil {
		t.Fatal(err)
	}
	e.hasCanary(t, "before purge", eraseCanary)
	e.advance(time.Minute)
	start := e.now()

	rep, err := e.purger(t).Purge(e.ctx, e.scope, operator, "project_closed")
	if err != nil {
		t.Fatal(err)
	}
	e.noCanaryIn(t, "after purge", eraseCanary)
	e.hasCanary(t, "the other Scope after purge", otherCanary)
	if d := cmp.Diff(ids, rep.RecordIDs); d != "" {
		t.Fatalf("purged ids (-want +got):\n%s", d)
	}
	if rep.Scope != e.scope || rep.Actor != operator || rep.Reason != "project_closed" || rep.Records != len(ids) ||
		rep.Revisions != revisions || rep.Embeddings != 9 || rep.Jobs != 2 || rep.QueueEntries == 0 ||
		!rep.StartedAt.Equal(start) || !rep.FinishedAt.Equal(start) || rep.Digest != storekit.PurgeReportDigest(rep) {
		t.Fatalf("report %+v; want %d records, %d revisions, 9 embeddings, 2 jobs, queue entries, times %s", rep, len(ids), revisions, start)
	}
	for _, id := range ids {
		r := e.get(e.scope, id)
		if r.Status != memorykit.StatusErased || !storekit.IsKeyDigest(r.Key) || r.TouchedBy != operator {
			t.Fatalf("purged record %s: %+v", id, r)
		}
		revs := e.revisions(e.scope, id)
		purges := 0
		for _, v := range revs {
			if v.Action == memorykit.ActionPurge {
				purges++
			}
		}
		if purges != 1 || revs[len(revs)-1].Action != memorykit.ActionPurge || revs[len(revs)-1].Reason != "project_closed" {
			t.Fatalf("record %s: %d purge revisions, last %+v", id, purges, revs[len(revs)-1])
		}
	}
	if res := e.recall(storekit.RecallQuery{Scope: e.scope, ExactKeys: []string{"key 1 " + strings.ToLower(eraseCanary)},
		Terms: []string{"fact"}, ExactLimit: 10, FullTextLimit: 10, VectorLimit: 10}); len(res.Records) != 0 {
		t.Fatalf("recall after purge: %+v", res)
	}
	// The leased job's worker hands it back: every proposal is dropped.
	leased := storekit.ExtractionJobID(e.scope, "p/leased")
	n, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: leased, WorkerID: "extractor-p", LeaseToken: e.job(e.scope, leased).LeaseToken,
		Candidates: []memorykit.NewRecord{proposal(e.scope, leased, "fresh", "from "+eraseCanary)}})
	if err != nil || n != 0 {
		t.Fatalf("CompleteJob after purge = %d, %v; want 0", n, err)
	}
	e.noCanaryIn(t, "after the hand-back", eraseCanary)
	otherAfter, err := e.s.List(e.ctx, storekit.ListFilter{Scope: other, Limit: Limits().MaxListSize})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(otherBefore, otherAfter); d != "" {
		t.Fatalf("the other Scope changed (-before +after):\n%s", d)
	}
	// Purging again finds nothing left to erase.
	again, err := e.purger(t).Purge(e.ctx, e.scope, operator, "project_closed")
	if err != nil || again.Records != 0 || len(again.RecordIDs) != 0 || again.Jobs != 0 {
		t.Fatalf("second purge = %+v, %v", again, err)
	}
	// Writes to the Scope work again.
	e.create(e.active(memorykit.KindNote, "after", "a new start"))
}

// killCtx is a context that cancels itself at its limit-th use (a call of
// Done or Err): a cut at an arbitrary point of a store call, wherever the
// store or its driver looks at the context. With limit 0 it only counts.
type killCtx struct {
	context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	n      int
	limit  int
}

func newKillCtx(limit int) *killCtx {
	ctx, cancel := context.WithCancel(context.Background())
	return &killCtx{Context: ctx, cancel: cancel, limit: limit}
}

func (k *killCtx) tick() {
	k.mu.Lock()
	k.n++
	if k.limit > 0 && k.n >= k.limit {
		k.cancel()
	}
	k.mu.Unlock()
}

func (k *killCtx) Done() <-chan struct{} { k.tick(); return k.Context.Done() }
func (k *killCtx) Err() error            { k.tick(); return k.Context.Err() }

func (k *killCtx) uses() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

// calibratePurge purges a fresh copy of the fixture with a counting
// context and returns the report and how many context uses it took.
func calibratePurge(t *testing.T, e *env, records int) (memorykit.PurgeReport, int) {
	t.Helper()
	ref := e.sibling(t)
	ref.purgeFixture(ref.scope, records, eraseCanary, "r")
	ctx := newKillCtx(0)
	defer ctx.cancel()
	rep, err := ref.purger(t).Purge(ctx, ref.scope, operator, "project_closed")
	if err != nil {
		t.Fatalf("uncut purge: %v", err)
	}
	return rep, ctx.uses()
}

func testPurgeHoldsWrites(t *testing.T, e *env) {
	_, uses := calibratePurge(t, e, 24)
	e.purgeFixture(e.scope, 24, eraseCanary, "r")
	other := Scope(t, "tenant-b", "project-2")
	ctx := newKillCtx(uses / 2)
	defer ctx.cancel()
	if _, err := e.purger(t).Purge(ctx, e.scope, operator, "project_closed"); err == nil {
		t.Fatal("a purge cut half way succeeded")
	}
	holds := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, memorykit.ErrPurging) || !memorykit.IsRecoverable(err) {
			t.Fatalf("%s during an unfinished purge: %v; want a recoverable ErrPurging", what, err)
		}
		contentFree(t, what, err)
	}
	_, err := e.s.Create(e.ctx, e.active(memorykit.KindNote, "new key", "new content"))
	holds("Create", err)
	_, err = e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: "job-new", Scope: e.scope, Payload: "p", MaxAttempts: 1, MaxReaps: 1})
	holds("EnqueueJob", err)
	// Other Scopes are not held.
	e.create(newRec(other, memorykit.KindNote, "new key", "new content", memorykit.StatusActive))
	if _, err := e.purger(t).Purge(e.ctx, e.scope, operator, "project_closed"); err != nil {
		t.Fatal(err)
	}
	e.create(e.active(memorykit.KindNote, "new key", "new content"))
	e.noCanaryIn(t, "after the resumed purge", eraseCanary)
}

// testPurgeResume cuts a purge at 20 seeded points of its uses of the
// context (which, on a database, drops the statement's connection); a
// second purge finishes it, and its report equals the report of an uncut
// purge of the same fixture: the union of both runs, exactly.
func testPurgeResume(t *testing.T, e *env) {
	const records = 24
	want, uses := calibratePurge(t, e, records)
	if uses < 2 {
		t.Fatalf("the uncut purge used its context %d times; nothing to cut", uses)
	}
	cut := 0
	for seed := int64(1); seed <= 20; seed++ {
		// A subtest per seed, so its store is cleaned up before the next.
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			limit := 1 + rand.New(rand.NewSource(seed)).Intn(uses-1)
			v := e.sibling(t)
			v.purgeFixture(v.scope, records, eraseCanary, "r")
			ctx := newKillCtx(limit)
			_, err := v.purger(t).Purge(ctx, v.scope, operator, "project_closed")
			ctx.cancel()
			if err == nil {
				return // the cut came after the last step
			}
			cut++
			got, err := v.purger(t).Purge(v.ctx, v.scope, operator, "project_closed")
			if err != nil {
				t.Fatalf("seed %d (cut at use %d of %d): resumed purge: %v", seed, limit, uses, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("seed %d (cut at use %d of %d): report of the resumed purge (-uncut +resumed):\n%s", seed, limit, uses, d)
			}
			v.noCanaryIn(t, fmt.Sprintf("seed %d", seed), eraseCanary)
		})
	}
	t.Logf("%d of 20 purges cut short and resumed (%d context uses uncut)", cut, uses)
	if cut < 10 {
		t.Fatalf("only %d of 20 seeded cuts interrupted the purge", cut)
	}
}

// enqueueRun stores a queued job for ref with ref as its RunRef.
func (e *env) enqueueRun(scope memorykit.Scope, ref, text string) string {
	e.t.Helper()
	id := storekit.ExtractionJobID(scope, ref)
	if _, err := e.s.EnqueueJob(e.ctx, storekit.NewJob{ID: id, Scope: scope, RunRef: ref, Payload: text, MaxAttempts: 3, MaxReaps: 3}); err != nil {
		e.t.Fatalf("EnqueueJob(%s): %v", ref, err)
	}
	return id
}

// testEraseScrubsQuotingJobs: erase finishes every unfinished job of the
// Scope whose transcript quotes the erased key or any version of its
// content (ReasonErasedContent, payload and run reference gone), takes
// the lease from a worker holding one so its completion stores nothing,
// drops the run reference of the finished job the record came from, and
// leaves unrelated jobs and other Scopes' jobs alone.
func testEraseScrubsQuotingJobs(t *testing.T, e *env) {
	other := Scope(t, "tenant-b", "project-3")
	canaryRef := func(n string) string { return "run-" + eraseCanary + "/turn-" + n }
	// A finished job the record came from, its run reference the canary.
	done := e.enqueueRun(e.scope, canaryRef("0"), "user: a first turn")
	e.leaseJob(done, "extractor-1")
	if _, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: done, WorkerID: "extractor-1", LeaseToken: e.job(e.scope, done).LeaseToken}); err != nil {
		t.Fatal(err)
	}
	// A leased job quoting the key (in upper case), one queued quoting
	// the first version of the content, one queued quoting the second.
	leased := e.enqueueRun(e.scope, canaryRef("1"), "user: about "+strings.ToUpper("favourite zq"+eraseCanary)+" then")
	e.leaseJob(leased, "extractor-2")
	leaseToken := e.job(e.scope, leased).LeaseToken
	first := e.enqueueRun(e.scope, canaryRef("2"), "user: I said teal and "+eraseCanary+" then, remember")
	second := e.enqueueRun(e.scope, canaryRef("3"), "user: now it is ochre "+eraseCanary+"!")
	unrelated := e.enqueueRun(e.scope, "run-9/turn-1", "user: the deploy window is friday")
	elsewhere := e.enqueueRun(other, "run-8/turn-1", "user: I said teal and "+eraseCanary+" then")

	in := e.active(memorykit.KindFact, "favourite zq"+eraseCanary, "teal and "+eraseCanary)
	in.Sources = []memorykit.Source{{Kind: "conversation", Ref: canaryRef("0")}}
	r := e.create(in)
	if _, err := e.s.Correct(e.ctx, storekit.Correction{
		Transition: storekit.Transition{Scope: e.scope, ID: r.ID, Actor: reviewer, Reason: "fix"},
		Content:    "ochre " + eraseCanary,
	}); err != nil {
		t.Fatal(err)
	}
	e.hasCanary(t, "before erase", eraseCanary)
	e.advance(time.Minute)
	e.must(actForget, tr(e.scope, r.ID, reviewer))
	e.must(actErase, tr(e.scope, r.ID, operator))

	for _, id := range []string{leased, first, second} {
		j := e.job(e.scope, id)
		if j.State != storekit.JobFailed || j.LastError != storekit.ReasonErasedContent || j.Payload != "" ||
			j.RunRef != "" || j.LeasedBy != "" {
			t.Fatalf("a job quoting the erased record after erase: %+v", j)
		}
	}
	if j := e.job(e.scope, done); j.State != storekit.JobDone || j.RunRef != "" {
		t.Fatalf("the finished job the record came from keeps its run reference: %+v", j)
	}
	if j := e.job(e.scope, unrelated); j.State != storekit.JobQueued || j.Payload == "" || j.RunRef != "run-9/turn-1" {
		t.Fatalf("an unrelated job was touched: %+v", j)
	}
	if j := e.job(other, elsewhere); j.State != storekit.JobQueued || j.Payload == "" || j.RunRef != "run-8/turn-1" {
		t.Fatalf("another Scope's job was touched: %+v", j)
	}
	// The worker that held the leased job lost its lease: nothing it
	// proposes is stored.
	_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: leased, WorkerID: "extractor-2", LeaseToken: leaseToken,
		Candidates: []memorykit.NewRecord{proposal(e.scope, leased, "favourite colour", "teal and "+eraseCanary)}})
	if !errors.Is(err, memorykit.ErrLeaseLost) {
		t.Fatalf("completion of a job erase finished: %v; want ErrLeaseLost", err)
	}
	if _, err := e.s.FailJob(e.ctx, storekit.JobFailure{JobID: leased, WorkerID: "extractor-2", LeaseToken: leaseToken, Reason: "boom"}); !errors.Is(err, memorykit.ErrLeaseLost) {
		t.Fatalf("failure of a job erase finished: %v; want ErrLeaseLost", err)
	}
	if got, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Key: "favourite colour", Limit: 5}); err != nil || len(got) != 0 {
		t.Fatalf("a lost lease's proposal was stored: %+v, %v", got, err)
	}
	if j := e.job(e.scope, leased); j.State != storekit.JobFailed || j.LastError != storekit.ReasonErasedContent {
		t.Fatalf("the lost lease changed the job: %+v", j)
	}
	e.advance(2 * time.Hour)
	if n, err := e.s.ReapJobLeases(e.ctx); err != nil || n != 0 {
		t.Fatalf("ReapJobLeases = %d, %v; want 0 (no lease left)", n, err)
	}
	// The other Scope's job still holds its transcript; finish it (and
	// the unrelated one) so the dump can be checked for the canary.
	got, err := e.s.LeaseJobs(e.ctx, storekit.JobLease{WorkerID: "extractor-3", TTL: time.Hour, Max: 5})
	if err != nil || len(got) != 2 {
		t.Fatalf("LeaseJobs = %+v, %v; want the unrelated and the other Scope's job", got, err)
	}
	for _, j := range got {
		if _, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "extractor-3", LeaseToken: j.LeaseToken}); err != nil {
			t.Fatal(err)
		}
	}
	e.noCanaryIn(t, "after erase", eraseCanary)
}

// testPurgeCountsJobs: a purge's report counts each job of the Scope it
// changed once: the unfinished job it scrubbed and the finished job whose
// run reference it dropped, not a finished job it left as it was; no run
// reference of the Scope survives.
func testPurgeCountsJobs(t *testing.T, e *env) {
	done := e.enqueueRun(e.scope, "run-"+eraseCanary+"/turn-1", "user: hello")
	e.leaseJob(done, "extractor-1")
	if _, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: done, WorkerID: "extractor-1", LeaseToken: e.job(e.scope, done).LeaseToken}); err != nil {
		t.Fatal(err)
	}
	bare := e.enqueueRef(e.scope, "run-2/turn-1", "user: no run reference")
	e.leaseJob(bare, "extractor-1")
	if _, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: bare, WorkerID: "extractor-1", LeaseToken: e.job(e.scope, bare).LeaseToken}); err != nil {
		t.Fatal(err)
	}
	queued := e.enqueueRun(e.scope, "run-"+eraseCanary+"/turn-3", "user: waiting")
	e.hasCanary(t, "before purge", eraseCanary)
	rep, err := e.purger(t).Purge(e.ctx, e.scope, operator, "project_closed")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Jobs != 2 || rep.Records != 0 {
		t.Fatalf("report %+v; want 2 jobs (one scrubbed, one run reference dropped), 0 records", rep)
	}
	if j := e.job(e.scope, queued); j.State != storekit.JobFailed || j.LastError != storekit.ReasonErased || j.RunRef != "" || j.Payload != "" {
		t.Fatalf("queued job after purge: %+v", j)
	}
	if j := e.job(e.scope, done); j.State != storekit.JobDone || j.RunRef != "" {
		t.Fatalf("finished job after purge: %+v", j)
	}
	e.noCanaryIn(t, "after purge", eraseCanary)
	again, err := e.purger(t).Purge(e.ctx, e.scope, operator, "project_closed")
	if err != nil || again.Jobs != 0 {
		t.Fatalf("a second purge: %+v, %v; want 0 jobs", again, err)
	}
}
