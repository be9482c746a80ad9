package sqlitestore

import (
	"reflect"
	"testing"
	"time"

	"github.com/goagents/memorykit"
)

// TestRecordBodyCarriesEveryField: a record with every field set (and
// one with nil and one with empty Metadata and Sources) reads back equal
// from its body and columns, and memorykit.Record has exactly the fields
// recordBody and the columns carry; a new field fails here until the
// encoding carries it.
func TestRecordBodyCarriesEveryField(t *testing.T) {
	carried := []string{"ID", "Scope", "Kind", "Key", "Content", "Metadata", "Sources", "Status", "Version", "ContentHash",
		"EffectiveFrom", "EffectiveUntil", "CreatedBy", "TouchedBy", "CreatedAt", "UpdatedAt"}
	rt := reflect.TypeOf(memorykit.Record{})
	var fields []string
	for i := 0; i < rt.NumField(); i++ {
		fields = append(fields, rt.Field(i).Name)
	}
	if !reflect.DeepEqual(fields, carried) {
		t.Fatalf("memorykit.Record has fields %v; recordBody carries %v", fields, carried)
	}
	at := time.Date(2026, 3, 2, 9, 30, 0, 123456000, time.UTC)
	full := memorykit.Record{ID: "mem_1", Scope: memorykit.Scope{TenantID: "t", SubjectType: memorykit.SubjectProject, SubjectID: "p"},
		Kind: memorykit.KindFact, Key: "k", Content: "c", Metadata: map[string]string{"a": "b"}, Sources: []memorykit.Source{{Kind: "doc", Ref: "r"}},
		Status: memorykit.StatusActive, Version: 3, ContentHash: "sha256:x", EffectiveFrom: at, EffectiveUntil: at.Add(time.Hour),
		CreatedBy: memorykit.Actor{Kind: memorykit.ActorUser, ID: "u"}, TouchedBy: memorykit.Actor{Kind: memorykit.ActorModel, ID: "m"},
		CreatedAt: at, UpdatedAt: at.Add(time.Minute)}
	empty := full
	empty.Metadata, empty.Sources, empty.EffectiveUntil = map[string]string{}, []memorykit.Source{}, time.Time{}
	none := full
	none.Metadata, none.Sources, none.Key = nil, nil, ""
	for _, r := range []memorykit.Record{full, empty, none} {
		body, err := encodeRecord(&r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(r.ID, r.Scope, string(r.Status), r.ContentHash, body)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("body %s reads back as\n%+v\nwant\n%+v", body, got, r)
		}
	}
}
