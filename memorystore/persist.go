package memorystore

import (
	"reflect"
	"sort"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// The journal: the seam a persisting store (sqlitestore) uses to keep a
// file in step with a Store. It holds the whole state in a Store built by
// NewJournaled and, after every write, takes the records and jobs that
// write changed with TakeChanges and commits them to its file. The rules,
// the indexes and the ranking stay memorystore's own; the journal only
// names what changed. A plain Store (New) keeps no journal and pays one nil
// check per change.

// journal collects the ids of the records and jobs changed since the last
// TakeChanges. The caller of every mark holds s.mu for writing.
type journal struct {
	records map[string]uint8
	jobs    map[string]struct{}
	// profiles holds every profile any embedding, lease or token was ever
	// recorded for, so an image looks its record's state up per profile
	// instead of scanning every record's.
	profiles map[string]struct{}
}

// What a mark says changed about a record.
const (
	// markLifecycle: the record and its revisions (and, as an erase
	// scrubs them, its embedding state too).
	markLifecycle uint8 = 1 << iota
	// markEmbeddings: its vectors, leases and fencing tokens only.
	markEmbeddings
)

// changed marks everything about e as changed.
func (s *Store) changed(e *entry) {
	if s.journal != nil {
		s.journal.records[e.rec.ID] |= markLifecycle | markEmbeddings
	}
}

// changedEmbeddings marks the embedding state of record id for profile as
// changed.
func (s *Store) changedEmbeddings(id, profile string) {
	if s.journal != nil {
		s.journal.records[id] |= markEmbeddings
		s.journal.profiles[profile] = struct{}{}
	}
}

// changedJob marks job id as changed.
func (s *Store) changedJob(id string) {
	if s.journal != nil {
		s.journal.jobs[id] = struct{}{}
	}
}

// Image is a Store's whole state, as NewJournaled takes it.
type Image struct {
	Records []RecordImage
	Jobs    []JobImage
	// Purges are the unfinished purges (see storekit.Purger), one per
	// Scope.
	Purges []memorykit.PurgeReport
	// LeaseSeq is the last fencing token issued.
	LeaseSeq int64
}

// RecordImage is one record with its audit trail and embedding state.
type RecordImage struct {
	// Lifecycle is false in a change that touched only the embedding
	// state: Record and Revisions are then left empty and must not be
	// written. It is ignored by NewJournaled.
	Lifecycle  bool
	Record     memorykit.Record
	Revisions  []storekit.Revision
	Embeddings []EmbeddingImage
	Leases     []LeaseImage
	Tokens     []TokenImage
}

// EmbeddingImage is one stored vector of a record.
type EmbeddingImage struct {
	Profile     string
	ContentHash string
	Vector      []float32
	At          time.Time
}

// LeaseImage is the lease, retry and park state of a record's embedding
// for one profile at one content hash.
type LeaseImage struct {
	Profile     string
	ContentHash string
	Attempt     int
	LeasedBy    string
	LeaseExpiry time.Time
	RetryAt     time.Time
	Parked      bool
	Reason      string
	Token       int64
}

// TokenImage is the fencing token of a record's latest embedding lease for
// one profile, and the content hash it was issued at.
type TokenImage struct {
	Profile     string
	ContentHash string
	Token       int64
}

// JobImage is one extraction job, with the key digests an erase marked on
// it while it was leased.
type JobImage struct {
	Job        storekit.Job
	ErasedKeys []string
}

// Changes is what the writes since the previous TakeChanges changed.
// Records and Jobs are sorted by id; Purges and LeaseSeq are always the
// current values.
type Changes struct {
	Records  []RecordImage
	Jobs     []JobImage
	Purges   []memorykit.PurgeReport
	LeaseSeq int64
}

// NewJournaled builds a Store holding img (as a persisting store loads it
// from its file) that keeps a journal of every change for TakeChanges. The
// image must be one a journaled Store produced: records are trusted, not
// validated again, except that their keys are brought to the current form
// of storekit.NormalizeKey: records whose keys now coincide are resolved
// as a newer write would have (the older active one superseded), and every
// record re-keyed so is in the first TakeChanges.
func NewJournaled(cfg Config, img Image) (*Store, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	recs := append([]RecordImage(nil), img.Records...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Record.ID < recs[j].Record.ID })
	for _, ri := range recs {
		s.restoreRecord(ri)
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
	s.leaseSeq = img.LeaseSeq
	j := &journal{records: make(map[string]uint8), jobs: make(map[string]struct{}), profiles: make(map[string]struct{})}
	for _, ri := range recs {
		for _, m := range ri.Embeddings {
			j.profiles[m.Profile] = struct{}{}
		}
		for _, l := range ri.Leases {
			j.profiles[l.Profile] = struct{}{}
		}
		for _, t := range ri.Tokens {
			j.profiles[t.Profile] = struct{}{}
		}
	}
	s.journal = j
	s.rekeyRestored()
	return s, nil
}

// restoreRecord adds one loaded record to every map and index, as the
// writes that made it left them.
func (s *Store) restoreRecord(ri RecordImage) {
	r := canonical(ri.Record.Clone())
	e := &entry{rec: r}
	if len(ri.Revisions) == 1 && ri.Revisions[0].Reason != "" {
		e.trail = &trail{createReason: ri.Revisions[0].Reason}
	}
	if len(ri.Revisions) != 1 || !reflect.DeepEqual(e.createRevision(), ri.Revisions[0]) {
		// Anything but a create the record still describes exactly is kept
		// as it is, even no revision at all (a derived trail would read
		// as a create).
		e.trail = &trail{revisions: make([]storekit.Revision, 0, len(ri.Revisions))}
		for _, v := range ri.Revisions {
			e.trail.revisions = append(e.trail.revisions, v.Clone())
		}
	}
	for _, m := range ri.Embeddings {
		e.embeddings = e.embeddings.put(embedding{profile: m.Profile, hash: m.ContentHash, vector: cloneVector(m.Vector), at: m.At.UnixMicro()})
	}
	for _, l := range ri.Leases {
		s.embStates[embKey{recordID: r.ID, profile: l.Profile}] = &embState{
			hash: l.ContentHash, attempt: l.Attempt, leasedBy: l.LeasedBy, leaseExpiry: l.LeaseExpiry,
			retryAt: l.RetryAt, parked: l.Parked, reason: l.Reason, token: l.Token,
		}
	}
	for _, t := range ri.Tokens {
		s.embTokens[embKey{recordID: r.ID, profile: t.Profile}] = embToken{hash: t.ContentHash, token: t.Token}
	}
	s.records[r.ID] = e
	s.scopeRecordsOf(r.Scope).add(e)
	s.sync(e)
}

// TakeChanges returns images of every record and job changed since the
// previous call (or since NewJournaled) and forgets them. It returns the
// zero Changes for a Store built by New.
func (s *Store) TakeChanges() Changes {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return Changes{}
	}
	ch := Changes{LeaseSeq: s.leaseSeq}
	ids := make([]string, 0, len(s.journal.records))
	for id := range s.journal.records {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if e := s.records[id]; e != nil {
			ch.Records = append(ch.Records, s.imageLocked(e, s.journal.records[id]&markLifecycle != 0))
		}
	}
	jobIDs := make([]string, 0, len(s.journal.jobs))
	for id := range s.journal.jobs {
		jobIDs = append(jobIDs, id)
	}
	sort.Strings(jobIDs)
	for _, id := range jobIDs {
		if j := s.jobs[id]; j != nil {
			ch.Jobs = append(ch.Jobs, JobImage{Job: *j, ErasedKeys: append([]string(nil), s.jobErased[id]...)})
		}
	}
	for _, rep := range s.purges {
		p := *rep
		p.RecordIDs = append([]string{}, rep.RecordIDs...)
		ch.Purges = append(ch.Purges, p)
	}
	sort.Slice(ch.Purges, func(i, j int) bool { return scopeLess(ch.Purges[i].Scope, ch.Purges[j].Scope) })
	clear(s.journal.records)
	clear(s.journal.jobs)
	return ch
}

func scopeLess(a, b memorykit.Scope) bool {
	if a.TenantID != b.TenantID {
		return a.TenantID < b.TenantID
	}
	if a.SubjectType != b.SubjectType {
		return a.SubjectType < b.SubjectType
	}
	return a.SubjectID < b.SubjectID
}

// imageLocked copies e; with lifecycle false only its embedding state.
// The caller holds s.mu.
func (s *Store) imageLocked(e *entry, lifecycle bool) RecordImage {
	ri := RecordImage{Lifecycle: lifecycle, Record: memorykit.Record{ID: e.rec.ID, Scope: e.rec.Scope}}
	if lifecycle {
		ri.Record = e.rec.Clone()
		hist := e.history()
		ri.Revisions = make([]storekit.Revision, len(hist))
		for i, v := range hist {
			ri.Revisions[i] = v.Clone()
		}
	}
	for i := range e.embeddings {
		m := &e.embeddings[i]
		ri.Embeddings = append(ri.Embeddings, EmbeddingImage{Profile: m.profile, ContentHash: m.hash, Vector: cloneVector(s.vectorOf(e, m)), At: m.stored()})
	}
	sort.Slice(ri.Embeddings, func(i, j int) bool { return ri.Embeddings[i].Profile < ri.Embeddings[j].Profile })
	for _, p := range sortedKeys(s.journal.profiles) {
		k := embKey{recordID: e.rec.ID, profile: p}
		if st := s.embStates[k]; st != nil {
			ri.Leases = append(ri.Leases, LeaseImage{Profile: p, ContentHash: st.hash, Attempt: st.attempt, LeasedBy: st.leasedBy,
				LeaseExpiry: st.leaseExpiry, RetryAt: st.retryAt, Parked: st.parked, Reason: st.reason, Token: st.token})
		}
		if t, ok := s.embTokens[k]; ok {
			ri.Tokens = append(ri.Tokens, TokenImage{Profile: p, ContentHash: t.hash, Token: t.token})
		}
	}
	return ri
}

// Image returns the Store's whole state, as NewJournaled takes it, sorted
// by id. A persisting store's tests compare it with the image of a Store
// reloaded from their file.
func (s *Store) Image() Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	saved := s.journal
	// imageLocked looks state up by the journal's profiles; gather every
	// profile in use for a Store that has no journal (or a stale one).
	s.journal = &journal{profiles: make(map[string]struct{})}
	for k := range s.embStates {
		s.journal.profiles[k.profile] = struct{}{}
	}
	for k := range s.embTokens {
		s.journal.profiles[k.profile] = struct{}{}
	}
	for _, e := range s.records {
		for _, m := range e.embeddings {
			s.journal.profiles[m.profile] = struct{}{}
		}
	}
	img := Image{LeaseSeq: s.leaseSeq}
	for _, id := range sortedKeys(s.records) {
		img.Records = append(img.Records, s.imageLocked(s.records[id], true))
	}
	for _, id := range sortedKeys(s.jobs) {
		img.Jobs = append(img.Jobs, JobImage{Job: *s.jobs[id], ErasedKeys: append([]string(nil), s.jobErased[id]...)})
	}
	for _, rep := range s.purges {
		p := *rep
		p.RecordIDs = append([]string{}, rep.RecordIDs...)
		img.Purges = append(img.Purges, p)
	}
	sort.Slice(img.Purges, func(i, j int) bool { return scopeLess(img.Purges[i].Scope, img.Purges[j].Scope) })
	if saved != nil {
		for p := range s.journal.profiles {
			saved.profiles[p] = struct{}{}
		}
	}
	s.journal = saved
	return img
}
