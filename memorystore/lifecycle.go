package memorystore

import (
	"context"
	"sort"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Create implements storekit.LifecycleStore.
func (s *Store) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	const op = "memorystore.create"
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	// Copy first, so what is stored is exactly what was validated.
	in.Metadata = cloneMap(in.Metadata)
	in.Sources = append([]memorykit.Source(nil), in.Sources...)
	in, err := s.guard.CheckNew(ctx, op, in)
	if err != nil {
		return memorykit.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	return s.createLocked(op, in, s.now())
}

// createLocked stores a checked NewRecord. The caller holds s.mu.
func (s *Store) createLocked(op string, in memorykit.NewRecord, now time.Time) (memorykit.Record, error) {
	if s.purges[in.Scope] != nil {
		return memorykit.Record{}, storekit.PurgingError(op)
	}
	if in.ID != "" {
		if e := s.records[in.ID]; e != nil {
			err := memorykit.NewError(op, memorykit.ErrAlreadyExists, "id_taken")
			if e.rec.Scope == in.Scope {
				return e.rec.Clone(), err
			}
			return memorykit.Record{}, err
		}
	}
	from := stamp(in.EffectiveFrom)
	if from.IsZero() {
		from = now
	}
	until := stamp(in.EffectiveUntil)
	if !until.IsZero() && !until.After(from) {
		return memorykit.Record{}, memorykit.FieldError(op, "effective_until", "not_after_effective_from")
	}
	ak := activeKey{scope: in.Scope, kind: in.Kind, key: in.Key}
	current := s.activeEntry(ak)
	if in.Status == memorykit.StatusActive && in.Expect != nil {
		holder, version := "", int64(0)
		if current != nil {
			holder, version = current.rec.ID, current.rec.Version
		}
		if err := in.Expect.Check(op, holder, version); err != nil {
			return memorykit.Record{}, err
		}
		if o := in.Expect.KeyOwner; o != nil && s.keyGovernedLocked(in.Scope, in.Key, *o) {
			return memorykit.Record{}, memorykit.NewError(op, memorykit.ErrVersionConflict, storekit.ReasonKeyGoverned)
		}
	}
	if err := s.roomLocked(op, 1); err != nil {
		return memorykit.Record{}, err
	}
	id := in.ID
	for id == "" || s.records[id] != nil {
		id = storekit.NewRecordID(now)
	}
	e := &entry{
		rec: memorykit.Record{
			ID:             id,
			Scope:          in.Scope,
			Kind:           in.Kind,
			Key:            in.Key,
			Content:        in.Content,
			Metadata:       in.Metadata,
			Sources:        in.Sources,
			Status:         in.Status,
			Version:        1,
			ContentHash:    storekit.ContentHash(in.Content),
			EffectiveFrom:  from,
			EffectiveUntil: until,
			CreatedBy:      in.Actor,
			TouchedBy:      in.Actor,
			CreatedAt:      now,
			UpdatedAt:      now,
		},
	}
	e.rec = canonical(e.rec)
	// The record describes its create revision until it changes.
	if in.Reason != "" {
		e.trail = &trail{createReason: in.Reason}
	}
	s.records[id] = e
	s.changed(e)
	s.scopeRecordsOf(in.Scope).add(e)
	if in.Status == memorykit.StatusActive {
		if current != nil {
			current.supersede(in.Actor, in.Reason, now)
			s.sync(current)
			s.changed(current)
		}
		s.sync(e)
	}
	return e.rec.Clone(), nil
}

// keyGovernedLocked reports whether any record of scope holding the
// canonical key, under any kind and in any status, governs the key against
// owner (storekit.GovernsKeyAgainst). It is the one place memorystore
// matches records to a key for that rule (through s.scopes, filled at
// create). The caller holds s.mu.
func (s *Store) keyGovernedLocked(scope memorykit.Scope, key string, owner memorykit.Actor) bool {
	recs := s.scopes[scope]
	if recs == nil {
		return false
	}
	for e := range recs.withKey(key) {
		if storekit.GovernsKeyAgainst(e.rec, owner) {
			return true
		}
	}
	// Erased records hold the key's tombstone digest instead of the key.
	for e := range recs.withKey(s.tombstoneKey(scope, key)) {
		if e.rec.Status == memorykit.StatusErased && storekit.GovernsKeyAgainst(e.rec, owner) {
			return true
		}
	}
	return false
}

// activeEntry returns the active record holding ak, or nil. Every active
// record, and no other, is in its Scope's recall index (see sync), where
// the key's slots are the records holding it, one per kind at most.
func (s *Store) activeEntry(ak activeKey) *entry {
	x := s.indexes[ak.scope]
	if x == nil {
		return nil
	}
	for slot := range x.keys.slots(ak.key) {
		if e := x.docs[slot]; e != nil && e.rec.Kind == ak.kind {
			return e
		}
	}
	return nil
}

// canonical stores empty metadata and sources as nil, so an empty value
// has one representation.
func canonical(r memorykit.Record) memorykit.Record {
	if len(r.Metadata) == 0 {
		r.Metadata = nil
	}
	if len(r.Sources) == 0 {
		r.Sources = nil
	}
	return r
}

// record appends a revision snapshotting the record as it is now.
func (e *entry) record(action memorykit.Action, actor memorykit.Actor, reason string, now time.Time) {
	t := e.ownHistory()
	snap := e.rec.Clone()
	t.revisions = append(t.revisions, storekit.Revision{
		RecordID:    snap.ID,
		Version:     snap.Version,
		Action:      action,
		Actor:       actor,
		Reason:      reason,
		Status:      snap.Status,
		ContentHash: snap.ContentHash,
		Content:     snap.Content,
		Metadata:    snap.Metadata,
		Sources:     snap.Sources,
		At:          now,
	})
}

// touch applies a lifecycle rule the caller has checked: the record takes
// the rule's status and a new version, and the revision is recorded.
func (e *entry) touch(r storekit.LifecycleRule, actor memorykit.Actor, reason string, now time.Time) {
	e.ownHistory()
	e.rec.Status = r.Target(e.rec.Status)
	e.rec.Version++
	e.rec.TouchedBy = actor
	e.rec.UpdatedAt = now
	e.record(r.Action(), actor, reason, now)
}

// supersede retires an active record replaced by another one.
func (e *entry) supersede(actor memorykit.Actor, reason string, now time.Time) {
	e.touch(storekit.RuleSupersede, actor, reason, now)
}

// Get implements storekit.LifecycleStore.
func (s *Store) Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error) {
	const op = "memorystore.get"
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	if err := storekit.CheckScopedID(op, scope, id); err != nil {
		return memorykit.Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.lookup(scope, id)
	if e == nil {
		return memorykit.Record{}, notFound(op)
	}
	return e.rec.Clone(), nil
}

// FindActive implements storekit.LifecycleStore. The key is canonicalised
// first, so any spelling of a key finds its record.
func (s *Store) FindActive(ctx context.Context, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, error) {
	const op = "memorystore.find_active"
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	key, err := storekit.CheckActiveKey(s.guard, op, scope, kind, key)
	if err != nil {
		return memorykit.Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.activeEntry(activeKey{scope: scope, kind: kind, key: key})
	if e == nil {
		return memorykit.Record{}, notFound(op)
	}
	return e.rec.Clone(), nil
}

// List implements storekit.LifecycleStore.
func (s *Store) List(ctx context.Context, f storekit.ListFilter) ([]memorykit.Record, error) {
	const op = "memorystore.list"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	f, err := storekit.CheckList(s.guard, op, f)
	if err != nil {
		return nil, err
	}
	statuses := make(map[memorykit.Status]bool, len(f.Statuses))
	for _, st := range f.Statuses {
		statuses[st] = true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	digest := ""
	if f.Key != "" {
		digest = s.tombstoneKey(f.Scope, f.Key)
	}
	var ids []string
	for e := range s.scopes[f.Scope].all() {
		id, r := e.rec.ID, &e.rec
		switch {
		case f.AfterID != "" && id <= f.AfterID:
		case len(statuses) > 0 && !statuses[r.Status]:
		case f.Kind != "" && r.Kind != f.Kind:
		case f.Key != "" && r.Key != f.Key && (r.Status != memorykit.StatusErased || r.Key != digest):
		default:
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) > f.Limit {
		ids = ids[:f.Limit]
	}
	out := make([]memorykit.Record, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.records[id].rec.Clone())
	}
	return out, nil
}

// Activate implements storekit.LifecycleStore.
func (s *Store) Activate(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "memorystore.activate", t, storekit.RuleActivate)
}

// Reject implements storekit.LifecycleStore.
func (s *Store) Reject(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "memorystore.reject", t, storekit.RuleReject)
}

// Forget implements storekit.LifecycleStore.
func (s *Store) Forget(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "memorystore.forget", t, storekit.RuleForget)
}

// Erase implements storekit.LifecycleStore.
func (s *Store) Erase(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "memorystore.erase", t, storekit.RuleErase)
}

// begin validates a transition and finds its record under the write lock,
// checking it against rule r (expected version, starting status). On
// success the caller holds s.mu and must unlock it.
func (s *Store) begin(ctx context.Context, op string, t storekit.Transition, r storekit.LifecycleRule) (*entry, error) {
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckTransition(op, t); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if err := live(ctx, op); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	e, err := s.target(op, t, r)
	if err == nil && s.purges[t.Scope] != nil {
		err = storekit.PurgingError(op)
	}
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return e, nil
}

// target finds a transition's record and checks it against rule r. The
// caller holds s.mu (read or write).
func (s *Store) target(op string, t storekit.Transition, r storekit.LifecycleRule) (*entry, error) {
	e := s.lookup(t.Scope, t.ID)
	if e == nil {
		return nil, notFound(op)
	}
	if err := r.Check(op, t, e.rec); err != nil {
		return nil, err
	}
	return e, nil
}

func (s *Store) transition(ctx context.Context, op string, t storekit.Transition, r storekit.LifecycleRule) (memorykit.Record, error) {
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	// The Host's validator sees the reason before the lock is taken.
	if err := storekit.CheckAction(ctx, s.guard, op, r.Action(), t); err != nil {
		return memorykit.Record{}, err
	}
	e, err := s.begin(ctx, op, t, r)
	if err != nil {
		return memorykit.Record{}, err
	}
	defer s.mu.Unlock()
	now := s.now()
	switch r.Action() {
	case memorykit.ActionActivate:
		ak := activeKey{scope: e.rec.Scope, kind: e.rec.Kind, key: e.rec.Key}
		if current := s.activeEntry(ak); current != nil {
			current.supersede(t.Actor, t.Reason, now)
			s.sync(current)
			s.changed(current)
		}
	case memorykit.ActionErase:
		s.eraseLocked(e, r, t.Actor, t.Reason, now)
		return e.rec.Clone(), nil
	}
	e.touch(r, t.Actor, t.Reason, now)
	s.sync(e)
	s.changed(e)
	return e.rec.Clone(), nil
}

// scrub removes every trace of a record's content: its content, hash,
// metadata and sources, its search terms, its embeddings and embedding
// state for every profile, and the snapshots of every revision.
func (s *Store) scrub(e *entry) {
	e.ownHistory()
	e.rec.Content = ""
	e.rec.ContentHash = ""
	e.rec.Metadata = nil
	e.rec.Sources = nil
	for i := range e.trail.revisions {
		v := &e.trail.revisions[i]
		v.Content, v.ContentHash, v.Metadata, v.Sources = "", "", nil, nil
	}
	e.embeddings = nil
	for k := range s.embStates {
		if k.recordID == e.rec.ID {
			delete(s.embStates, k)
		}
	}
	for k := range s.embTokens {
		if k.recordID == e.rec.ID {
			delete(s.embTokens, k)
		}
	}
}

// Correct implements storekit.LifecycleStore. The Host's validator runs
// without the lock held; kind and key never change, so checking against
// them before locking is sound, and the version and status are checked
// again under the lock.
func (s *Store) Correct(ctx context.Context, c storekit.Correction) (memorykit.Record, error) {
	const op = "memorystore.correct"
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	if err := storekit.CheckTransition(op, c.Transition); err != nil {
		return memorykit.Record{}, err
	}
	s.mu.RLock()
	e, err := s.target(op, c.Transition, storekit.RuleCorrect)
	var kind memorykit.Kind
	var key string
	if e != nil {
		kind, key = e.rec.Kind, e.rec.Key
	}
	s.mu.RUnlock()
	if err != nil {
		return memorykit.Record{}, err
	}
	c.Metadata = cloneMap(c.Metadata)
	c.Sources = append([]memorykit.Source(nil), c.Sources...)
	if err := storekit.CheckCorrection(ctx, s.guard, op, kind, key, c); err != nil {
		return memorykit.Record{}, err
	}
	e, err = s.begin(ctx, op, c.Transition, storekit.RuleCorrect)
	if err != nil {
		return memorykit.Record{}, err
	}
	defer s.mu.Unlock()
	hash := storekit.ContentHash(c.Content)
	if e.ix != nil && e.ix.hash != hash {
		// Out of the recall index while the record still holds the text
		// it was indexed with (see unindex).
		s.unindex(e)
	}
	e.ownHistory()
	e.rec.Content = c.Content
	e.rec.ContentHash = hash
	e.rec.Sources = c.Sources
	if c.Metadata != nil {
		e.rec.Metadata = c.Metadata
	}
	e.rec = canonical(e.rec)
	e.touch(storekit.RuleCorrect, c.Actor, c.Reason, s.now())
	s.sync(e)
	s.changed(e)
	return e.rec.Clone(), nil
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Revisions implements storekit.LifecycleStore.
func (s *Store) Revisions(ctx context.Context, scope memorykit.Scope, id string) ([]storekit.Revision, error) {
	const op = "memorystore.revisions"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckScopedID(op, scope, id); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.lookup(scope, id)
	if e == nil {
		return nil, notFound(op)
	}
	hist := e.history()
	out := make([]storekit.Revision, len(hist))
	for i, v := range hist {
		out[i] = v.Clone()
	}
	return out, nil
}
