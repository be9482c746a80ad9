package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// TestReopenRekeysLookAlikeKeys plants a key in the form stored before
// look-alike characters were mapped (a Cyrillic "е" beside the user's
// "deploy region") straight into the file and reopens it: the mirror must
// re-key it, supersede the older of the two active records with a
// revision, and write both back, so a second reopen finds the same state
// and the model's write to the key is governed.
func TestReopenRekeysLookAlikeKeys(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	clk := storetest.NewClock()
	s := openAt(t, path, clk, sqlitestore.SyncNormal)
	scope := storetest.Scope(t, "tenant-a", "project-1")
	mk := func(key string) memorykit.Record {
		t.Helper()
		r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: key, Content: "text of " + key,
			Status: memorykit.StatusActive, Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Second)
		return r
	}
	user := mk("deploy region")
	spoof := mk("placeholder")
	other := mk("other")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE records SET body = json_set(body, '$.y', ?) WHERE id = ?`, "d\u0435ploy region", spoof.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	check := func(m interface {
		Get(context.Context, memorykit.Scope, string) (memorykit.Record, error)
		Revisions(context.Context, memorykit.Scope, string) ([]storekit.Revision, error)
		FindActive(context.Context, memorykit.Scope, memorykit.Kind, string) (memorykit.Record, error)
	}) {
		t.Helper()
		u, err := m.Get(ctx, scope, user.ID)
		if err != nil || u.Status != memorykit.StatusSuperseded || u.TouchedBy != memorystore.RekeyActor {
			t.Fatalf("older colliding record: %s touched %v, %v", u.Status, u.TouchedBy, err)
		}
		revs, err := m.Revisions(ctx, scope, user.ID)
		if err != nil || len(revs) != 2 || revs[1].Action != memorykit.ActionSupersede || revs[1].Reason != memorystore.RekeyReason {
			t.Fatalf("older record's revisions: %+v, %v", revs, err)
		}
		if r, err := m.FindActive(ctx, scope, memorykit.KindFact, "depl\u03bfy region"); err != nil || r.ID != spoof.ID || r.Key != "deploy region" {
			t.Fatalf("FindActive(Greek omicron) = %s %+q, %v; want %s", r.ID, r.Key, err, spoof.ID)
		}
		if r, err := m.Get(ctx, scope, other.ID); err != nil || r.Version != other.Version {
			t.Fatalf("an untouched key changed: version %d, %v", r.Version, err)
		}
	}
	// The re-keying reaches the file when the Scope is first loaded (by
	// check's first call), before that call is answered.
	first := openAt(t, path, clk, sqlitestore.SyncNormal)
	check(first)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// The file's rows hold the new key and status.
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var key, status string
	if err := db.QueryRow(`SELECT json_extract(body, '$.y') FROM records WHERE id = ?`, spoof.ID).Scan(&key); err != nil || key != "deploy region" {
		t.Fatalf("file key of the look-alike record = %+q, %v", key, err)
	}
	if err := db.QueryRow(`SELECT status FROM records WHERE id = ?`, user.ID).Scan(&status); err != nil || status != string(memorykit.StatusSuperseded) {
		t.Fatalf("file status of the older record = %q, %v", status, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again := openAt(t, path, clk, sqlitestore.SyncNormal)
	check(again)
	res, err := again.Recall(ctx, storekit.RecallQuery{Scope: scope, ExactKeys: []string{"deploy region"}, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
	if err != nil || len(res.Exact) != 1 || res.Exact[0].ID != spoof.ID {
		t.Fatalf("exact recall of the one key = %+v, %v", res.Exact, err)
	}
	owner := memorykit.Actor{Kind: memorykit.ActorModel, ID: "model-1"}
	_, err = again.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindDecision, Key: "deploy reg\u0131on", Content: "x",
		Status: memorykit.StatusActive, Actor: owner, Expect: &memorykit.ActiveExpectation{None: true, KeyOwner: &owner}})
	if memorykit.ReasonCode(err) != storekit.ReasonKeyGoverned {
		t.Fatalf("model create over the re-keyed key: %v, want %s", err, storekit.ReasonKeyGoverned)
	}
	before := mirrorDump(t, again)
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	// A third open changes nothing.
	third := openAt(t, path, clk, sqlitestore.SyncNormal)
	check(third)
	if after := mirrorDump(t, third); after != before {
		t.Fatalf("state differs after reopening again:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
