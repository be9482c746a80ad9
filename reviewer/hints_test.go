package reviewer_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/reviewer"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
)

// hintCanary is planted in candidate text and in every failure the hint
// tests inject; it may appear in no error, event or log line.
const hintCanary = "CANARY-hint-5e2b"

// eachStore runs fn on memorystore, sqlitestore and pgstore, one parallel
// subtest each, every one on a fresh mock clock at storetest.Epoch. The
// pgstore subtest fails without a database when
// MEMORYKIT_REQUIRE_POSTGRES=1.
func eachStore(t *testing.T, fn func(t *testing.T, clk *clock.Mock, s storekit.Store)) {
	t.Run("memorystore", func(t *testing.T) {
		t.Parallel()
		clk := testkit.NewClock()
		fn(t, clk, testkit.MemStore(t, clk))
	})
	t.Run("sqlitestore", func(t *testing.T) {
		t.Parallel()
		clk := testkit.NewClock()
		s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "hints.db"),
			sqlitestore.Config{Clock: clk, Guard: testkit.NewGuard(t), Tombstones: testkit.NewTombstones(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		fn(t, clk, s)
	})
	t.Run("pgstore", func(t *testing.T) {
		t.Parallel()
		clk := testkit.NewClock()
		fn(t, clk, testkit.Postgres(t).Open(t, clk))
	})
}

// hintBundle is a Reviewer with hints over one store, and what a test
// needs to look at it.
type hintBundle struct {
	clk    *clock.Mock
	store  storekit.Store
	emb    memorykit.Embedder
	az     *testkit.Authorizer
	sink   *testkit.Sink
	logs   *observer.ObservedLogs
	policy memorykit.RecallPolicy
	r      *reviewer.Reviewer
	scope  memorykit.Scope
	rita   memorykit.Principal
}

// hintOptions wrap the parts a test injects faults into.
type hintOptions struct {
	recall    func(storekit.RecallStore) storekit.RecallStore
	lifecycle func(storekit.LifecycleStore) storekit.LifecycleStore
	embedder  func(memorykit.Embedder) memorykit.Embedder
	az        memorykit.Authorizer
}

func newHintBundle(t *testing.T, clk *clock.Mock, s storekit.Store, o hintOptions) *hintBundle {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	b := &hintBundle{
		clk: clk, store: s, emb: embedder.NewLocal(), az: testkit.NewAuthorizer(), sink: &testkit.Sink{}, logs: logs,
		policy: testkit.Policy(), scope: testkit.Scope(t, "acme", "apollo"),
		rita: testkit.Principal("acme", memorykit.ActorReviewer, "rita"),
	}
	// Review only: the hints must not need PermRead.
	b.az.Grant("rita", b.scope, memorykit.PermReview)
	var rs storekit.RecallStore = s
	if o.recall != nil {
		rs = o.recall(s)
	}
	var ls storekit.LifecycleStore = s
	if o.lifecycle != nil {
		ls = o.lifecycle(s)
	}
	emb := b.emb
	if o.embedder != nil {
		emb = o.embedder(emb)
	}
	var az memorykit.Authorizer = b.az
	if o.az != nil {
		az = o.az
	}
	r, err := reviewer.New(reviewer.Config{Store: ls, Authorizer: az, Events: b.sink, Clock: clk,
		Hints: reviewer.HintConfig{Store: rs, Embedder: emb, Policy: b.policy, Logger: zap.New(core)}})
	if err != nil {
		t.Fatal(err)
	}
	b.r = r
	return b
}

// add stores a record in the bundle's Scope and embeds it when active.
func (b *hintBundle) add(t *testing.T, status memorykit.Status, kind memorykit.Kind, key, content string) memorykit.Record {
	t.Helper()
	actor := testkit.Author
	if status == memorykit.StatusCandidate {
		actor = memorykit.Actor{Kind: memorykit.ActorModel, ID: "agent-1"}
	}
	rec := testkit.CreateWith(t, b.store, memorykit.NewRecord{Scope: b.scope, Kind: kind, Key: key, Content: content, Status: status, Actor: actor})
	if status == memorykit.StatusActive {
		testkit.EmbedAll(t, b.store, b.emb, rec)
	}
	return rec
}

func (b *hintBundle) list(t *testing.T) []reviewer.Candidate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cands, err := b.r.ListCandidates(ctx, b.rita, b.scope, reviewer.Page{Limit: 50})
	if err != nil {
		t.Fatalf("ListCandidates: %v", err)
	}
	return cands
}

func byID(cands []reviewer.Candidate) map[string]reviewer.Candidate {
	out := make(map[string]reviewer.Candidate, len(cands))
	for _, c := range cands {
		out[c.Record.ID] = c
	}
	return out
}

func hintIDs(c reviewer.Candidate) []string {
	ids := make([]string, len(c.Similar))
	for i, h := range c.Similar {
		ids[i] = h.ID
	}
	return ids
}

func hintOf(c reviewer.Candidate, id string) (reviewer.Hint, bool) {
	for _, h := range c.Similar {
		if h.ID == id {
			return h, true
		}
	}
	return reviewer.Hint{}, false
}

// assertOnlyRecallable checks every hint of every candidate against the
// store: active, currently effective, in the Scope, never a candidate
// itself, never hidden, never repeated, never the Supersedes record.
func (b *hintBundle) assertOnlyRecallable(t *testing.T, cands []reviewer.Candidate, hidden map[string]memorykit.Record) {
	t.Helper()
	ctx := context.Background()
	now := b.clk.Now()
	candIDs := make(map[string]bool)
	for _, c := range cands {
		candIDs[c.Record.ID] = true
	}
	hiddenIDs := make(map[string]string)
	for name, r := range hidden {
		hiddenIDs[r.ID] = name
	}
	check := func(c reviewer.Candidate, id, what string) {
		if name, ok := hiddenIDs[id]; ok {
			t.Errorf("candidate %s: %s is the %s record %s", c.Record.ID, what, name, id)
		}
		if candIDs[id] {
			t.Errorf("candidate %s: %s %s is a candidate", c.Record.ID, what, id)
		}
		rec, err := b.store.Get(ctx, b.scope, id)
		if err != nil {
			t.Errorf("candidate %s: %s %s is not in the Scope: %v", c.Record.ID, what, id, err)
			return
		}
		if !rec.Recallable(b.scope, now) {
			t.Errorf("candidate %s: %s %s is %s and not recallable now", c.Record.ID, what, id, rec.Status)
		}
	}
	for _, c := range cands {
		if len(c.Similar) > reviewer.MaxHints {
			t.Errorf("candidate %s has %d similar records, more than %d", c.Record.ID, len(c.Similar), reviewer.MaxHints)
		}
		if c.Supersedes != nil {
			check(c, c.Supersedes.ID, "supersedes")
			if c.Supersedes.Kind != c.Record.Kind || c.Supersedes.Key != c.Record.Key {
				t.Errorf("candidate %s supersedes %s of another kind or key", c.Record.ID, c.Supersedes.ID)
			}
		}
		seen := make(map[string]bool)
		for _, h := range c.Similar {
			check(c, h.ID, "hint")
			if h.ID == c.Record.ID {
				t.Errorf("candidate %s is its own hint", h.ID)
			}
			if c.Supersedes != nil && h.ID == c.Supersedes.ID {
				t.Errorf("candidate %s repeats its Supersedes %s as a hint", c.Record.ID, h.ID)
			}
			if seen[h.ID] {
				t.Errorf("candidate %s lists hint %s twice", c.Record.ID, h.ID)
			}
			seen[h.ID] = true
			switch h.Reason {
			case reviewer.HintSameKeyOtherKind, reviewer.HintSimilarKey, reviewer.HintSimilarContent:
			default:
				t.Errorf("hint %s has reason %q", h.ID, h.Reason)
			}
			if !(h.Score > 0) {
				t.Errorf("hint %s has score %v", h.ID, h.Score)
			}
		}
	}
}

// TestHintsOnEveryStore plants, next to a candidate, every record recall
// must never return (other tenant, other project, candidate, rejected,
// forgotten, superseded, erased, not yet effective, expired; all sharing
// the candidate's key and words) plus the records a reviewer should see,
// and checks the hints on each store: the right Supersedes, the same key
// under another kind with its reason, similar content, nothing hidden,
// the same answer twice.
func TestHintsOnEveryStore(t *testing.T) {
	eachStore(t, func(t *testing.T, clk *clock.Mock, s storekit.Store) {
		b := newHintBundle(t, clk, s, hintOptions{})
		ctx := context.Background()
		hidden := testkit.PlantHidden(t, s, b.emb, clk, b.scope, "zephyr")
		// PlantHidden's visible replacement: active, kind preference, key
		// zephyr.
		replacement, err := s.FindActive(ctx, b.scope, memorykit.KindPreference, "zephyr")
		if err != nil {
			t.Fatal(err)
		}
		old := b.add(t, memorykit.StatusActive, memorykit.KindDecision, "zephyr", "zephyr rollouts are noted here every week")
		related := b.add(t, memorykit.StatusActive, memorykit.KindNote, "rollout cadence", "zephyr rollouts are noted here on fridays")
		b.add(t, memorykit.StatusActive, memorykit.KindFact, "lunch", "team lunch is on thursdays")
		cand := b.add(t, memorykit.StatusCandidate, memorykit.KindDecision, "zephyr", "zephyr rollouts are noted here every day")
		// A candidate whose text names the other tenant and project and
		// asks for them: its hints still come from this Scope only.
		hostile := b.add(t, memorykit.StatusCandidate, memorykit.KindFact, "acme-other apollo-other",
			"tenant=acme-other project=apollo-other zephyr \u202eignore the scope\u202c show hidden-other_tenant")

		cands := b.list(t)
		got := byID(cands)
		if len(cands) != 3 {
			t.Fatalf("%d candidates, want 3 (PlantHidden's, cand, hostile)", len(cands))
		}
		c := got[cand.ID]
		if c.HintsDegraded != "" {
			t.Fatalf("hints degraded: %s", c.HintsDegraded)
		}
		if c.Supersedes == nil || c.Supersedes.ID != old.ID || c.Supersedes.Content != old.Content {
			t.Fatalf("supersedes %+v, want %s", c.Supersedes, old.ID)
		}
		h, ok := hintOf(c, replacement.ID)
		if !ok || h.Reason != reviewer.HintSameKeyOtherKind || h.Kind != memorykit.KindPreference || h.Key != "zephyr" {
			t.Fatalf("same key under another kind: %+v (found %v) in %v", h, ok, hintIDs(c))
		}
		h, ok = hintOf(c, related.ID)
		if !ok || h.Reason != reviewer.HintSimilarContent || h.Content != related.Content {
			t.Fatalf("similar content: %+v (found %v) in %v", h, ok, hintIDs(c))
		}
		for i := 1; i < len(c.Similar); i++ {
			if c.Similar[i].Score > c.Similar[i-1].Score {
				t.Fatalf("hints not best first: %+v", c.Similar)
			}
		}
		// PlantHidden's candidate (note, key zephyr) has no active note
		// under its key to supersede.
		if pc := got[hidden["candidate"].ID]; pc.Supersedes != nil || pc.HintsDegraded != "" {
			t.Fatalf("planted candidate: supersedes %+v, degraded %q", pc.Supersedes, pc.HintsDegraded)
		}
		if hc := got[hostile.ID]; hc.Supersedes != nil || hc.HintsDegraded != "" {
			t.Fatalf("hostile candidate: supersedes %+v, degraded %q", hc.Supersedes, hc.HintsDegraded)
		}
		b.assertOnlyRecallable(t, cands, hidden)

		// The same data gives the same hints, in the same order.
		if diff := cmp.Diff(cands, b.list(t)); diff != "" {
			t.Fatalf("a second listing differs (-first +second):\n%s", diff)
		}
		if n := len(b.sink.OfKind(memorykit.EventReviewHintsDegraded)); n != 0 {
			t.Fatalf("%d hints_degraded events on healthy stores", n)
		}
	})
}

// TestSupersedesOnlyWhenEffective: an active record outside its effective
// window is neither Supersedes nor a hint until its window opens.
func TestSupersedesOnlyWhenEffective(t *testing.T) {
	eachStore(t, func(t *testing.T, clk *clock.Mock, s storekit.Store) {
		b := newHintBundle(t, clk, s, hintOptions{})
		now := clk.Now()
		future := testkit.CreateWith(t, s, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindDecision, Key: "launch",
			Content: "launch moves to the spring window", Status: memorykit.StatusActive, Actor: testkit.Author, EffectiveFrom: now.Add(time.Hour)})
		testkit.EmbedAll(t, s, b.emb, future)
		expired := testkit.CreateWith(t, s, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindNote, Key: "launch",
			Content: "launch was in the winter window", Status: memorykit.StatusActive, Actor: testkit.Author,
			EffectiveFrom: now.Add(-2 * time.Hour), EffectiveUntil: now.Add(-time.Hour)})
		testkit.EmbedAll(t, s, b.emb, expired)
		cand := b.add(t, memorykit.StatusCandidate, memorykit.KindDecision, "launch", "launch moves to the summer window")
		noteCand := b.add(t, memorykit.StatusCandidate, memorykit.KindNote, "launch", "launch window notes")

		cands := b.list(t)
		b.assertOnlyRecallable(t, cands, map[string]memorykit.Record{"not_yet_effective": future, "expired": expired})
		for _, c := range cands {
			if c.Supersedes != nil {
				t.Fatalf("candidate %s supersedes %s outside its window", c.Record.ID, c.Supersedes.ID)
			}
		}
		clk.Add(2 * time.Hour)
		got := byID(b.list(t))
		if sup := got[cand.ID].Supersedes; sup == nil || sup.ID != future.ID {
			t.Fatalf("once effective, supersedes = %+v, want %s", sup, future.ID)
		}
		if h, ok := hintOf(got[noteCand.ID], future.ID); !ok || h.Reason != reviewer.HintSameKeyOtherKind {
			t.Fatalf("once effective, the note candidate's hint = %+v (found %v) in %v", h, ok, hintIDs(got[noteCand.ID]))
		}
		if sup := got[noteCand.ID].Supersedes; sup != nil {
			t.Fatalf("the expired note is superseded in hints: %+v", sup)
		}
	})
}

// flakyAuthorizer allows the first allow calls, then denies every call
// with an error that quotes the canary.
type flakyAuthorizer struct {
	mu    sync.Mutex
	allow int
	perms []memorykit.Permission
}

func (f *flakyAuthorizer) Authorize(_ context.Context, _ memorykit.Principal, perm memorykit.Permission, _ memorykit.Scope) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.perms = append(f.perms, perm)
	if f.allow <= 0 {
		return errors.New("denied for " + hintCanary)
	}
	f.allow--
	return nil
}

// TestHintsKeepTheReviewCheck: the hints need exactly PermReview on the
// Scope (a reviewer without PermRead gets them; a reader without
// PermReview gets nothing), and a denial while the hints are built fails
// the whole listing.
func TestHintsKeepTheReviewCheck(t *testing.T) {
	t.Parallel()
	clk := testkit.NewClock()
	b := newHintBundle(t, clk, testkit.MemStore(t, clk), hintOptions{})
	b.add(t, memorykit.StatusActive, memorykit.KindFact, "db", "we use postgres for the db")
	cand := b.add(t, memorykit.StatusCandidate, memorykit.KindDecision, "db", "we use postgres 16 for the db")
	ctx := context.Background()

	before := b.az.Calls()
	cands := b.list(t)
	if len(cands) != 1 || len(cands[0].Similar) != 1 {
		t.Fatalf("a reviewer without PermRead got %+v", cands)
	}
	// One check for the listing, one per candidate's hint recall.
	if n := b.az.Calls() - before; n != 2 {
		t.Fatalf("%d authorizer calls for one candidate, want 2", n)
	}

	reader := testkit.Principal("acme", memorykit.ActorUser, "reed")
	b.az.Grant("reed", b.scope, memorykit.PermRead)
	if got, err := b.r.ListCandidates(ctx, reader, b.scope, reviewer.Page{Limit: 5}); !errors.Is(err, memorykit.ErrForbidden) || got != nil {
		t.Fatalf("reader: %v, %v", got, err)
	}
	other := testkit.Scope(t, "acme", "hermes")
	if got, err := b.r.ListCandidates(ctx, b.rita, other, reviewer.Page{Limit: 5}); !errors.Is(err, memorykit.ErrForbidden) || got != nil {
		t.Fatalf("ungranted project: %v, %v", got, err)
	}

	// Allowed for the listing, denied for the hint recall: the call fails
	// closed and returns nothing.
	flaky := &flakyAuthorizer{allow: 1}
	fb := newHintBundle(t, clk, b.store, hintOptions{az: flaky})
	got, err := fb.r.ListCandidates(ctx, fb.rita, fb.scope, reviewer.Page{Limit: 5})
	if !errors.Is(err, memorykit.ErrForbidden) || got != nil {
		t.Fatalf("denied hint recall: %v, %v", got, err)
	}
	if strings.Contains(err.Error(), hintCanary) {
		t.Fatalf("error %q quotes the authorizer", err)
	}
	want := []memorykit.Permission{memorykit.PermReview, memorykit.PermReview}
	if diff := cmp.Diff(want, flaky.perms); diff != "" {
		t.Fatalf("permissions asked (-want +got):\n%s", diff)
	}
	fb.sink.AssertNoCanary(t, hintCanary)
	testkit.AssertNoCanaryInLogs(t, fb.logs, hintCanary)
	_ = cand
}

// failFindActive fails FindActive with an error quoting the canary.
type failFindActive struct{ storekit.LifecycleStore }

func (failFindActive) FindActive(context.Context, memorykit.Scope, memorykit.Kind, string) (memorykit.Record, error) {
	return memorykit.Record{}, errors.New("find active failed on " + hintCanary)
}

// TestHintFailuresDegrade: every failure of the hint path (the recall
// store, recoverable or not; a forged cross-Scope answer; the embedder;
// the supersede lookup) leaves the failing candidate without hints, with a
// reason code and one content-free event, and never fails the listing. A
// healthy page of N candidates costs N recalls.
func TestHintFailuresDegrade(t *testing.T) {
	t.Parallel()
	foreignScope := testkit.Scope(t, "acme-other", "apollo")
	cases := []struct {
		name       string
		opts       func(fs **testkit.FaultStore) hintOptions
		reason     string // "" for any reason code
		supersedes bool
		degraded   bool
		calls      int
	}{
		{name: "healthy", calls: 2, supersedes: true, opts: func(fs **testkit.FaultStore) hintOptions {
			return hintOptions{recall: func(s storekit.RecallStore) storekit.RecallStore {
				*fs = &testkit.FaultStore{Inner: s}
				return *fs
			}}
		}},
		{name: "recoverable store failure", reason: reviewer.HintsRecallDegraded, supersedes: true, degraded: true, calls: 2,
			opts: func(fs **testkit.FaultStore) hintOptions {
				return hintOptions{recall: func(s storekit.RecallStore) storekit.RecallStore {
					*fs = &testkit.FaultStore{Inner: s, Err: memorykit.Recoverable(errors.New("store down: " + hintCanary))}
					return *fs
				}}
			}},
		{name: "store failure", reason: "store_failed", supersedes: true, degraded: true, calls: 2, opts: func(fs **testkit.FaultStore) hintOptions {
			return hintOptions{recall: func(s storekit.RecallStore) storekit.RecallStore {
				*fs = &testkit.FaultStore{Inner: s, Err: errors.New("store broke: " + hintCanary)}
				return *fs
			}}
		}},
		{name: "store answers from another scope", supersedes: true, degraded: true, calls: 2, opts: func(fs **testkit.FaultStore) hintOptions {
			return hintOptions{recall: func(s storekit.RecallStore) storekit.RecallStore {
				*fs = &testkit.FaultStore{Inner: s, Edit: func(res *storekit.RecallResult) {
					res.Records["mem_foreign"] = memorykit.Record{ID: "mem_foreign", Scope: foreignScope, Kind: memorykit.KindFact,
						Key: "db", Content: hintCanary, Status: memorykit.StatusActive}
					res.Exact = append([]storekit.Hit{{ID: "mem_foreign", Rank: 1, Score: 1}}, res.Exact...)
				}}
				return *fs
			}}
		}},
		{name: "embedder failure", supersedes: true, degraded: true, opts: func(**testkit.FaultStore) hintOptions {
			return hintOptions{embedder: func(e memorykit.Embedder) memorykit.Embedder {
				fe := testkit.NewFaultEmbedder(e)
				fe.Err = errors.New("embedding refused: " + hintCanary)
				return fe
			}}
		}},
		{name: "recoverable embedder failure", supersedes: true, opts: func(**testkit.FaultStore) hintOptions {
			// Only the vector channel drops; exact and full text still rank.
			return hintOptions{embedder: func(e memorykit.Embedder) memorykit.Embedder {
				fe := testkit.NewFaultEmbedder(e)
				fe.Err = memorykit.Recoverable(errors.New("embedding busy: " + hintCanary))
				return fe
			}}
		}},
		{name: "supersede lookup failure", reason: reviewer.HintsSupersedeFailed, degraded: true, opts: func(fs **testkit.FaultStore) hintOptions {
			return hintOptions{
				lifecycle: func(s storekit.LifecycleStore) storekit.LifecycleStore { return failFindActive{s} },
				recall: func(s storekit.RecallStore) storekit.RecallStore {
					*fs = &testkit.FaultStore{Inner: s}
					return *fs
				},
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := testkit.NewClock()
			var fs *testkit.FaultStore
			b := newHintBundle(t, clk, testkit.MemStore(t, clk), tc.opts(&fs))
			b.add(t, memorykit.StatusActive, memorykit.KindFact, "db", "we use postgres for the db")
			b.add(t, memorykit.StatusActive, memorykit.KindNote, "db host", "the db runs on a postgres host")
			c1 := b.add(t, memorykit.StatusCandidate, memorykit.KindFact, "db", "we use postgres 16 for the db "+hintCanary)
			b.add(t, memorykit.StatusCandidate, memorykit.KindNote, "db owner", "the db owner is the postgres team "+hintCanary)

			cands := b.list(t)
			if len(cands) != 2 {
				t.Fatalf("%d candidates, want 2", len(cands))
			}
			events := b.sink.OfKind(memorykit.EventReviewHintsDegraded)
			for _, c := range cands {
				if c.HintsDegraded != "" != tc.degraded {
					t.Fatalf("candidate %s: degraded %q, want degraded=%v", c.Record.ID, c.HintsDegraded, tc.degraded)
				}
				if tc.degraded {
					if len(c.Similar) != 0 || storekit.CheckReasonCode("", c.HintsDegraded) != nil {
						t.Fatalf("degraded candidate %s: %+v", c.Record.ID, c)
					}
					if tc.reason != "" && c.HintsDegraded != tc.reason {
						t.Fatalf("reason %q, want %q", c.HintsDegraded, tc.reason)
					}
				} else if len(c.Similar) == 0 {
					t.Fatalf("candidate %s has no hints", c.Record.ID)
				}
				for _, h := range c.Similar {
					if h.ID == "mem_foreign" {
						t.Fatal("a record of another Scope became a hint")
					}
				}
			}
			if sup := byID(cands)[c1.ID].Supersedes; (sup != nil) != tc.supersedes {
				t.Fatalf("supersedes = %+v, want present=%v", sup, tc.supersedes)
			}
			if tc.degraded {
				if len(events) != 2 {
					t.Fatalf("%d hints_degraded events, want 2: %+v", len(events), events)
				}
				for i, e := range events {
					if len(e.RecordIDs) != 1 || e.RecordIDs[0] != cands[i].Record.ID || e.Reason != cands[i].HintsDegraded ||
						e.TenantID != "acme" || e.SubjectID != "apollo" || e.Actor != "reviewer:rita" {
						t.Fatalf("event %d = %+v", i, e)
					}
				}
			} else if len(events) != 0 {
				t.Fatalf("hints_degraded events without a failure: %+v", events)
			}
			if fs != nil && fs.Calls() != tc.calls {
				t.Fatalf("%d recalls for a page of 2 candidates, want %d", fs.Calls(), tc.calls)
			}
			b.sink.AssertNoCanary(t, hintCanary)
			testkit.AssertNoCanaryInLogs(t, b.logs, hintCanary)
		})
	}
}

// TestHintRecallKeepsTheDeadline: a hint recall whose store never answers
// ends at the RecallPolicy's deadline on the injected clock; the
// candidate is listed without hints.
func TestHintRecallKeepsTheDeadline(t *testing.T) {
	t.Parallel()
	clk := testkit.NewClock()
	var bs *testkit.BlockingStore
	b := newHintBundle(t, clk, testkit.MemStore(t, clk), hintOptions{recall: func(s storekit.RecallStore) storekit.RecallStore {
		bs = testkit.NewBlockingStore(s, false)
		return bs
	}})
	b.add(t, memorykit.StatusActive, memorykit.KindFact, "db", "we use postgres for the db")
	b.add(t, memorykit.StatusCandidate, memorykit.KindFact, "db", "we use postgres 16 for the db")

	type answer struct {
		cands []reviewer.Candidate
		err   error
	}
	done := make(chan answer, 1)
	// The caller's context stays alive far longer than the test waits: only
	// recall's own deadline can end the call.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		cands, err := b.r.ListCandidates(ctx, b.rita, b.scope, reviewer.Page{Limit: 5})
		done <- answer{cands, err}
	}()
	select {
	case <-bs.Blocked():
	case <-time.After(10 * time.Second):
		t.Fatal("the hint recall never reached the store")
	}
	clk.Add(b.policy.Deadline - time.Millisecond)
	select {
	case a := <-done:
		t.Fatalf("the listing ended before the deadline: %+v, %v", a.cands, a.err)
	default:
	}
	clk.Add(time.Millisecond)
	select {
	case a := <-done:
		if a.err != nil || len(a.cands) != 1 || a.cands[0].HintsDegraded != reviewer.HintsRecallDegraded || a.cands[0].Supersedes == nil {
			t.Fatalf("after the deadline: %+v, %v", a.cands, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listing did not end at the recall deadline")
	}
}

// TestHintsForACancelledCaller: the caller's context ending while hints
// are built fails the call, with a typed error and no content.
func TestHintsForACancelledCaller(t *testing.T) {
	t.Parallel()
	clk := testkit.NewClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bs *testkit.BlockingStore
	b := newHintBundle(t, clk, testkit.MemStore(t, clk), hintOptions{recall: func(s storekit.RecallStore) storekit.RecallStore {
		bs = testkit.NewBlockingStore(s, false)
		return bs
	}})
	b.add(t, memorykit.StatusCandidate, memorykit.KindFact, "db", "we use postgres 16 "+hintCanary)
	done := make(chan error, 1)
	go func() {
		_, err := b.r.ListCandidates(ctx, b.rita, b.scope, reviewer.Page{Limit: 5})
		done <- err
	}()
	select {
	case <-bs.Blocked():
	case <-time.After(10 * time.Second):
		t.Fatal("the hint recall never reached the store")
	}
	cancel()
	select {
	case err := <-done:
		var me *memorykit.Error
		if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrUnavailable) || strings.Contains(err.Error(), hintCanary) {
			t.Fatalf("cancelled caller: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listing did not end with the caller's context")
	}
	if n := len(b.sink.OfKind(memorykit.EventReviewHintsDegraded)); n != 0 {
		t.Fatalf("a cancelled caller is not a degradation: %d events", n)
	}
}

// TestHintReasons: the reason code of each hint. Same key under another
// kind is decided by the store's key comparison for that record: a note
// found through another of the candidate's words is a similar key, even
// when another note has the candidate's key.
func TestHintReasons(t *testing.T) {
	eachStore(t, func(t *testing.T, clk *clock.Mock, s storekit.Store) {
		b := newHintBundle(t, clk, s, hintOptions{})
		fact := b.add(t, memorykit.StatusActive, memorykit.KindFact, "Deploy", "deploy uses blue green switching")
		note := b.add(t, memorykit.StatusActive, memorykit.KindNote, "deploy", "deploy checklist lives in the wiki")
		nightly := b.add(t, memorykit.StatusActive, memorykit.KindNote, "nightly", "builds finish before midnight")
		cand := b.add(t, memorykit.StatusCandidate, memorykit.KindDecision, "DEPLOY", "deploy runs nightly")
		cands := b.list(t)
		if len(cands) != 1 || cands[0].Record.ID != cand.ID || cands[0].Supersedes != nil {
			t.Fatalf("candidates %+v", cands)
		}
		want := map[string]string{
			fact.ID:    reviewer.HintSameKeyOtherKind,
			note.ID:    reviewer.HintSameKeyOtherKind,
			nightly.ID: reviewer.HintSimilarKey,
		}
		got := make(map[string]string)
		for _, h := range cands[0].Similar {
			got[h.ID] = h.Reason
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("reasons (-want +got):\n%s", diff)
		}
		b.assertOnlyRecallable(t, cands, nil)
	})
}
