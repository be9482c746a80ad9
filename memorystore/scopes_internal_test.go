package memorystore

import (
	"context"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestEvictAndLoadScope: evicting a Scope leaves no trace of it (records,
// index, embedding state, jobs) and the other Scope untouched; loading
// its image back gives the state it had, without marking it changed.
func TestEvictAndLoadScope(t *testing.T) {
	ctx := context.Background()
	cfg, _ := testConfig(t)
	s, err := NewJournaled(cfg, Image{})
	if err != nil {
		t.Fatal(err)
	}
	a := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "a"}
	b := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "b"}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}
	for _, sc := range []memorykit.Scope{a, b} {
		if _, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: "k", Content: "teal sky",
			Status: memorykit.StatusActive, Actor: actor}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: "job-" + sc.SubjectID, Scope: sc, Payload: "p", MaxAttempts: 1, MaxReaps: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p/one", WorkerID: "w", TTL: time.Minute, Max: 10}); err != nil {
		t.Fatal(err)
	}
	s.TakeChanges()
	before := s.Dump()
	whole := s.Image()
	var imgA Image
	for _, ri := range whole.Records {
		if ri.Record.Scope == a {
			imgA.Records = append(imgA.Records, ri)
		}
	}
	for _, j := range whole.Jobs {
		if j.Job.Scope == a {
			imgA.Jobs = append(imgA.Jobs, j)
		}
	}
	if n := s.EvictScope(a); n != 1 {
		t.Fatalf("EvictScope = %d records; want 1", n)
	}
	if _, err := s.Get(ctx, a, imgA.Records[0].Record.ID); memorykit.ReasonCode(err) != "not_found" {
		t.Fatalf("Get of an evicted record: %v", err)
	}
	if _, err := s.GetJob(ctx, a, "job-a"); err == nil {
		t.Fatal("the evicted Scope's job is still there")
	}
	if len(s.embStates) != 1 || len(s.embTokens) != 1 || s.indexes[a] != nil || s.scopes[a] != nil {
		t.Fatalf("evicted state left: %d states, %d tokens, index %v", len(s.embStates), len(s.embTokens), s.indexes[a] != nil)
	}
	if n, err := s.PendingEmbeddings(ctx, "p/one"); err != nil || n != 1 {
		t.Fatalf("pending after evicting = %d, %v; want the other Scope's 1", n, err)
	}
	s.LoadScope(imgA)
	if ch := s.TakeChanges(); len(ch.Records) != 0 || len(ch.Jobs) != 0 {
		t.Fatalf("loading marked %d records and %d jobs changed", len(ch.Records), len(ch.Jobs))
	}
	if after := s.Dump(); after != before {
		t.Fatalf("state after evict and load:\n%s\nwant:\n%s", after, before)
	}
}
