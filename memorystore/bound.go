package memorystore

import "github.com/goagents/memorykit"

// roomLocked fails with ReasonStoreFull unless n more records fit under
// the store's bound. The caller holds s.mu for writing.
func (s *Store) roomLocked(op string, n int) error {
	if len(s.records)+n > s.maxRecords {
		return memorykit.NewError(op, memorykit.ErrUnavailable, ReasonStoreFull)
	}
	return nil
}

// roomForLocked is roomLocked for the records of items that do not exist
// yet (an item whose ID is already stored is skipped, not created).
func (s *Store) roomForLocked(op string, items []memorykit.NewRecord) error {
	n := 0
	for _, in := range items {
		if in.ID == "" || s.records[in.ID] == nil {
			n++
		}
	}
	return s.roomLocked(op, n)
}
