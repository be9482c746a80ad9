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

// keySlots maps each canonical key of a Scope's recall index to the slots
// of the live records holding it, ascending. Nearly every key is held by
// one live record (one per kind at most), so such a key maps to its slot
// alone and only the others keep a list.
type keySlots struct {
	one  map[string]int32
	more map[string][]int32
}

func newKeySlots(size int) keySlots {
	return keySlots{one: make(map[string]int32, size), more: make(map[string][]int32)}
}

// add files slot, higher than every slot filed before, under key.
func (k keySlots) add(key string, slot int32) {
	if list, ok := k.more[key]; ok {
		k.more[key] = append(list, slot)
		return
	}
	if first, ok := k.one[key]; ok {
		delete(k.one, key)
		k.more[key] = []int32{first, slot}
		return
	}
	k.one[key] = slot
}

// remove takes slot out from under key.
func (k keySlots) remove(key string, slot int32) {
	if s, ok := k.one[key]; ok {
		if s == slot {
			delete(k.one, key)
		}
		return
	}
	list := k.more[key]
	for i, s := range list {
		if s == slot {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	switch len(list) {
	case 0:
		delete(k.more, key)
	case 1:
		delete(k.more, key)
		k.one[key] = list[0]
	default:
		k.more[key] = list
	}
}

// slots yields the slots holding key, ascending.
func (k keySlots) slots(key string) iter.Seq[int32] {
	return func(yield func(int32) bool) {
		if s, ok := k.one[key]; ok {
			yield(s)
			return
		}
		for _, s := range k.more[key] {
			if !yield(s) {
				return
			}
		}
	}
}

// all yields every key held by a live record.
func (k keySlots) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		for key := range k.one {
			if !yield(key) {
				return
			}
		}
		for key := range k.more {
			if !yield(key) {
				return
			}
		}
	}
}
