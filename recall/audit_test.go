package recall_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// TestRecallDropsARecordWhoseWindowEndsDuringTheStoreCall: the store
// answers with a record that was effective when the call began, but the
// record's window ends while the store works. Recall re-checks the window
// at the time the answer arrived, drops the record and traces it as
// DroppedNotEffective; the record that stays effective is kept.
func TestRecallDropsARecordWhoseWindowEndsDuringTheStoreCall(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		var clk interface{ Add(time.Duration) }
		calls := 0
		b := setup(t, be, func(b *bundle, cfg *recall.Config) {
			clk = b.clk
			inner := cfg.Store
			cfg.Store = &testkit.FaultStore{Inner: inner, Edit: func(*storekit.RecallResult) {
				calls++
				clk.Add(300 * time.Millisecond) // the store call takes 300ms, within the deadline
			}}
		})
		closing := testkit.CreateWith(t, b.store, memorykit.NewRecord{
			Scope: b.scope, Kind: memorykit.KindFact, Key: "deploy region", Content: "eu-west-1 until the move",
			Status: memorykit.StatusActive, Actor: testkit.Author, EffectiveUntil: b.clk.Now().Add(100 * time.Millisecond),
		})
		lasting := b.add(t, memorykit.KindNote, "deploy region notes", "deploy region runbook")
		res := b.recall(t, b.req("deploy region"))
		if calls != 1 {
			t.Fatalf("store called %d times, want 1", calls)
		}
		if contains(entryIDs(res), closing.ID) {
			t.Fatalf("a record whose window ended during the store call was kept: %v", entryIDs(res))
		}
		if !contains(entryIDs(res), lasting.ID) {
			t.Fatalf("the effective record is missing: %v", entryIDs(res))
		}
		var got recall.Outcome
		for _, tr := range res.Trace.Records {
			if tr.ID == closing.ID {
				got = tr.Outcome
			}
		}
		if got != recall.DroppedNotEffective {
			t.Fatalf("closing record traced as %q, want %q", got, recall.DroppedNotEffective)
		}
	})
}

// TestRecallContainsARawEmbedderError: a non-recoverable embedder error
// whose text carries a canary fails recall closed with a
// *memorykit.Error that does not print it, and no log entry or event
// carries it.
func TestRecallContainsARawEmbedderError(t *testing.T) {
	const canary = "canary-embedder-44e0"
	emb := testkit.NewFaultEmbedder(embedder.NewLocal())
	emb.Err = errors.New("provider answered 500: " + canary)
	b := setup(t, memoryBackend(), withEmbedder(emb))
	b.add(t, memorykit.KindFact, "deploy region", "eu-west-1")
	_, err := b.eng.Recall(b.ctx, b.req("deploy region"))
	if err == nil {
		t.Fatal("recall with a failing embedder succeeded")
	}
	if _, ok := err.(*memorykit.Error); !ok {
		t.Fatalf("error %T is not contained", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Fatalf("error %q repeats the embedder's text", err)
	}
	if !errors.Is(err, emb.Err) {
		t.Fatalf("error %v lost its cause", err)
	}
	b.assertNoCanary(t, canary)
}

// TestDeniedRecallNamesNoCallerChosenProject: a recall of a project the
// principal has no grant on fails closed, and neither its log entry nor
// any event carries the project id the caller chose.
func TestDeniedRecallNamesNoCallerChosenProject(t *testing.T) {
	const canary = "canaryproj2b9d"
	b := setup(t, memoryBackend())
	req := b.req("deploy region")
	req.Scope = testkit.Scope(t, "tenant-a", canary)
	if _, err := b.eng.Recall(b.ctx, req); !errors.Is(err, memorykit.ErrForbidden) {
		t.Fatalf("recall of an ungranted project: %v", err)
	}
	if n := b.logs.FilterMessage("recall failed closed").Len(); n != 1 {
		t.Fatalf("%d failed-closed log entries, want 1; the check would be vacuous", n)
	}
	b.assertNoCanary(t, canary)
}
