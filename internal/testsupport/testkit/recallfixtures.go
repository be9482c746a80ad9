package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Actors the fixtures write and review as.
var (
	Author   = memorykit.Actor{Kind: memorykit.ActorUser, ID: "user-1"}
	Reviewer = memorykit.Actor{Kind: memorykit.ActorReviewer, ID: "reviewer-1"}
)

// Create stores an active record by Author and fails the test on error.
func Create(t testing.TB, s storekit.LifecycleStore, scope memorykit.Scope, kind memorykit.Kind, key, content string) memorykit.Record {
	t.Helper()
	return CreateWith(t, s, memorykit.NewRecord{Scope: scope, Kind: kind, Key: key, Content: content, Status: memorykit.StatusActive, Actor: Author})
}

// CreateWith stores in and fails the test on error.
func CreateWith(t testing.TB, s storekit.LifecycleStore, in memorykit.NewRecord) memorykit.Record {
	t.Helper()
	r, err := s.Create(context.Background(), in)
	if err != nil {
		t.Fatalf("create kind=%s status=%s: %v", in.Kind, in.Status, err)
	}
	return r
}

// Hidden names the records PlantHidden stores.
var Hidden = []string{
	"other_tenant", "other_project", "candidate", "rejected", "forgotten",
	"superseded", "erased", "not_yet_effective", "expired",
}

// PlantHidden stores, for each name in Hidden, one record that recall in
// scope must never return, each matching word in every channel: its key is
// word, its content holds word and the marker "hidden-<name>", and it has a
// current embedding of emb when it was ever active. It returns the records
// by name (as they were when planted). A superseded record's replacement
// is active and visible; its content holds word and "replacement".
func PlantHidden(t testing.TB, s storekit.Store, emb memorykit.Embedder, clk clock.Clock, scope memorykit.Scope, word string) map[string]memorykit.Record {
	t.Helper()
	ctx := context.Background()
	now := clk.Now()
	content := func(name string) string { return word + " is noted here hidden-" + name }
	out := make(map[string]memorykit.Record)
	other := func(name string, sc memorykit.Scope) {
		r := Create(t, s, sc, memorykit.KindFact, word, content(name))
		EmbedAll(t, s, emb, r)
		out[name] = r
	}
	otherTenant := scope
	otherTenant.TenantID += "-other"
	other("other_tenant", otherTenant)
	otherProject := scope
	otherProject.SubjectID += "-other"
	other("other_project", otherProject)

	cand := CreateWith(t, s, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: word, Content: content("candidate"), Status: memorykit.StatusCandidate, Actor: Author})
	out["candidate"] = cand
	rej := CreateWith(t, s, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: word + " rejected", Content: content("rejected"), Status: memorykit.StatusCandidate, Actor: Author})
	if _, err := s.Reject(ctx, storekit.Transition{Scope: scope, ID: rej.ID, Actor: Reviewer}); err != nil {
		t.Fatalf("reject: %v", err)
	}
	out["rejected"] = rej

	forgotten := Create(t, s, scope, memorykit.KindDecision, word, content("forgotten"))
	EmbedAll(t, s, emb, forgotten)
	if _, err := s.Forget(ctx, storekit.Transition{Scope: scope, ID: forgotten.ID, Actor: Reviewer}); err != nil {
		t.Fatalf("forget: %v", err)
	}
	out["forgotten"] = forgotten

	old := Create(t, s, scope, memorykit.KindPreference, word, content("superseded"))
	EmbedAll(t, s, emb, old)
	repl := Create(t, s, scope, memorykit.KindPreference, word, word+" replacement")
	EmbedAll(t, s, emb, repl)
	out["superseded"] = old

	erased := Create(t, s, scope, memorykit.KindProcedure, word, content("erased"))
	EmbedAll(t, s, emb, erased)
	if _, err := s.Forget(ctx, storekit.Transition{Scope: scope, ID: erased.ID, Actor: Reviewer}); err != nil {
		t.Fatalf("forget before erase: %v", err)
	}
	if _, err := s.Erase(ctx, storekit.Transition{Scope: scope, ID: erased.ID, Actor: Reviewer}); err != nil {
		t.Fatalf("erase: %v", err)
	}
	out["erased"] = erased

	future := CreateWith(t, s, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: word + " future", Content: content("not_yet_effective"),
		Status: memorykit.StatusActive, Actor: Author, EffectiveFrom: now.Add(time.Hour)})
	EmbedAll(t, s, emb, future)
	out["not_yet_effective"] = future

	expired := CreateWith(t, s, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: word + " expired", Content: content("expired"),
		Status: memorykit.StatusActive, Actor: Author, EffectiveFrom: now.Add(-2 * time.Hour), EffectiveUntil: now.Add(-time.Hour)})
	EmbedAll(t, s, emb, expired)
	out["expired"] = expired
	return out
}
