package writer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
	"github.com/goagents/memorykit/writer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	store  storekit.Store
	az     *testkit.Authorizer
	sink   *testkit.Sink
	w      *writer.Writer
	scope  memorykit.Scope
	user   memorykit.Principal
	model  memorykit.Principal
	review memorykit.Principal
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, testkit.Backend{Name: "memorystore"})
}

// setupOn is setup on the store implementation be.
func setupOn(t *testing.T, be testkit.Backend) *bundle {
	t.Helper()
	clk := testkit.NewClock()
	b := &bundle{
		store:  be.Open(t, clk),
		az:     testkit.NewAuthorizer(),
		sink:   &testkit.Sink{},
		scope:  testkit.Scope(t, "acme", "apollo"),
		user:   testkit.Principal("acme", memorykit.ActorUser, "alice"),
		model:  testkit.Principal("acme", memorykit.ActorModel, "agent-1"),
		review: testkit.Principal("acme", memorykit.ActorReviewer, "rita"),
	}
	b.az.Grant("alice", b.scope, memorykit.PermWrite)
	b.az.Grant("agent-1", b.scope, memorykit.PermModelWrite)
	w, err := writer.New(writer.Config{Store: b.store, Authorizer: b.az, Events: b.sink, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	b.w = w
	return b
}

func fact(key, content string) writer.Input {
	return writer.Input{Kind: memorykit.KindFact, Key: key, Content: content}
}

func (b *bundle) count(t *testing.T) int {
	t.Helper()
	recs, err := b.store.List(context.Background(), storekit.ListFilter{Scope: b.scope, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

func TestNewRefusesMissingParts(t *testing.T) {
	t.Parallel()
	clk := testkit.NewClock()
	full := writer.Config{Store: testkit.MemStore(t, clk), Authorizer: testkit.NewAuthorizer(), Events: &testkit.Sink{}, Clock: clk}
	for name, mutate := range map[string]func(*writer.Config){
		"store":      func(c *writer.Config) { c.Store = nil },
		"authorizer": func(c *writer.Config) { c.Authorizer = nil },
		"events":     func(c *writer.Config) { c.Events = nil },
		"clock":      func(c *writer.Config) { c.Clock = nil },
	} {
		cfg := full
		mutate(&cfg)
		if _, err := writer.New(cfg); !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("missing %s: %v", name, err)
		}
	}
}

func TestWriteExplicitIsActiveAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	first, err := b.w.WriteExplicit(ctx, b.user, b.scope, fact("Deploy Region", "eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Outcome != writer.OutcomeActive || first.Record.Status != memorykit.StatusActive || first.Record.Key != "deploy region" {
		t.Fatalf("explicit write = %+v", first)
	}
	second, err := b.w.WriteExplicit(ctx, b.user, b.scope, fact("deploy region", "us-east-2"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := b.store.Get(ctx, b.scope, first.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	if old.Status != memorykit.StatusSuperseded || second.Record.Status != memorykit.StatusActive {
		t.Fatalf("second explicit write must supersede: old=%s new=%s", old.Status, second.Record.Status)
	}
	if n := len(b.sink.OfKind(memorykit.EventWriteStored)); n != 2 {
		t.Fatalf("%d write.stored events, want 2", n)
	}
}

func TestWritesFailClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const canary = "canary-7f3a"
	other := memorykit.Scope{TenantID: "acme", SubjectType: memorykit.SubjectProject, SubjectID: "hermes"}
	userScope := memorykit.Scope{TenantID: "acme", SubjectType: memorykit.SubjectUser, SubjectID: "alice"}
	tests := []struct {
		name  string
		write func(b *bundle) error
		want  error
	}{
		{"not granted scope", func(b *bundle) error {
			_, err := b.w.WriteExplicit(ctx, b.user, other, fact("k", canary))
			return err
		}, memorykit.ErrForbidden},
		{"other tenant principal", func(b *bundle) error {
			_, err := b.w.WriteExplicit(ctx, testkit.Principal("evil", memorykit.ActorUser, "alice"), b.scope, fact("k", canary))
			return err
		}, memorykit.ErrForbidden},
		{"user scope", func(b *bundle) error {
			_, err := b.w.WriteExplicit(ctx, b.user, userScope, fact("k", canary))
			return err
		}, memorykit.ErrInvalidScope},
		{"model via explicit path", func(b *bundle) error {
			_, err := b.w.WriteExplicit(ctx, b.model, b.scope, fact("k", canary))
			return err
		}, memorykit.ErrForbidden},
		{"user via model path", func(b *bundle) error {
			_, err := b.w.WriteModel(ctx, b.user, b.scope, fact("k", canary))
			return err
		}, memorykit.ErrForbidden},
		{"model without model_write", func(b *bundle) error {
			b.az.Revoke()
			_, err := b.w.WriteModel(ctx, b.model, b.scope, fact("k", canary))
			return err
		}, memorykit.ErrForbidden},
		{"projection by user", func(b *bundle) error {
			_, err := b.w.WriteProjection(ctx, b.user, b.scope, fact("k", canary))
			return err
		}, memorykit.ErrForbidden},
		{"validator rejects", func(b *bundle) error {
			_, err := b.w.WriteExplicit(ctx, b.user, b.scope, fact("k", canary+testkit.RejectMarker))
			return err
		}, memorykit.ErrInvalidInput},
		{"nul byte", func(b *bundle) error {
			_, err := b.w.WriteExplicit(ctx, b.user, b.scope, fact("k", canary+"\x00"))
			return err
		}, memorykit.ErrInvalidInput},
		{"invalid utf8", func(b *bundle) error {
			_, err := b.w.WriteModel(ctx, b.model, b.scope, fact("k", canary+"\xff"))
			return err
		}, memorykit.ErrInvalidInput},
		{"oversized", func(b *bundle) error {
			_, err := b.w.WriteModel(ctx, b.model, b.scope, fact("k", canary+strings.Repeat("x", storetest.Limits().MaxContentBytes)))
			return err
		}, memorykit.ErrInvalidInput},
		{"unknown kind", func(b *bundle) error {
			_, err := b.w.WriteExplicit(ctx, b.user, b.scope, writer.Input{Kind: "secret", Key: "k", Content: canary})
			return err
		}, memorykit.ErrInvalidInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			err := tc.write(b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), canary) {
				t.Fatalf("error leaks content: %q", err)
			}
			if n := b.count(t); n != 0 {
				t.Fatalf("a refused write stored %d records", n)
			}
			if len(b.sink.OfKind(memorykit.EventWriteFailed)) != 1 {
				t.Fatalf("want one write.failed event, got %+v", b.sink.Events())
			}
			b.sink.AssertNoCanary(t, canary)
		})
	}
}

func TestWriteProjection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proj := testkit.Principal("acme", memorykit.ActorProjection, "settings-sync")
	b.az.Grant("settings-sync", b.scope, memorykit.PermWrite)
	res, err := b.w.WriteProjection(context.Background(), proj, b.scope, fact("project language", "Go"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != writer.OutcomeActive || res.Record.CreatedBy != proj.Actor {
		t.Fatalf("projection write = %+v", res)
	}
}

// The own-untouched rule: a model write is immediate only for a new
// kind/key or to replace the same model's own untouched write.
func TestModelWriteOwnUntouchedRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		// prepare leaves the store with (maybe) an active record for
		// fact/"region" and returns its ID ("" for none).
		prepare     func(t *testing.T, b *bundle) string
		wantOutcome writer.Outcome
	}{
		{"new key", func(*testing.T, *bundle) string { return "" }, writer.OutcomeActive},
		{"own untouched", func(t *testing.T, b *bundle) string {
			return mustModelWrite(t, b, "eu-west-1").ID
		}, writer.OutcomeActive},
		{"own but reviewed", func(t *testing.T, b *bundle) string {
			cand, err := b.store.Create(ctx, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindFact, Key: "region",
				Content: "eu-west-1", Status: memorykit.StatusCandidate, Actor: b.model.Actor})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := b.store.Activate(ctx, storekit.Transition{Scope: b.scope, ID: cand.ID, Actor: b.review.Actor})
			if err != nil {
				t.Fatal(err)
			}
			return rec.ID
		}, writer.OutcomeCandidate},
		{"own but corrected", func(t *testing.T, b *bundle) string {
			rec := mustModelWrite(t, b, "eu-west-1")
			rec, err := b.store.Correct(ctx, storekit.Correction{
				Transition: storekit.Transition{Scope: b.scope, ID: rec.ID, Actor: b.review.Actor},
				Content:    "eu-central-1",
			})
			if err != nil {
				t.Fatal(err)
			}
			return rec.ID
		}, writer.OutcomeCandidate},
		{"other author", func(t *testing.T, b *bundle) string {
			res, err := b.w.WriteExplicit(ctx, b.user, b.scope, fact("region", "eu-west-1"))
			if err != nil {
				t.Fatal(err)
			}
			return res.Record.ID
		}, writer.OutcomeCandidate},
		{"another model", func(t *testing.T, b *bundle) string {
			other := testkit.Principal("acme", memorykit.ActorModel, "agent-2")
			b.az.Grant("agent-2", b.scope, memorykit.PermModelWrite)
			res, err := b.w.WriteModel(ctx, other, b.scope, fact("region", "eu-west-1"))
			if err != nil {
				t.Fatal(err)
			}
			return res.Record.ID
		}, writer.OutcomeCandidate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			prevID := tc.prepare(t, b)
			res, err := b.w.WriteModel(ctx, b.model, b.scope, fact("Region", "ap-south-1"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.wantOutcome {
				t.Fatalf("outcome = %s, want %s", res.Outcome, tc.wantOutcome)
			}
			active, err := b.store.FindActive(ctx, b.scope, memorykit.KindFact, "region")
			if err != nil {
				t.Fatal(err)
			}
			switch tc.wantOutcome {
			case writer.OutcomeActive:
				if active.ID != res.Record.ID || active.Content != "ap-south-1" {
					t.Fatalf("the model write should be the active record, active=%s", active.ID)
				}
				if prevID != "" {
					prev, _ := b.store.Get(ctx, b.scope, prevID)
					if prev.Status != memorykit.StatusSuperseded {
						t.Fatalf("replaced record status = %s, want superseded", prev.Status)
					}
				}
			case writer.OutcomeCandidate:
				if res.Record.Status != memorykit.StatusCandidate {
					t.Fatalf("status = %s, want candidate", res.Record.Status)
				}
				if active.ID != prevID {
					t.Fatalf("the active record must stay: active=%s want %s", active.ID, prevID)
				}
			}
		})
	}
}

func mustModelWrite(t *testing.T, b *bundle, content string) memorykit.Record {
	t.Helper()
	res, err := b.w.WriteModel(context.Background(), b.model, b.scope, fact("region", content))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != writer.OutcomeActive {
		t.Fatalf("setup write outcome = %s", res.Outcome)
	}
	return res.Record
}

// racingStore lets a user write land between the model write's read and its
// conditional create.
type racingStore struct {
	storekit.LifecycleStore
	once func()
}

func (r *racingStore) FindActive(ctx context.Context, s memorykit.Scope, k memorykit.Kind, key string) (memorykit.Record, error) {
	rec, err := r.LifecycleStore.FindActive(ctx, s, k, key)
	if r.once != nil {
		f := r.once
		r.once = nil
		f()
	}
	return rec, err
}

func TestModelWriteRereadsWhenTheActiveRecordChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var userRecord memorykit.Record
	rs := &racingStore{LifecycleStore: b.store}
	rs.once = func() {
		res, err := b.w.WriteExplicit(ctx, b.user, b.scope, fact("region", "eu-west-1"))
		if err != nil {
			t.Error(err)
		}
		userRecord = res.Record
	}
	w, err := writer.New(writer.Config{Store: rs, Authorizer: b.az, Events: b.sink, Clock: testkit.NewClock()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.WriteModel(ctx, b.model, b.scope, fact("region", "ap-south-1"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != writer.OutcomeCandidate {
		t.Fatalf("a user write landed first: model write must become a candidate, got %s", res.Outcome)
	}
	active, err := b.store.FindActive(ctx, b.scope, memorykit.KindFact, "region")
	if err != nil || active.ID != userRecord.ID {
		t.Fatalf("active = %v %v, want the user's record", active.ID, err)
	}
}

func TestOwnUntouched(t *testing.T) {
	t.Parallel()
	m := memorykit.Actor{Kind: memorykit.ActorModel, ID: "agent-1"}
	r := memorykit.Actor{Kind: memorykit.ActorReviewer, ID: "rita"}
	cases := []struct {
		rec  memorykit.Record
		want bool
	}{
		{memorykit.Record{Version: 1, CreatedBy: m, TouchedBy: m}, true},
		{memorykit.Record{Version: 2, CreatedBy: m, TouchedBy: m}, false},
		{memorykit.Record{Version: 2, CreatedBy: m, TouchedBy: r}, false},
		{memorykit.Record{Version: 1, CreatedBy: r, TouchedBy: r}, false},
	}
	for i, c := range cases {
		if got := writer.OwnUntouched(c.rec, m); got != c.want {
			t.Errorf("case %d: OwnUntouched = %v, want %v", i, got, c.want)
		}
	}
}

// TestReasonsGoThroughContentPolicy: a write whose free-text reason the
// Host's ContentValidator refuses is a typed ErrInvalidInput, carries no
// content, and stores nothing, on every write path (issue 10, hole 8).
func TestReasonsGoThroughContentPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	proj := testkit.Principal("acme", memorykit.ActorProjection, "settings")
	b.az.Grant("settings", b.scope, memorykit.PermWrite)
	in := fact("deploy region", "eu-west-1")
	in.Reason = "password=hunter2 " + testkit.RejectMarker
	for name, write := range map[string]func() (writer.Result, error){
		"explicit":   func() (writer.Result, error) { return b.w.WriteExplicit(ctx, b.user, b.scope, in) },
		"projection": func() (writer.Result, error) { return b.w.WriteProjection(ctx, proj, b.scope, in) },
		"model":      func() (writer.Result, error) { return b.w.WriteModel(ctx, b.model, b.scope, in) },
	} {
		before := dumpStore(t, b.store)
		_, err := write()
		var me *memorykit.Error
		if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrInvalidInput) || me.Reason != "content_rejected" {
			t.Fatalf("%s write with a refused reason: %v, want ErrInvalidInput content_rejected", name, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%s: error %q repeats the reason", name, err)
		}
		if after := dumpStore(t, b.store); after != before {
			t.Fatalf("%s write with a refused reason changed the store", name)
		}
	}
}

// dumpStore returns the whole-store dump of either store implementation.
func dumpStore(t *testing.T, s storekit.Store) string {
	t.Helper()
	switch d := s.(type) {
	case interface{ Dump() string }:
		return d.Dump()
	case interface {
		Dump(context.Context) (string, error)
	}:
		out, err := d.Dump(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Fatalf("store %T has no Dump", s)
	return ""
}
