package memorystore

import (
	"sort"

	"github.com/goagents/memorykit"
)

// Partial mirrors: a persisting store (sqlitestore) that keeps only the
// Scopes in use in memory loads a Scope's image with LoadScope before it
// asks about that Scope and drops it with EvictScope when its memory
// budget runs out. Every rule then runs on the Scopes loaded, which is
// exact for a call about one Scope; a call across Scopes (leases, jobs)
// is exact when the caller loaded every Scope that could take part.

// LoadScope adds img (the records, jobs and unfinished purges of Scopes
// not loaded yet, as NewJournaled takes them) to a journaled Store without
// marking anything changed, except the records whose keys it brings to
// the current canonical form, as NewJournaled does. img.LeaseSeq is
// ignored: the Store's fencing tokens keep growing from where they are.
func (s *Store) LoadScope(img Image) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := append([]RecordImage(nil), img.Records...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Record.ID < recs[j].Record.ID })
	loaded := make([]*entry, 0, len(recs))
	for _, ri := range recs {
		s.restoreRecord(ri)
		loaded = append(loaded, s.records[ri.Record.ID])
		if s.journal != nil {
			for _, m := range ri.Embeddings {
				s.journal.profiles[m.Profile] = struct{}{}
			}
			for _, l := range ri.Leases {
				s.journal.profiles[l.Profile] = struct{}{}
			}
			for _, t := range ri.Tokens {
				s.journal.profiles[t.Profile] = struct{}{}
			}
		}
	}
	for _, ji := range img.Jobs {
		j := ji.Job
		s.jobs[j.ID] = &j
		if len(ji.ErasedKeys) > 0 {
			s.jobErased[j.ID] = append([]string(nil), ji.ErasedKeys...)
		}
	}
	for _, p := range img.Purges {
		rep := p
		rep.RecordIDs = append([]string{}, p.RecordIDs...)
		s.purges[p.Scope] = &rep
	}
	s.rekeyEntries(loaded)
}

// EvictScope forgets everything the Store holds about scope: its records
// with their trails, vectors, leases and tokens, its recall index, its
// jobs and its unfinished purge. Changes not yet taken with TakeChanges
// are lost, so a persisting store evicts only right after a commit. It
// returns how many records left.
func (s *Store) EvictScope(scope memorykit.Scope) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for e := range s.scopes[scope].all() {
		id := e.rec.ID
		delete(s.records, id)
		for _, set := range s.pendingIdx {
			delete(set, id)
		}
		if s.journal != nil {
			for p := range s.journal.profiles {
				k := embKey{recordID: id, profile: p}
				delete(s.embStates, k)
				delete(s.embTokens, k)
			}
		} else {
			for k := range s.embStates {
				if k.recordID == id {
					delete(s.embStates, k)
				}
			}
			for k := range s.embTokens {
				if k.recordID == id {
					delete(s.embTokens, k)
				}
			}
		}
		n++
	}
	delete(s.scopes, scope)
	delete(s.indexes, scope)
	for id, j := range s.jobs {
		if j.Scope == scope {
			delete(s.jobs, id)
			delete(s.jobErased, id)
		}
	}
	delete(s.purges, scope)
	return n
}
