package reviewer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/reviewer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	store *memorystore.Store
	az    *testkit.Authorizer
	sink  *testkit.Sink
	r     *reviewer.Reviewer
	scope memorykit.Scope
	rita  memorykit.Principal
	model memorykit.Actor
}

func setup(t *testing.T) *bundle {
	t.Helper()
	clk := testkit.NewClock()
	b := &bundle{
		store: testkit.MemStore(t, clk),
		az:    testkit.NewAuthorizer(),
		sink:  &testkit.Sink{},
		scope: testkit.Scope(t, "acme", "apollo"),
		rita:  testkit.Principal("acme", memorykit.ActorReviewer, "rita"),
		model: memorykit.Actor{Kind: memorykit.ActorModel, ID: "agent-1"},
	}
	b.az.Grant("rita", b.scope, memorykit.PermReview, memorykit.PermErase)
	r, err := reviewer.New(reviewer.Config{Store: b.store, Authorizer: b.az, Events: b.sink, Clock: clk,
		Hints: reviewer.HintConfig{Store: b.store, Embedder: embedder.NewLocal(), Policy: testkit.Policy(), Logger: zap.NewNop()}})
	if err != nil {
		t.Fatal(err)
	}
	b.r = r
	return b
}

func (b *bundle) create(t *testing.T, status memorykit.Status, key, content string) memorykit.Record {
	t.Helper()
	rec, err := b.store.Create(context.Background(), memorykit.NewRecord{
		Scope: b.scope, Kind: memorykit.KindDecision, Key: key, Content: content, Status: status, Actor: b.model,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestNewRefusesMissingParts(t *testing.T) {
	t.Parallel()
	clk := testkit.NewClock()
	store := testkit.MemStore(t, clk)
	full := reviewer.Config{Store: store, Authorizer: testkit.NewAuthorizer(), Events: &testkit.Sink{}, Clock: clk,
		Hints: reviewer.HintConfig{Store: store, Embedder: embedder.NewLocal(), Policy: testkit.Policy(), Logger: zap.NewNop()}}
	if _, err := reviewer.New(full); err != nil {
		t.Fatalf("a full config is refused: %v", err)
	}
	for name, mutate := range map[string]func(*reviewer.Config){
		"store":          func(c *reviewer.Config) { c.Store = nil },
		"authorizer":     func(c *reviewer.Config) { c.Authorizer = nil },
		"events":         func(c *reviewer.Config) { c.Events = nil },
		"clock":          func(c *reviewer.Config) { c.Clock = nil },
		"hints.store":    func(c *reviewer.Config) { c.Hints.Store = nil },
		"hints.logger":   func(c *reviewer.Config) { c.Hints.Logger = nil },
		"hints.embedder": func(c *reviewer.Config) { c.Hints.Embedder = nil },
		"hints.embedder with a lexical policy": func(c *reviewer.Config) {
			c.Hints.Policy = memorykit.RecallPolicyLexicalV1()
		},
		"hints.embedder of another profile": func(c *reviewer.Config) {
			c.Hints.Policy.EmbeddingProfile = "other/model-v2"
		},
	} {
		cfg := full
		mutate(&cfg)
		if r, err := reviewer.New(cfg); !errors.Is(err, memorykit.ErrInvalidConfig) || r != nil {
			t.Errorf("missing %s: %v", name, err)
		}
	}
	// No default policy: a zero or partial one is refused.
	for name, p := range map[string]memorykit.RecallPolicy{"zero": {}, "partial": func() memorykit.RecallPolicy {
		p := testkit.Policy()
		p.Deadline = 0
		return p
	}()} {
		cfg := full
		cfg.Hints.Policy = p
		if r, err := reviewer.New(cfg); !errors.Is(err, memorykit.ErrInvalidPolicy) || r != nil {
			t.Errorf("%s hint policy: %v", name, err)
		}
	}
}

func TestReviewLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	old := b.create(t, memorykit.StatusActive, "db", "use MySQL")
	cand := b.create(t, memorykit.StatusCandidate, "db", "use PostgreSQL")

	list, err := b.r.ListCandidates(ctx, b.rita, b.scope, reviewer.Page{Limit: 10})
	if err != nil || len(list) != 1 || list[0].Record.ID != cand.ID {
		t.Fatalf("ListCandidates = %v, %v", list, err)
	}
	if sup := list[0].Supersedes; sup == nil || sup.ID != old.ID {
		t.Fatalf("candidate supersedes %+v, want %s", sup, old.ID)
	}
	act, err := b.r.Activate(ctx, b.rita, b.scope, reviewer.Decision{ID: cand.ID, ExpectVersion: 1, Reason: "agreed in review"})
	if err != nil {
		t.Fatal(err)
	}
	if act.Status != memorykit.StatusActive || act.TouchedBy != b.rita.Actor {
		t.Fatalf("activated = %+v", act)
	}
	if prev, _ := b.r.Get(ctx, b.rita, b.scope, old.ID); prev.Status != memorykit.StatusSuperseded {
		t.Fatalf("old active status = %s, want superseded", prev.Status)
	}
	// A stale expectation is a version conflict and changes nothing.
	if _, err := b.r.Forget(ctx, b.rita, b.scope, reviewer.Decision{ID: act.ID, ExpectVersion: 1}); !errors.Is(err, memorykit.ErrVersionConflict) {
		t.Fatalf("stale ExpectVersion: %v", err)
	}
	cor, err := b.r.Correct(ctx, b.rita, b.scope, reviewer.CorrectionInput{
		Decision: reviewer.Decision{ID: act.ID, Reason: "typo"}, Content: "use PostgreSQL 16",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cor.ContentHash == act.ContentHash || cor.Version != act.Version+1 {
		t.Fatalf("correction must bump version and hash: %+v", cor)
	}
	if _, err := b.r.Forget(ctx, b.rita, b.scope, reviewer.Decision{ID: cor.ID}); err != nil {
		t.Fatal(err)
	}
	erased, err := b.r.Erase(ctx, b.rita, b.scope, reviewer.Decision{ID: cor.ID, Reason: "gdpr"})
	if err != nil {
		t.Fatal(err)
	}
	if erased.Status != memorykit.StatusErased || erased.Content != "" || erased.ContentHash != "" {
		t.Fatalf("erased = %+v", erased)
	}
	hist, err := b.r.History(ctx, b.rita, b.scope, cor.ID)
	if err != nil {
		t.Fatal(err)
	}
	var acts []memorykit.Action
	for _, h := range hist {
		acts = append(acts, h.Action)
		if h.Content != "" {
			t.Fatalf("revision %d still has content after erase", h.Version)
		}
	}
	want := []memorykit.Action{memorykit.ActionCreate, memorykit.ActionActivate, memorykit.ActionCorrect, memorykit.ActionForget, memorykit.ActionErase}
	if len(acts) != len(want) {
		t.Fatalf("history = %v, want %v", acts, want)
	}
	for i := range want {
		if acts[i] != want[i] {
			t.Fatalf("history = %v, want %v", acts, want)
		}
	}
	rej := b.create(t, memorykit.StatusCandidate, "cache", "use Redis")
	if r, err := b.r.Reject(ctx, b.rita, b.scope, reviewer.Decision{ID: rej.ID}); err != nil || r.Status != memorykit.StatusRejected {
		t.Fatalf("Reject = %+v, %v", r, err)
	}
	if n := len(b.sink.OfKind(memorykit.EventLifecycle)); n != 6 {
		t.Fatalf("%d lifecycle events, want 6 (5 ok + 1 conflict)", n)
	}
	b.sink.AssertNoCanary(t, "PostgreSQL")
}

func TestEveryActionIsAuthorized(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	other := testkit.Scope(t, "acme", "hermes")
	type call func(b *bundle, p memorykit.Principal, s memorykit.Scope, id string) error
	calls := map[string]call{
		"list": func(b *bundle, p memorykit.Principal, s memorykit.Scope, _ string) error {
			_, err := b.r.ListCandidates(ctx, p, s, reviewer.Page{Limit: 5})
			return err
		},
		"get": func(b *bundle, p memorykit.Principal, s memorykit.Scope, id string) error {
			_, err := b.r.Get(ctx, p, s, id)
			return err
		},
		"history": func(b *bundle, p memorykit.Principal, s memorykit.Scope, id string) error {
			_, err := b.r.History(ctx, p, s, id)
			return err
		},
		"activate": func(b *bundle, p memorykit.Principal, s memorykit.Scope, id string) error {
			_, err := b.r.Activate(ctx, p, s, reviewer.Decision{ID: id})
			return err
		},
		"reject": func(b *bundle, p memorykit.Principal, s memorykit.Scope, id string) error {
			_, err := b.r.Reject(ctx, p, s, reviewer.Decision{ID: id})
			return err
		},
		"correct": func(b *bundle, p memorykit.Principal, s memorykit.Scope, id string) error {
			_, err := b.r.Correct(ctx, p, s, reviewer.CorrectionInput{Decision: reviewer.Decision{ID: id}, Content: "x"})
			return err
		},
		"forget": func(b *bundle, p memorykit.Principal, s memorykit.Scope, id string) error {
			_, err := b.r.Forget(ctx, p, s, reviewer.Decision{ID: id})
			return err
		},
		"erase": func(b *bundle, p memorykit.Principal, s memorykit.Scope, id string) error {
			_, err := b.r.Erase(ctx, p, s, reviewer.Decision{ID: id})
			return err
		},
	}
	for name, c := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rec := b.create(t, memorykit.StatusCandidate, "k", "v")
			before := b.store.Dump()
			stranger := testkit.Principal("acme", memorykit.ActorReviewer, "mallory")
			intruder := testkit.Principal("evil", memorykit.ActorReviewer, "rita")
			for who, err := range map[string]error{
				"no grant":          c(b, stranger, b.scope, rec.ID),
				"other tenant":      c(b, intruder, b.scope, rec.ID),
				"ungranted project": c(b, b.rita, other, rec.ID),
			} {
				if !errors.Is(err, memorykit.ErrForbidden) {
					t.Errorf("%s: err = %v, want ErrForbidden", who, err)
				}
			}
			if after := b.store.Dump(); after != before {
				t.Fatal("a refused review action changed the store")
			}
		})
	}
}

func TestEraseNeedsErasePermission(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rec := b.create(t, memorykit.StatusCandidate, "k", "secret-ish content")
	ron := testkit.Principal("acme", memorykit.ActorReviewer, "ron")
	b.az.Grant("ron", b.scope, memorykit.PermReview)
	if _, err := b.r.Reject(ctx, ron, b.scope, reviewer.Decision{ID: rec.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.r.Erase(ctx, ron, b.scope, reviewer.Decision{ID: rec.ID}); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("erase with review only: %v", err)
	}
	got, _ := b.store.Get(ctx, b.scope, rec.ID)
	if got.Status != memorykit.StatusRejected || !strings.Contains(got.Content, "secret-ish") {
		t.Fatalf("record changed: %+v", got)
	}
}

// TestReasonsGoThroughContentPolicy: a review action whose free-text
// reason the Host's ContentValidator refuses is a typed ErrInvalidInput,
// carries no content, and changes nothing (issue 10, hole 8).
func TestReasonsGoThroughContentPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cand := b.create(t, memorykit.StatusCandidate, "db", "use PostgreSQL")
	act := b.create(t, memorykit.StatusActive, "cache", "use Redis")
	gone := b.create(t, memorykit.StatusActive, "queue", "use NATS")
	if _, err := b.r.Forget(ctx, b.rita, b.scope, reviewer.Decision{ID: gone.ID}); err != nil {
		t.Fatal(err)
	}
	const secret = "password=hunter2 " + testkit.RejectMarker
	for name, do := range map[string]func() (memorykit.Record, error){
		"activate": func() (memorykit.Record, error) {
			return b.r.Activate(ctx, b.rita, b.scope, reviewer.Decision{ID: cand.ID, Reason: secret})
		},
		"reject": func() (memorykit.Record, error) {
			return b.r.Reject(ctx, b.rita, b.scope, reviewer.Decision{ID: cand.ID, Reason: secret})
		},
		"forget": func() (memorykit.Record, error) {
			return b.r.Forget(ctx, b.rita, b.scope, reviewer.Decision{ID: act.ID, Reason: secret})
		},
		"erase": func() (memorykit.Record, error) {
			return b.r.Erase(ctx, b.rita, b.scope, reviewer.Decision{ID: gone.ID, Reason: secret})
		},
		"correct": func() (memorykit.Record, error) {
			return b.r.Correct(ctx, b.rita, b.scope, reviewer.CorrectionInput{Decision: reviewer.Decision{ID: act.ID, Reason: secret}, Content: "use Valkey"})
		},
	} {
		before := b.store.Dump()
		_, err := do()
		var me *memorykit.Error
		if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrInvalidInput) || me.Reason != "content_rejected" {
			t.Fatalf("%s with a refused reason: %v, want ErrInvalidInput content_rejected", name, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%s: error %q repeats the reason", name, err)
		}
		if after := b.store.Dump(); after != before {
			t.Fatalf("%s with a refused reason changed the store", name)
		}
	}
}

func TestPurgeNeedsPermErase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rec := b.create(t, memorykit.StatusActive, "secret plan", "launch on monday")
	cand := b.create(t, memorykit.StatusCandidate, "other plan", "maybe tuesday")
	pete := testkit.Principal("acme", memorykit.ActorReviewer, "pete")
	b.az.Grant("pete", b.scope, memorykit.PermReview)
	if _, err := b.r.Purge(ctx, pete, b.scope, "project_closed"); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("purge with PermReview only: %v", err)
	}
	if got := b.store.Dump(); !strings.Contains(got, "launch on monday") {
		t.Fatal("a refused purge changed the store")
	}
	rep, err := b.r.Purge(ctx, b.rita, b.scope, "project_closed")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 2 || rep.RecordIDs[0] != min(rec.ID, cand.ID) || rep.Actor != b.rita.Actor {
		t.Fatalf("report: %+v", rep)
	}
	if d := b.store.Dump(); strings.Contains(d, "launch on monday") || strings.Contains(d, "secret plan") {
		t.Fatalf("purge left content behind:\n%s", d)
	}
	if _, err := b.r.Purge(ctx, b.rita, b.scope, "free text is not a code"); !errors.Is(err, memorykit.ErrInvalidInput) {
		t.Fatalf("purge with a free-text reason: %v", err)
	}
}
