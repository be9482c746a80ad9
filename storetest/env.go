package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// env is one case's fresh store, clock and default Scope.
type env struct {
	h     Harness
	t     *testing.T
	clk   *clock.Mock
	s     storekit.Store
	ctx   context.Context
	scope memorykit.Scope

	// session: the store came from Harness.NewSession (see
	// runSessionCases).
	session bool
	// jobBase is what CountJobs reported when the case began (zero
	// unless Harness.Populated): wantCounts counts from it.
	jobBase storekit.JobCounts
}

// tcase is one named, independent conformance case.
type tcase struct {
	name string
	run  func(t *testing.T, e *env)
}

// runCases runs each case as a parallel subtest on its own store.
func runCases(t *testing.T, h Harness, cases []tcase) {
	t.Helper()
	runCasesOn(t, h, cases, false)
}

// runSessionCases is runCases for cases that need a store with database
// sessions of its own (Harness.NewSession): they call the store from
// several goroutines at once, cancel a call while its statement runs, or
// purge.
func runSessionCases(t *testing.T, h Harness, cases []tcase) {
	t.Helper()
	runCasesOn(t, h, cases, true)
}

func runCasesOn(t *testing.T, h Harness, cases []tcase, session bool) {
	t.Helper()
	checkHarness(t, h)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if why, ok := h.Leave[c.name]; ok {
				t.Skip(why)
			}
			t.Parallel()
			c.run(t, setupOn(t, h, session))
		})
	}
}

func setup(t *testing.T, h Harness) *env {
	t.Helper()
	return setupOn(t, h, false)
}

// setupOn builds a case's env on h.NewSession when session is set and
// the harness has one, and on h.New otherwise.
func setupOn(t *testing.T, h Harness, session bool) *env {
	t.Helper()
	clk := NewClock()
	newStore := h.New
	if session && h.NewSession != nil {
		newStore = h.NewSession
	}
	s := newStore(t, clk, NewGuard(t))
	if s == nil {
		t.Fatal("storetest: the Harness returned a nil store")
	}
	e := &env{h: h, session: session, t: t, clk: clk, s: s, ctx: context.Background(), scope: Scope(t, "tenant-a", "project-1")}
	if h.Populated {
		e.jobBase = e.counts()
	}
	return e
}

// sibling is a fresh env for t built the way e was (New or NewSession).
func (e *env) sibling(t *testing.T) *env {
	t.Helper()
	return setupOn(t, e.h, e.session)
}

// Actors used throughout the suites.
var (
	author   = memorykit.Actor{Kind: memorykit.ActorUser, ID: "user-1"}
	reviewer = memorykit.Actor{Kind: memorykit.ActorReviewer, ID: "reviewer-1"}
	modelAct = memorykit.Actor{Kind: memorykit.ActorModel, ID: "model-1"}
	operator = memorykit.Actor{Kind: memorykit.ActorOperator, ID: "operator-1"}
	workerAc = memorykit.Actor{Kind: memorykit.ActorWorker, ID: "extractor-1"}
)

// now is the mock clock's instant at store precision.
func (e *env) now() time.Time { return e.clk.Now().UTC().Truncate(time.Microsecond) }

// advance moves the mock clock forward.
func (e *env) advance(d time.Duration) { e.clk.Add(d) }

func (e *env) dump() string {
	e.t.Helper()
	return e.h.Dump(e.t, e.s)
}

// newRec builds a valid NewRecord.
func newRec(scope memorykit.Scope, kind memorykit.Kind, key, content string, status memorykit.Status) memorykit.NewRecord {
	return memorykit.NewRecord{
		Scope: scope, Kind: kind, Key: key, Content: content, Status: status,
		Actor: author, Reason: "test setup",
	}
}

// active and candidate build NewRecords in the env's default Scope.
func (e *env) active(kind memorykit.Kind, key, content string) memorykit.NewRecord {
	return newRec(e.scope, kind, key, content, memorykit.StatusActive)
}

func (e *env) candidate(kind memorykit.Kind, key, content string) memorykit.NewRecord {
	return newRec(e.scope, kind, key, content, memorykit.StatusCandidate)
}

// create stores in and fails the test on error.
func (e *env) create(in memorykit.NewRecord) memorykit.Record {
	e.t.Helper()
	r, err := e.s.Create(e.ctx, in)
	if err != nil {
		e.t.Fatalf("Create(kind=%s status=%s): %v", in.Kind, in.Status, err)
	}
	return r
}

func (e *env) get(scope memorykit.Scope, id string) memorykit.Record {
	e.t.Helper()
	r, err := e.s.Get(e.ctx, scope, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

func (e *env) revisions(scope memorykit.Scope, id string) []storekit.Revision {
	e.t.Helper()
	v, err := e.s.Revisions(e.ctx, scope, id)
	if err != nil {
		e.t.Fatalf("Revisions(%s): %v", id, err)
	}
	return v
}

// tr builds a Transition in scope by actor.
func tr(scope memorykit.Scope, id string, actor memorykit.Actor) storekit.Transition {
	return storekit.Transition{Scope: scope, ID: id, Actor: actor, Reason: "reviewed"}
}

// action is one lifecycle method, so tables can name it.
type action struct {
	name string
	do   func(ctx context.Context, s storekit.Store, t storekit.Transition) (memorykit.Record, error)
}

var (
	actActivate = action{"Activate", func(ctx context.Context, s storekit.Store, t storekit.Transition) (memorykit.Record, error) {
		return s.Activate(ctx, t)
	}}
	actReject = action{"Reject", func(ctx context.Context, s storekit.Store, t storekit.Transition) (memorykit.Record, error) {
		return s.Reject(ctx, t)
	}}
	actForget = action{"Forget", func(ctx context.Context, s storekit.Store, t storekit.Transition) (memorykit.Record, error) {
		return s.Forget(ctx, t)
	}}
	actErase = action{"Erase", func(ctx context.Context, s storekit.Store, t storekit.Transition) (memorykit.Record, error) {
		return s.Erase(ctx, t)
	}}
	actCorrect = action{"Correct", func(ctx context.Context, s storekit.Store, t storekit.Transition) (memorykit.Record, error) {
		return s.Correct(ctx, storekit.Correction{Transition: t, Content: "corrected text", Sources: []memorykit.Source{{Kind: "review", Ref: "fix-1"}}})
	}}
	allActions = []action{actActivate, actReject, actCorrect, actForget, actErase}
)

// must runs a lifecycle action and fails the test on error.
func (e *env) must(a action, t storekit.Transition) memorykit.Record {
	e.t.Helper()
	r, err := a.do(e.ctx, e.s, t)
	if err != nil {
		e.t.Fatalf("%s(%s): %v", a.name, t.ID, err)
	}
	return r
}

// wantErr fails unless err is a *memorykit.Error matching want.
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want one matching %v", err, want)
	}
	var me *memorykit.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *memorykit.Error", err, err)
	}
}

// unchanged fails when the store's dump differs from before.
func (e *env) unchanged(t testing.TB, before, what string) {
	t.Helper()
	after := e.dump()
	if before != after {
		t.Fatalf("%s changed the store:\n%s", what, cmp.Diff(strings.Split(before, "\n"), strings.Split(after, "\n")))
	}
}

// refused runs op, which must fail with want and change nothing.
func (e *env) refused(t testing.TB, what string, want error, op func() error) {
	t.Helper()
	before := e.dump()
	err := op()
	if err == nil {
		t.Fatalf("%s: got no error, want %v", what, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want one matching %v", what, err, want)
	}
	var me *memorykit.Error
	if !errors.As(err, &me) {
		t.Fatalf("%s: error %v (%T) is not a *memorykit.Error", what, err, err)
	}
	contentFree(t, what, err)
	e.unchanged(t, before, what)
}

// contentFree fails when an error message repeats test content or the
// ContentValidator's own message.
func contentFree(t testing.TB, what string, err error) {
	t.Helper()
	msg := err.Error()
	for _, leak := range []string{secretToken, RejectMarker, errMarker.Error(), canary} {
		if strings.Contains(msg, leak) {
			t.Fatalf("%s: error message %q carries content", what, msg)
		}
	}
}

func errorsIsCanceled(err error) bool { return errors.Is(err, context.Canceled) }

// equateEmpty treats nil and empty maps and slices alike.
var equateEmpty = cmpopts.EquateEmpty()

func diffRecord(t testing.TB, what string, got, want memorykit.Record) {
	t.Helper()
	if d := cmp.Diff(want, got, equateEmpty); d != "" {
		t.Fatalf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// ids returns the IDs of hits in order.
func ids(hits []storekit.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func recIDs(rs []memorykit.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func actions(revs []storekit.Revision) []memorykit.Action {
	out := make([]memorykit.Action, len(revs))
	for i, v := range revs {
		out[i] = v.Action
	}
	return out
}

func wantIDs(t testing.TB, what string, got, want []string) {
	t.Helper()
	if d := cmp.Diff(want, got, equateEmpty); d != "" {
		t.Fatalf("%s IDs (-want +got):\n%s", what, d)
	}
}

// query builds a RecallQuery with generous limits in scope.
func query(scope memorykit.Scope) storekit.RecallQuery {
	return storekit.RecallQuery{Scope: scope, ExactLimit: 10, FullTextLimit: 10, VectorLimit: 10}
}

func (e *env) recall(q storekit.RecallQuery) storekit.RecallResult {
	e.t.Helper()
	res, err := e.s.Recall(e.ctx, q)
	if err != nil {
		e.t.Fatalf("Recall: %v", err)
	}
	if res.VectorErr != nil {
		e.t.Fatalf("Recall: VectorErr: %v", res.VectorErr)
	}
	return res
}

// checkRecords verifies that res.Records holds exactly the records the
// hit lists name, each equal to what Get returns.
func (e *env) checkRecords(t testing.TB, scope memorykit.Scope, res storekit.RecallResult) {
	t.Helper()
	named := map[string]bool{}
	for _, hits := range [][]storekit.Hit{res.Exact, res.FullText, res.Vector} {
		for _, h := range hits {
			named[h.ID] = true
		}
	}
	for id := range named {
		r, ok := res.Records[id]
		if !ok {
			t.Fatalf("Records lacks hit %s", id)
		}
		diffRecord(t, "Records["+id+"]", r, e.get(scope, id))
	}
	for id := range res.Records {
		if !named[id] {
			t.Fatalf("Records holds %s, which no hit list names", id)
		}
	}
}

// checkRanks verifies 1-based consecutive ranks.
func checkRanks(t testing.TB, what string, hits []storekit.Hit) {
	t.Helper()
	for i, h := range hits {
		if h.Rank != i+1 {
			t.Fatalf("%s hit %d (%s) has rank %d, want %d", what, i, h.ID, h.Rank, i+1)
		}
	}
}

// noCanary fails when any Go-visible field of v mentions canary.
func noCanary(t testing.TB, what string, v any, canary string) {
	t.Helper()
	if s := fmt.Sprintf("%#v", v); strings.Contains(strings.ToLower(s), canary) {
		t.Fatalf("%s still holds the canary: %s", what, s)
	}
}

// embed stores vector as rec's current embedding for profile.
func (e *env) embed(rec memorykit.Record, profile string, vector []float32) {
	e.t.Helper()
	err := e.s.PutEmbedding(e.ctx, storekit.EmbeddingPut{
		Scope: rec.Scope, RecordID: rec.ID, Profile: profile, ContentHash: rec.ContentHash,
		Vector: vector, WorkerID: "embedder-1",
	})
	if err != nil {
		e.t.Fatalf("PutEmbedding(%s): %v", rec.ID, err)
	}
}

func (e *env) pending(profile string) int {
	e.t.Helper()
	n, err := e.s.PendingEmbeddings(e.ctx, profile)
	if err != nil {
		e.t.Fatalf("PendingEmbeddings: %v", err)
	}
	return n
}

func taskIDs(ts []storekit.EmbeddingTask) []string {
	out := make([]string, len(ts))
	for i, x := range ts {
		out[i] = x.RecordID
	}
	return out
}

func jobIDs(js []storekit.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func wantTime(t testing.TB, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s = %s, want %s", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}
