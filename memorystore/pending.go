package memorystore

// The pending-embedding index.
//
// LeaseEmbeddings and PendingEmbeddings used to look at every record under
// the write lock to find the active ones lacking a current vector of a
// profile. The store now keeps, for each profile it has been asked about,
// the set of records that lack one, and keeps it in line wherever a
// record's status, content or embeddings change (sync and syncVector), so
// a lease costs time in the number of pending records, not of records.
//
// A profile's set is built by one scan the first time it is asked for.
// At most maxPendingProfiles profiles are tracked; past that, the
// callers fall back to scanning, so an unbounded number of profile names
// cannot grow the index without bound.

// maxPendingProfiles bounds how many profiles have a pending set.
const maxPendingProfiles = 8

// pendingCandidates returns the records that may need a vector of profile:
// a superset of those for which s.pending holds (callers check it). The
// caller holds s.mu for writing.
func (s *Store) pendingCandidates(profile string) []*entry {
	set := s.pendingIdx[profile]
	if set == nil {
		if len(s.pendingIdx) >= maxPendingProfiles {
			return s.allEntries()
		}
		set = make(map[string]*entry)
		for id, e := range s.records {
			if s.pending(e, profile) {
				set[id] = e
			}
		}
		if s.pendingIdx == nil {
			s.pendingIdx = make(map[string]map[string]*entry)
		}
		s.pendingIdx[profile] = set
	}
	out := make([]*entry, 0, len(set))
	for _, e := range set {
		out = append(out, e)
	}
	return out
}

// countPending is PendingEmbeddings' count. The caller holds s.mu (read
// lock suffices: it never builds a set).
func (s *Store) countPending(profile string) int {
	if set := s.pendingIdx[profile]; set != nil {
		return len(set)
	}
	n := 0
	for _, e := range s.records {
		if s.pending(e, profile) {
			n++
		}
	}
	return n
}

func (s *Store) allEntries() []*entry {
	out := make([]*entry, 0, len(s.records))
	for _, e := range s.records {
		out = append(out, e)
	}
	return out
}

// trackPending brings e's membership of every pending set in line with
// its record. The caller holds s.mu for writing.
func (s *Store) trackPending(e *entry) {
	for profile := range s.pendingIdx {
		s.trackPendingProfile(e, profile)
	}
}

// trackPendingProfile brings e's membership of profile's pending set in
// line. The caller holds s.mu for writing.
func (s *Store) trackPendingProfile(e *entry, profile string) {
	set := s.pendingIdx[profile]
	if set == nil {
		return
	}
	if s.pending(e, profile) {
		set[e.rec.ID] = e
	} else {
		delete(set, e.rec.ID)
	}
}
