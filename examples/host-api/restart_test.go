package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestHostRestartKeepsMemory: on the default SQLite store, a memory
// written over HTTP is still there after the Host stops and a new Host
// starts on the same data directory: it reads back, search finds it, and
// its audit trail is whole.
func TestHostRestartKeepsMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // created by the Host
	onDir := backend{name: "sqlitestore", options: func(*testing.T) Options {
		return Options{DataDir: dir, TombstoneSecret: testTombstoneSecret}
	}}
	first := newEnv(t, onDir, nil)
	id := first.write(aliceToken, "apollo", "fact", "launch-window", "the launch window opens at dawn on tuesday")
	first.settle()
	if _, err := os.Stat(filepath.Join(dir, DataFile)); err != nil {
		t.Fatalf("no SQLite file in the data directory: %v", err)
	}
	first.srv.Close()
	first.close()

	second := newEnv(t, onDir, nil)
	r := second.must(http.StatusOK, aliceToken, "GET", apollo+"/memories/"+id, "")
	if r.str("memory.content") != "the launch window opens at dawn on tuesday" || r.str("memory.status") != "active" {
		t.Fatalf("memory after restart: %s", r.raw)
	}
	if ids := second.searchIDs(aliceToken, "apollo", "when does the launch window open"); !contains(ids, id) {
		t.Fatalf("search after restart found %v; want %s", ids, id)
	}
	// Writes go on from where the first Host stopped.
	second.write(aliceToken, "apollo", "fact", "launch-window", "the launch window moved to wednesday")
	if ids := second.searchIDs(aliceToken, "apollo", "launch window wednesday"); len(ids) == 0 {
		t.Fatal("search after a post-restart correction found nothing")
	}
}
