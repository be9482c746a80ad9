package memorystore

import (
	"context"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestPurgeLeavesNoKeyInTheIndex: a record purged while active leaves the
// recall index of its Scope, key included, even while other records of
// the Scope are still indexed (a purge cut short between batches).
func TestPurgeLeavesNoKeyInTheIndex(t *testing.T) {
	cfg, _ := testConfig(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p"}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}
	var ids []string
	for _, key := range []string{"jane doe secret", "other key"} {
		r, err := s.Create(context.Background(), memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: key,
			Content: "text of " + key, Status: memorykit.StatusActive, Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	s.mu.Lock()
	e := s.records[ids[0]]
	s.eraseLocked(e, storekit.LifecycleRule{}, actor, "project_closed", s.now())
	x := s.indexes[sc]
	s.mu.Unlock()
	if x == nil {
		t.Fatal("the other record's index is gone")
	}
	for k := range x.keys.all() {
		if strings.Contains(k, "jane") {
			t.Fatalf("the purged key %q is still in the index", k)
		}
	}
	for term := range x.termIDs {
		if strings.Contains(term, "jane") {
			t.Fatalf("the purged term %q is still in the index", term)
		}
	}
}
