package pgstore

import (
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestPostgresBatchBumpsScopeVersionOnce: a CreateBatch that supersedes
// an earlier holder and stores records with their vectors runs three
// statements on the Scope's rows (the supersede UPDATE, the records COPY,
// the embeddings COPY) in one transaction, and moves the Scope's version
// by one, with one change row per record at that version; the next batch
// moves it by one again.
func TestPostgresBatchBumpsScopeVersionOnce(t *testing.T) {
	b := setup(t)
	version := func() int64 {
		t.Helper()
		v, err := b.s.scopeVersion(b.ctx, b.scope)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	changes := func() map[string]int64 {
		t.Helper()
		rows, err := b.s.pool.Query(b.ctx, b.s.q(`SELECT record_id, version FROM {schema}.scope_changes
			WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3`), b.scope.TenantID, string(b.scope.SubjectType), b.scope.SubjectID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var id string
			var v int64
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			out[id] = v
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	old := b.create(t, memorykit.KindFact, "region", "deploys go to eu-west", memorykit.StatusActive)
	v1 := version()
	item := func(key, content string) storekit.BatchItem {
		return storekit.BatchItem{
			Record:    memorykit.NewRecord{Scope: b.scope, Kind: memorykit.KindFact, Key: key, Content: content, Status: memorykit.StatusActive, Actor: author},
			Embedding: &storekit.BatchEmbedding{Profile: "p", Vector: []float32{1, 0, 0}},
		}
	}
	recs, err := b.s.CreateBatch(b.ctx, []storekit.BatchItem{item("region", "deploys go to us-east"), item("owner", "the infra team")})
	if err != nil {
		t.Fatal(err)
	}
	v2 := version()
	if v2 != v1+1 {
		t.Fatalf("the batch moved the scope version from %d to %d, want one step", v1, v2)
	}
	got := changes()
	want := map[string]int64{old.ID: v2, recs[0].ID: v2, recs[1].ID: v2}
	if len(got) != len(want) {
		t.Fatalf("change rows %v, want %v", got, want)
	}
	for id, v := range want {
		if got[id] != v {
			t.Fatalf("change rows %v, want %v", got, want)
		}
	}
	more, err := b.s.CreateBatch(b.ctx, []storekit.BatchItem{item("owner", "the platform team")})
	if err != nil {
		t.Fatal(err)
	}
	v3 := version()
	if v3 != v2+1 {
		t.Fatalf("the second batch moved the scope version from %d to %d, want one step", v2, v3)
	}
	got = changes()
	if got[recs[1].ID] != v3 || got[more[0].ID] != v3 || got[recs[0].ID] != v2 || got[old.ID] != v2 {
		t.Fatalf("change rows after the second batch: %v", got)
	}
}
