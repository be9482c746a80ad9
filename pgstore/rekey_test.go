package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestPostgresMigratesKeysToCanonicalForm plants keys in the form the
// earlier NormalizeKey stored (invisible characters kept, lower-cased but
// not folded), rolls the schema back to version 4 and reopens it: the
// version 5 migration must re-key every such row, so the keys are found
// (and governed) under the form every lookup now uses.
func TestPostgresMigratesKeysToCanonicalForm(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	s := openStore(t, schema, clk)
	scope, _ := memorykit.ProjectScope("tenant-k", "p1")
	mk := func(kind memorykit.Kind, key string, st memorykit.Status) memorykit.Record {
		t.Helper()
		r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: kind, Key: key, Content: "text of " + key, Status: st, Actor: author})
		if err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Second)
		return r
	}
	conn := adminConn(t)
	setKey := func(id, key string) {
		t.Helper()
		if _, err := conn.Exec(ctx, renderSQL(`UPDATE {schema}.records SET key = $2 WHERE id = $1`, schema, ""), id, key); err != nil {
			t.Fatal(err)
		}
	}
	// older holds "deploy<ZWSP>region", newer the canonical key: after the
	// migration they collide and the newer stays active.
	older := mk(memorykit.KindFact, "old one", memorykit.StatusActive)
	setKey(older.ID, "deploy\u200bregion")
	newer := mk(memorykit.KindFact, "deployregion", memorykit.StatusActive)
	// A newer old-form key beside an older canonical one: the old-form
	// record wins.
	canon := mk(memorykit.KindNote, "on call", memorykit.StatusActive)
	late := mk(memorykit.KindNote, "late one", memorykit.StatusActive)
	setKey(late.ID, "on\u00a0call\u200d")
	folded := mk(memorykit.KindNote, "sharp", memorykit.StatusActive)
	setKey(folded.ID, "straße")
	gone := mk(memorykit.KindFact, "gone", memorykit.StatusActive)
	if _, err := s.Forget(ctx, storekit.Transition{Scope: scope, ID: gone.ID, Actor: author}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Erase(ctx, storekit.Transition{Scope: scope, ID: gone.ID, Actor: author}); err != nil {
		t.Fatal(err)
	}
	setKey(gone.ID, "gone\u00adkey")
	blank := mk(memorykit.KindFact, "blank", memorykit.StatusActive)
	setKey(blank.ID, "\u200b")

	// Back to schema 4: forget every later version and undo its DDL, so
	// reopening runs them all again.
	if err := MigrateDown(ctx, conn, schema, 12); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`DELETE FROM {schema}.schema_migrations WHERE version >= 5`,
		// 6: erasure
		`DROP TABLE {schema}.purges`,
		`ALTER TABLE {schema}.jobs DROP COLUMN erased_keys`,
		// 7: lease tokens
		`DROP SEQUENCE {schema}.lease_tokens`,
		`ALTER TABLE {schema}.jobs DROP COLUMN lease_token, DROP COLUMN run_ref, DROP COLUMN failures,
			DROP COLUMN reaps, DROP COLUMN hand_backs, DROP COLUMN max_reaps`,
		`ALTER TABLE {schema}.embedding_leases DROP COLUMN lease_token`,
		// 8: scope versions
		`DROP FUNCTION {schema}.bump_scope_versions() CASCADE`,
		`DROP TABLE {schema}.scope_versions`,
		// 9: scope changes (its embeddings triggers went with the
		// function above's CASCADE only for records)
		`DROP FUNCTION {schema}.bump_scope_versions_embeddings() CASCADE`,
		`DROP TABLE {schema}.scope_changes`,
		// 10 only replaced the two functions dropped above.
		// 11 only set term_df's fillfactor; running it again sets it again.
	} {
		if _, err := conn.Exec(ctx, renderSQL(stmt, schema, "")); err != nil {
			t.Fatal(err)
		}
	}
	m := openStore(t, schema, clk)

	get := func(id string) memorykit.Record {
		t.Helper()
		r, err := m.Get(ctx, scope, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := get(older.ID); r.Key != "deployregion" || r.Status != memorykit.StatusSuperseded || r.TouchedBy != migrationActor {
		t.Fatalf("older colliding record: key %+q status %s touched %v", r.Key, r.Status, r.TouchedBy)
	}
	revs, err := m.Revisions(ctx, scope, older.ID)
	if err != nil || revs[len(revs)-1].Action != memorykit.ActionSupersede || revs[len(revs)-1].Reason != rekeyReason {
		t.Fatalf("older record's last revision: %+v, %v", revs[len(revs)-1], err)
	}
	if r, err := m.FindActive(ctx, scope, memorykit.KindFact, "deploy\u200bregion"); err != nil || r.ID != newer.ID {
		t.Fatalf("FindActive(deploy<ZWSP>region) = %s, %v; want %s", r.ID, err, newer.ID)
	}
	if r, err := m.FindActive(ctx, scope, memorykit.KindNote, "on call"); err != nil || r.ID != late.ID {
		t.Fatalf("FindActive(on call) = %s, %v; want the later record %s", r.ID, err, late.ID)
	}
	if r := get(canon.ID); r.Status != memorykit.StatusSuperseded {
		t.Fatalf("older canonical record is %s, want superseded", r.Status)
	}
	if r, err := m.FindActive(ctx, scope, memorykit.KindNote, "STRASSE"); err != nil || r.ID != folded.ID || r.Key != "strasse" {
		t.Fatalf("FindActive(STRASSE) = %s %+q, %v; want %s", r.ID, r.Key, err, folded.ID)
	}
	res, err := m.Recall(ctx, storekit.RecallQuery{Scope: scope, Terms: []string{"strasse"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if err != nil || len(res.FullText) != 1 || res.FullText[0].ID != folded.ID {
		t.Fatalf("full text for the new key = %+v, %v", res.FullText, err)
	}
	// The erased record's old-form key was re-keyed, then (schema 6) replaced
	// by the tombstone digest of its canonical form.
	if r := get(gone.ID); r.Key != m.tombstoneKey(scope, "gonekey") || r.Status != memorykit.StatusErased || r.Content != "" {
		t.Fatalf("erased record: key %+q status %s", r.Key, r.Status)
	}
	if r := get(blank.ID); r.Key != "\u200b" || r.Status != memorykit.StatusActive {
		t.Fatalf("a key of invisible characters only: key %+q status %s, want it left alone", r.Key, r.Status)
	}
	// The migrated key governs the model's write like any other.
	owner := memorykit.Actor{Kind: memorykit.ActorModel, ID: "model-1"}
	_, err = m.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindDecision, Key: "Straße", Content: "x",
		Status: memorykit.StatusActive, Actor: owner, Expect: &memorykit.ActiveExpectation{None: true, KeyOwner: &owner}})
	if memorykit.ReasonCode(err) != storekit.ReasonKeyGoverned {
		t.Fatalf("model create over the migrated key: %v, want %s", err, storekit.ReasonKeyGoverned)
	}
}

// TestPostgresMigratesLookAlikeKeys plants keys in the form stored before
// look-alike characters were mapped (a Cyrillic "е", a braille blank),
// forgets migration 12 and reopens: the migration must re-key them, so a
// look-alike beside the user's key is one key with one active record, and
// the model's write to it is governed.
func TestPostgresMigratesLookAlikeKeys(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	schema := uniqueSchema(t)
	s := openStore(t, schema, clk)
	scope, _ := memorykit.ProjectScope("tenant-k", "p1")
	mk := func(kind memorykit.Kind, key string) memorykit.Record {
		t.Helper()
		r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: kind, Key: key, Content: "text of " + key, Status: memorykit.StatusActive, Actor: author})
		if err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Second)
		return r
	}
	conn := adminConn(t)
	setKey := func(id, key string) {
		t.Helper()
		if _, err := conn.Exec(ctx, renderSQL(`UPDATE {schema}.records SET key = $2 WHERE id = $1`, schema, ""), id, key); err != nil {
			t.Fatal(err)
		}
	}
	user := mk(memorykit.KindFact, "deploy region")
	spoof := mk(memorykit.KindFact, "placeholder one")
	setKey(spoof.ID, "d\u0435ploy region")
	blank := mk(memorykit.KindNote, "placeholder two")
	setKey(blank.ID, "on\u2800call")
	other := mk(memorykit.KindNote, "other")
	if err := MigrateDown(ctx, conn, schema, 12); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, renderSQL(`DELETE FROM {schema}.schema_migrations WHERE version = 12`, schema, "")); err != nil {
		t.Fatal(err)
	}
	m := openStore(t, schema, clk)

	get := func(id string) memorykit.Record {
		t.Helper()
		r, err := m.Get(ctx, scope, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The spoof was updated last, so it stays active under the one key and
	// the user's record is superseded by the migration, with a revision.
	if r := get(user.ID); r.Status != memorykit.StatusSuperseded || r.TouchedBy != migrationActor {
		t.Fatalf("older colliding record: status %s touched %v", r.Status, r.TouchedBy)
	}
	revs, err := m.Revisions(ctx, scope, user.ID)
	if err != nil || revs[len(revs)-1].Action != memorykit.ActionSupersede || revs[len(revs)-1].Reason != confusablesReason {
		t.Fatalf("older record's last revision: %+v, %v", revs[len(revs)-1], err)
	}
	if r := get(spoof.ID); r.Key != "deploy region" || r.Status != memorykit.StatusActive {
		t.Fatalf("look-alike record: key %+q status %s", r.Key, r.Status)
	}
	if r, err := m.FindActive(ctx, scope, memorykit.KindFact, "depl\u03bfy region"); err != nil || r.ID != spoof.ID {
		t.Fatalf("FindActive(Greek omicron) = %s, %v; want %s", r.ID, err, spoof.ID)
	}
	if r := get(blank.ID); r.Key != "on call" || r.Status != memorykit.StatusActive {
		t.Fatalf("braille blank key: %+q status %s", r.Key, r.Status)
	}
	if r := get(other.ID); r.Key != "other" || r.Version != other.Version {
		t.Fatalf("an ASCII key was touched: %+q version %d", r.Key, r.Version)
	}
	active, err := m.List(ctx, storekit.ListFilter{Scope: scope, Statuses: []memorykit.Status{memorykit.StatusActive}, Key: "deploy region", Limit: 10})
	if err != nil || len(active) != 1 {
		t.Fatalf("active records of the one key: %d, %v; want 1", len(active), err)
	}
	res, err := m.Recall(ctx, storekit.RecallQuery{Scope: scope, Terms: []string{"deploy"}, ExactKeys: []string{"deploy region"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if err != nil || len(res.Exact) != 1 || res.Exact[0].ID != spoof.ID {
		t.Fatalf("exact recall of the one key = %+v, %v", res.Exact, err)
	}
	owner := memorykit.Actor{Kind: memorykit.ActorModel, ID: "model-1"}
	_, err = m.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindDecision, Key: "deplοy region", Content: "x",
		Status: memorykit.StatusActive, Actor: owner, Expect: &memorykit.ActiveExpectation{None: true, KeyOwner: &owner}})
	if memorykit.ReasonCode(err) != storekit.ReasonKeyGoverned {
		t.Fatalf("model create over the migrated key: %v, want %s", err, storekit.ReasonKeyGoverned)
	}
}
