package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/goagents/memorykit/memorystore"
)

// CheckEveryWrite makes s call report after every write with the
// difference between its mirror and a mirror reloaded from the file (""
// when they agree).
func CheckEveryWrite(s *Store, report func(diff string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afterWrite = func() { report(s.reloadDiffLocked()) }
}

// reloadDiffLocked loads the file into a fresh mirror and compares its
// whole image with the live one's. The caller holds s.mu.
func (s *Store) reloadDiffLocked() string {
	img, err := s.load(context.Background())
	if err != nil {
		return "load: " + err.Error()
	}
	again, err := memorystore.NewJournaled(s.memCfg, img)
	if err != nil {
		return "rebuild: " + err.Error()
	}
	live, _ := json.Marshal(s.mem.Image())
	loaded, _ := json.Marshal(again.Image())
	if string(live) != string(loaded) {
		return fmt.Sprintf("live:\n%s\nreloaded:\n%s", live, loaded)
	}
	return ""
}

// Poison makes the next commit fail as a full disk would, for the
// poisoning test.
func Poison(s *Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stmts.upsertRecord.Close()
}
