package memorystore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestUntouchedCreateStoresNoRevision: a record untouched since its create
// holds no stored revision (its trail is derived from the record and, if
// the create had one, its reason), in a store that made it and in one
// restored from an image; a changed record holds its trail; and every
// trail reads the same from both stores.
func TestUntouchedCreateStoresNoRevision(t *testing.T) {
	ctx := context.Background()
	cfg, clk := testConfig(t)
	s, err := NewJournaled(cfg, Image{})
	if err != nil {
		t.Fatal(err)
	}
	sc := memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p"}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}
	create := func(key, reason string) memorykit.Record {
		r, err := s.Create(ctx, memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: key, Content: "text of " + key,
			Metadata: map[string]string{"m": key}, Sources: []memorykit.Source{{Kind: "doc", Ref: key}},
			Status: memorykit.StatusActive, Actor: actor, Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := create("plain", "")
	reasoned := create("reasoned", "user asked")
	changed := create("changed", "")
	clk.Add(time.Second)
	if _, err := s.Forget(ctx, storekit.Transition{Scope: sc, ID: changed.ID, Actor: actor, Reason: "obsolete"}); err != nil {
		t.Fatal(err)
	}
	again, err := NewJournaled(cfg, s.Image())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, again} {
		if tr := st.records[plain.ID].trail; tr != nil {
			t.Fatalf("untouched record without a reason holds a trail: %+v", tr)
		}
		if tr := st.records[reasoned.ID].trail; tr == nil || tr.revisions != nil || tr.createReason != "user asked" {
			t.Fatalf("untouched record with a reason holds %+v", tr)
		}
		if tr := st.records[changed.ID].trail; tr == nil || len(tr.revisions) != 2 {
			t.Fatalf("changed record holds %+v", tr)
		}
	}
	for _, id := range []string{plain.ID, reasoned.ID, changed.ID} {
		want, err := s.Revisions(ctx, sc, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := again.Revisions(ctx, sc, id)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("revisions of %s differ after the restore (-made +restored):\n%s", id, d)
		}
		if want[0].Action != memorykit.ActionCreate || want[0].Content == "" || want[0].Metadata["m"] == "" {
			t.Fatalf("create revision of %s: %+v", id, want[0])
		}
	}
}
