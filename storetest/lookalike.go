package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// LookAlikeKeys are spellings of "deploy region" that render like it: a
// Cyrillic е, a Greek ο, a dotless ı, an i with a combining dot above, a
// braille blank and a Hangul filler for the space, and a mix. Each must be
// the key "deploy region" (storekit.NormalizeKey).
var LookAlikeKeys = []string{
	"d\u0435ploy region",
	"depl\u03bfy region",
	"deploy reg\u0131on",
	"deploy regi\u0307on",
	"deploy\u2800region",
	"deploy\u3164region",
	"\u2800D\u0415PL\u039fY REG\u0130ON",
	"d\u0435pl\u043ey\u00a0r\u0435gi\u043en\u200b",
}

// modelWriteAuthorizer grants exactly one model PermModelWrite in one
// Scope; everything else is denied.
type modelWriteAuthorizer struct {
	actor memorykit.Actor
	scope memorykit.Scope
}

func (a modelWriteAuthorizer) Authorize(_ context.Context, p memorykit.Principal, perm memorykit.Permission, scope memorykit.Scope) error {
	if p.Actor == a.actor && perm == memorykit.PermModelWrite && scope == a.scope {
		return nil
	}
	return &memorykit.Error{Op: "storetest.authorize", Kind: memorykit.ErrForbidden, Reason: "not_granted"}
}

// discardEvents drops every event.
type discardEvents struct{}

func (discardEvents) Emit(memorykit.Event) {}

// testLookAlikeKeys: the user writes "deploy region"; the model then
// writes each look-alike of it through the model write path (writer), under
// the same kind and under another. None may become a second active record:
// each is a candidate of the one key, the user's record stays the only
// active one, and recall by any spelling shows that one record. The
// model's own untouched key, rewritten in a look-alike spelling, is
// replaced, not doubled.
func testLookAlikeKeys(t *testing.T, e *env) {
	w, err := writer.New(writer.Config{Store: e.s, Authorizer: modelWriteAuthorizer{actor: modelAct, scope: e.scope},
		Events: discardEvents{}, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	model := memorykit.Principal{TenantID: e.scope.TenantID, Actor: modelAct}
	user := e.create(e.active(memorykit.KindFact, "deploy region", "eu-west-1"))
	for i, key := range LookAlikeKeys {
		for _, kind := range []memorykit.Kind{memorykit.KindFact, memorykit.KindNote} {
			res, err := w.WriteModel(e.ctx, model, e.scope, writer.Input{Kind: kind, Key: key, Content: fmt.Sprintf("spoof %d", i)})
			if err != nil {
				t.Fatalf("model write of %+q as %s: %v", key, kind, err)
			}
			if res.Outcome != writer.OutcomeCandidate || res.Record.Status != memorykit.StatusCandidate || res.Record.Key != user.Key {
				t.Fatalf("model write of %+q as %s: %s, status %s, key %+q; want a candidate of %+q",
					key, kind, res.Outcome, res.Record.Status, res.Record.Key, user.Key)
			}
		}
	}
	active, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Statuses: []memorykit.Status{memorykit.StatusActive}, Limit: 50})
	if err != nil || len(active) != 1 || active[0].ID != user.ID {
		t.Fatalf("active records after the look-alike writes: %d, %v; want only the user's", len(active), err)
	}
	for _, key := range append([]string{"deploy region"}, LookAlikeKeys...) {
		if r, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, key); err != nil || r.ID != user.ID {
			t.Fatalf("FindActive(%+q) = %s, %v; want %s", key, r.ID, err, user.ID)
		}
		listed, err := e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Key: key, Limit: 50})
		if err != nil || len(listed) != 1+2*len(LookAlikeKeys) {
			t.Fatalf("List(key %+q) = %d records, %v; want the user's and every candidate", key, len(listed), err)
		}
		q := query(e.scope)
		q.ExactKeys = storekit.ExactKeys(key, 8)
		q.Terms = storekit.SearchTerms(key, 8)
		res := e.recall(q)
		e.checkRecords(t, e.scope, res)
		if len(res.Records) != 1 || res.Records[user.ID].ID != user.ID || len(res.Exact) != 1 {
			t.Fatalf("recall of %+q: %d records, %d exact hits; want the user's record alone", key, len(res.Records), len(res.Exact))
		}
	}

	// The model's own untouched key: a look-alike rewrite replaces it.
	first, err := w.WriteModel(e.ctx, model, e.scope, writer.Input{Kind: memorykit.KindFact, Key: "rollout plan", Content: "canary first"})
	if err != nil || first.Outcome != writer.OutcomeActive {
		t.Fatalf("model's new key: %+v, %v; want active", first.Outcome, err)
	}
	second, err := w.WriteModel(e.ctx, model, e.scope, writer.Input{Kind: memorykit.KindFact, Key: "r\u043ell\u03bfut\u2800plan", Content: "canary second"})
	if err != nil || second.Outcome != writer.OutcomeActive || second.Record.Key != first.Record.Key {
		t.Fatalf("model's look-alike rewrite of its own key: %+v %+q, %v; want active under %+q", second.Outcome, second.Record.Key, err, first.Record.Key)
	}
	if st := e.get(e.scope, first.Record.ID).Status; st != memorykit.StatusSuperseded {
		t.Fatalf("the model's first write is %s, want superseded", st)
	}
	active, err = e.s.List(e.ctx, storekit.ListFilter{Scope: e.scope, Statuses: []memorykit.Status{memorykit.StatusActive}, Key: "rollout plan", Limit: 10})
	if err != nil || len(active) != 1 || active[0].ID != second.Record.ID {
		t.Fatalf("active records of the model's key: %d, %v; want its second write alone", len(active), err)
	}
}
