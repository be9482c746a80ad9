package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestPostgresVerifyErased: the verifier finds a canary in the record, its
// revisions and a job's transcript (by table, column and row id, never the
// value), also stored in full-width form, and nowhere once it is erased.
func TestPostgresVerifyErased(t *testing.T) {
	b := setup(t)
	const canary = "Tq5canary"
	jobID := storekit.ExtractionJobID(b.scope, "run-1/turn-1")
	if _, err := b.s.EnqueueJob(b.ctx, storekit.NewJob{ID: jobID, Scope: b.scope, Payload: "said " + canary, MaxAttempts: 2, MaxReaps: 2}); err != nil {
		t.Fatal(err)
	}
	r, err := b.s.Create(b.ctx, memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindFact, Key: "k " + canary,
		Content: "full width ＴＱ５ＣＡＮＡＲＹ", Sources: []memorykit.Source{{Kind: "chat", Ref: "run-1/turn-1"}},
		Status: memorykit.StatusActive, Actor: author, Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Forget(b.ctx, storekit.Transition{Scope: b.scope, ID: r.ID, Actor: author}); err != nil {
		t.Fatal(err)
	}
	hits, err := b.s.VerifyErased(b.ctx, b.scope, strings.ToUpper(canary))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range hits {
		seen[h.Table+"."+h.Column] = true
		if strings.Contains(strings.ToLower(h.Row), "canary") {
			t.Fatalf("a hit quotes content: %+v", h)
		}
	}
	// records.content holds only the full-width form: found through NFKC.
	for _, want := range []string{"records.key", "records.content", "revisions.content", "jobs.payload"} {
		if !seen[want] {
			t.Errorf("no hit in %s: %+v", want, hits)
		}
	}
	if _, err := b.s.Erase(b.ctx, storekit.Transition{Scope: b.scope, ID: r.ID, Actor: author}); err != nil {
		t.Fatal(err)
	}
	b.clk.Add(time.Second)
	if hits, err := b.s.VerifyErased(b.ctx, b.scope, canary); err != nil || len(hits) != 0 {
		t.Fatalf("after erase: %+v, %v", hits, err)
	}
	if _, err := VerifyErased(b.ctx, b.s.pool, b.schema, b.scope, "  "); err == nil {
		t.Fatal("an empty canary was accepted")
	}
}

// TestPostgresVerifyErasedFindsEscapedText: the verifier finds canaries
// with every special character class (quotes, backslash, tab, newline, &,
// <, >, U+2028/2029, emoji, CJK, combining marks) in every
// content-bearing column while they are live, none once erased, and only
// the given Scope's rows when another tenant holds the same text
// (storetest.RunVerifierConformance).
func TestPostgresVerifyErasedFindsEscapedText(t *testing.T) {
	b := setup(t)
	storetest.RunVerifierConformance(t, b.s, func(ctx context.Context, scope memorykit.Scope, canary string) (int, error) {
		hits, err := b.s.VerifyErased(ctx, scope, canary)
		for _, h := range hits {
			if strings.Contains(h.Row, "vq") {
				t.Fatalf("a hit quotes content: %+v", h)
			}
		}
		return len(hits), err
	})
}
