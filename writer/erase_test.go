package writer_test

import (
	"context"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// TestModelWriteAfterEraseIsCandidate: once a human erased the record of
// a key, the key is not new to the model. The tombstone keeps only a keyed
// digest of the key, and the writer still finds it (ListFilter.Key matches
// the digest), so the model's write to that key waits for review.
func TestModelWriteAfterEraseIsCandidate(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		ctx := context.Background()
		clk := testkit.NewClock()
		store := be.Open(t, clk)
		az := testkit.NewAuthorizer()
		scope := testkit.Scope(t, "acme", "apollo")
		user := testkit.Principal("acme", memorykit.ActorUser, "alice")
		model := testkit.Principal("acme", memorykit.ActorModel, "agent-1")
		operator := memorykit.Actor{Kind: memorykit.ActorOperator, ID: "olga"}
		az.Grant("alice", scope, memorykit.PermWrite)
		az.Grant("agent-1", scope, memorykit.PermModelWrite)
		w, err := writer.New(writer.Config{Store: store, Authorizer: az, Events: &testkit.Sink{}, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		res, err := w.WriteExplicit(ctx, user, scope, fact("Patient Record", "the old value"))
		if err != nil {
			t.Fatal(err)
		}
		for _, act := range []func(context.Context, storekit.Transition) (memorykit.Record, error){store.Forget, store.Erase} {
			if _, err := act(ctx, storekit.Transition{Scope: scope, ID: res.Record.ID, Actor: operator, Reason: "subject_request"}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := w.WriteModel(ctx, model, scope, fact("patient record", "the model brings it back"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Outcome != writer.OutcomeCandidate || got.Record.Status != memorykit.StatusCandidate {
			t.Fatalf("model write after erase: outcome %s status %s; want a candidate", got.Outcome, got.Record.Status)
		}
		// A key that was never erased stays the model's to write.
		fresh, err := w.WriteModel(ctx, model, scope, fact("another key", "new"))
		if err != nil || fresh.Outcome != writer.OutcomeActive {
			t.Fatalf("model write to a fresh key: %+v, %v", fresh.Outcome, err)
		}
	})
}
