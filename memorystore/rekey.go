package memorystore

import (
	"sort"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// RekeyActor is the actor of the supersede revisions NewJournaled records
// when loaded keys that were different become one key (see rekeyRestored).
var RekeyActor = memorykit.Actor{Kind: memorykit.ActorOperator, ID: "memorystore-rekey"}

// RekeyReason is the reason of those supersede revisions.
const RekeyReason = "key_canonical_form"

// rekeyRestored brings every restored key to storekit.NormalizeKey's
// current form, so an image written before a change of that form is found
// by the keys that now canonicalise to its records. When two active
// records of one Scope and kind end up with the same key, the one updated
// last (then the greater id) stays active and the other is superseded by
// RekeyActor, with a revision, as a newer write would have done. Erased
// tombstones hold a digest, not a key, and are left alone, as is a key
// that canonicalises to nothing (no key can reach it). Every record it
// changes is marked in the journal, so the persisting store writes it
// back. The caller holds s.mu for writing, or owns s alone.
func (s *Store) rekeyRestored() {
	all := make([]*entry, 0, len(s.records))
	for _, e := range s.records {
		all = append(all, e)
	}
	s.rekeyEntries(all)
}

// rekeyEntries is rekeyRestored for the records in es (one or more whole
// Scopes just loaded). The caller holds s.mu for writing.
func (s *Store) rekeyEntries(es []*entry) {
	var todo []*entry
	for _, e := range es {
		if e.rec.Status == memorykit.StatusErased {
			continue
		}
		if k := storekit.NormalizeKey(e.rec.Key); k != e.rec.Key && k != "" {
			todo = append(todo, e)
		}
	}
	if len(todo) == 0 {
		return
	}
	// Newest first, so a record re-keyed earlier is never older than one
	// that collides with it later.
	sort.Slice(todo, func(i, j int) bool {
		a, b := todo[i].rec, todo[j].rec
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.ID > b.ID
	})
	now := s.now()
	for _, e := range todo {
		key := storekit.NormalizeKey(e.rec.Key)
		if e.rec.Status == memorykit.StatusActive {
			if holder := s.activeEntry(activeKey{scope: e.rec.Scope, kind: e.rec.Kind, key: key}); holder != nil {
				loser := e
				h := holder.rec
				if h.UpdatedAt.Before(e.rec.UpdatedAt) || h.UpdatedAt.Equal(e.rec.UpdatedAt) && h.ID < e.rec.ID {
					loser = holder
				}
				loser.supersede(RekeyActor, RekeyReason, now)
				s.sync(loser)
				s.changed(loser)
			}
		}
		if e.ix != nil {
			s.unindex(e)
		}
		s.rekeyLocked(e, key)
		s.sync(e)
		s.changed(e)
	}
}
