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

// reloadDiffLocked loads the Scopes the mirror holds from the file into a
// fresh mirror and compares its whole image with the live one's. The
// caller holds s.mu.
func (s *Store) reloadDiffLocked() string {
	img := memorystore.Image{LeaseSeq: s.leaseSeq}
	for _, sc := range s.loadedScopes() {
		one, _, err := s.readScope(context.Background(), sc)
		if err != nil {
			return "load: " + err.Error()
		}
		img.Records = append(img.Records, one.Records...)
		img.Jobs = append(img.Jobs, one.Jobs...)
		img.Purges = append(img.Purges, one.Purges...)
	}
	var seq int64
	if err := s.conn.QueryRowContext(context.Background(), `SELECT coalesce(max(value), 0) FROM meta WHERE name = 'lease_seq'`).Scan(&seq); err != nil {
		return "lease_seq: " + err.Error()
	}
	if seq != s.leaseSeq {
		return fmt.Sprintf("lease_seq: file %d, store %d", seq, s.leaseSeq)
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
	s.stmts.insertRecord.Close()
}

// LoadedScopes is how many Scopes the mirror holds and their estimated
// bytes.
func LoadedScopes(s *Store) (int, int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mirror.Len(), s.mirror.Used()
}

// WaitForLoads waits until the Scopes Recall answered from the file are
// loaded into the mirror.
func WaitForLoads(s *Store) { s.loads.Wait() }

// NoBackgroundLoads keeps s from loading a Scope Recall answered from the
// file, so every recall of a Scope not loaded otherwise reads the file.
func NoBackgroundLoads(s *Store) { s.noBackgroundLoad = true }
