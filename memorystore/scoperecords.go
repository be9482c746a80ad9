package memorystore

import (
	"iter"

	"github.com/goagents/memorykit"
)

// scopeRecords holds every record of one Scope, whatever its status, by
// the key it holds now (its canonical key, or an erased record's tombstone
// digest). It serves both List and purges (every record of the Scope) and
// the KeyOwner rule (every record holding a key). Nearly every key is held
// by one record, so such a key maps to its entry alone; the few keys held
// by several records (other kinds, superseded versions) keep a list.
type scopeRecords struct {
	one  map[string]*entry
	more map[string][]*entry // in the order the records took the key
}

// scopeRecordsOf returns scope's records, making the set on first use. The
// caller holds s.mu for writing.
func (s *Store) scopeRecordsOf(scope memorykit.Scope) *scopeRecords {
	r := s.scopes[scope]
	if r == nil {
		r = &scopeRecords{one: make(map[string]*entry), more: make(map[string][]*entry)}
		s.scopes[scope] = r
	}
	return r
}

// add files e under its current key.
func (r *scopeRecords) add(e *entry) {
	k := e.rec.Key
	if list, ok := r.more[k]; ok {
		r.more[k] = append(list, e)
		return
	}
	if first, ok := r.one[k]; ok {
		delete(r.one, k)
		r.more[k] = []*entry{first, e}
		return
	}
	r.one[k] = e
}

// remove takes e out from under key, where add filed it.
func (r *scopeRecords) remove(e *entry, key string) {
	if r.one[key] == e {
		delete(r.one, key)
		return
	}
	list := r.more[key]
	for i, x := range list {
		if x == e {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	switch len(list) {
	case 0:
		delete(r.more, key)
	case 1:
		delete(r.more, key)
		r.one[key] = list[0]
	default:
		r.more[key] = list
	}
}

// withKey yields the records holding key.
func (r *scopeRecords) withKey(key string) iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		if e, ok := r.one[key]; ok {
			yield(e)
			return
		}
		for _, e := range r.more[key] {
			if !yield(e) {
				return
			}
		}
	}
}

// all yields every record of the Scope, in no particular order.
func (r *scopeRecords) all() iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		if r == nil {
			return
		}
		for _, e := range r.one {
			if !yield(e) {
				return
			}
		}
		for _, list := range r.more {
			for _, e := range list {
				if !yield(e) {
					return
				}
			}
		}
	}
}
