package sqlitestore

import (
	"context"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/textrule"
)

// A create does not load the Scope it writes to. What memorystore reads to
// create a record in a Scope is: the Scope's unfinished purge (a create is
// refused while one runs), the active record of the same kind and key
// (superseded, and what an expectation is checked against), and whether
// an id is taken (the Scope holding it is loaded whole, as for any call).
// So the mirror gets just that part of the Scope: its purge and its active
// records holding one of the keys written, found through the recall
// index's key tokens. The part leaves the mirror right after the commit,
// so a Scope that is only written is never held in memory.
//
// A create falls back to loading the Scope whole when the Scope is not in
// the recall index yet and holds records (it joins the index on that
// load), or when an item expects a key owner (that rule reads every
// record holding the key, in any state). The key tokens hold each active
// record's key in the canonical form that record's Scope was last loaded
// under; a change of that form must clear recall_scopes, so every Scope
// is re-keyed and re-indexed at its next whole load before a create
// relies on them again.

// partialScope is a Scope of which the mirror holds part, for one create.
type partialScope struct {
	// ids are the records of the Scope in the mirror: those loaded and
	// those the create wrote.
	ids []string
}

// createScopes gathers, per Scope written, the canonical keys of the new
// records, and which Scopes may be written without loading them.
type createScopes struct {
	order []memorykit.Scope
	keys  map[memorykit.Scope][]string
	whole map[memorykit.Scope]bool
}

func (c *createScopes) add(in memorykit.NewRecord) {
	if c.keys == nil {
		c.keys = make(map[memorykit.Scope][]string)
		c.whole = make(map[memorykit.Scope]bool)
	}
	if _, ok := c.keys[in.Scope]; !ok {
		c.order = append(c.order, in.Scope)
		c.keys[in.Scope] = nil
	}
	c.keys[in.Scope] = append(c.keys[in.Scope], textrule.NormalizeKey(in.Key))
	if in.Expect != nil && in.Expect.KeyOwner != nil {
		c.whole[in.Scope] = true
	}
}

// createWrite runs a create: it loads the Scopes holding ids whole, gives
// the mirror the part of every other Scope written that the create needs
// (or the whole Scope, see above), runs fn and commits, and drops the
// parts again.
func createWrite[T any](s *Store, op string, c createScopes, ids []string, fn func() (T, error)) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero T
	if err := s.broken(op); err != nil {
		return zero, err
	}
	need, err := s.withRecordIDs(nil, ids)()
	if err != nil {
		return zero, mapErr(op, err)
	}
	holders := make(map[memorykit.Scope]bool, len(need))
	for _, sc := range need {
		holders[sc] = true
	}
	var parts []memorykit.Scope
	defer func() { s.dropPartsLocked(parts) }()
	ctx := context.Background()
	for _, sc := range c.order {
		if _, held := s.mirror.Get(sc); held || holders[sc] || c.whole[sc] || sc.Validate() != nil {
			need = append(need, sc)
			continue
		}
		ok, err := s.loadPartLocked(ctx, sc, c.keys[sc])
		if err != nil {
			return zero, mapErr(op, err)
		}
		if !ok {
			need = append(need, sc)
			continue
		}
		parts = append(parts, sc)
	}
	if err := s.ensureLocked(op, need); err != nil {
		return zero, err
	}
	v, err := fn()
	if cerr := s.commitLocked(op, false); cerr != nil {
		return zero, cerr
	}
	s.dropPartsLocked(parts)
	parts = nil
	if s.afterWrite != nil {
		s.afterWrite()
	}
	s.evictLocked(need)
	return v, rename(err)
}

// loadPartLocked gives the mirror sc's unfinished purge and its active
// records holding one of keys, and reports false (loading nothing) when
// the Scope must be loaded whole: it holds records but is not in the
// recall index. A Scope without records joins the index in the next
// commit. The caller holds s.mu for writing.
func (s *Store) loadPartLocked(ctx context.Context, sc memorykit.Scope, keys []string) (bool, error) {
	var marked, any int
	if err := s.conn.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM recall_scopes WHERE tenant_id = ? AND subject_type = ? AND subject_id = ?),
		EXISTS (SELECT 1 FROM records WHERE tenant_id = ? AND subject_type = ? AND subject_id = ?)`,
		sc.TenantID, string(sc.SubjectType), sc.SubjectID, sc.TenantID, string(sc.SubjectType), sc.SubjectID).Scan(&marked, &any); err != nil {
		return false, err
	}
	switch {
	case marked == 0 && any != 0:
		return false, nil
	case marked == 0:
		s.pendingMarks = append(s.pendingMarks, sc)
	}
	tag := scopeTag(sc)
	want := make(map[string]bool, len(keys))
	tokens := make([]string, 0, len(keys))
	for _, k := range keys {
		if !want[k] {
			want[k] = true
			tokens = append(tokens, keyToken(tag, k))
		}
	}
	cands, err := s.tokenRows(ctx, tokens, true)
	if err != nil {
		return false, err
	}
	ids := []string{}
	for _, c := range cands {
		if c.scope == sc && c.status == string(memorykit.StatusActive) && want[c.rec.Key] {
			ids = append(ids, c.id)
		}
	}
	img, _, err := s.readRecords(ctx, sc, ids)
	if err != nil {
		return false, err
	}
	s.mem.LoadScope(img)
	for _, ri := range img.Records {
		if has := rowsOfImage(ri); has != 0 {
			s.rowsOf[ri.Record.ID] = has
		}
	}
	s.parts[sc] = &partialScope{ids: ids}
	s.indexed[sc] = true
	return true, nil
}

// dropPartsLocked takes the parts of Scopes a create loaded out of the
// mirror. The caller holds s.mu for writing.
func (s *Store) dropPartsLocked(scopes []memorykit.Scope) {
	for _, sc := range scopes {
		p := s.parts[sc]
		if p == nil {
			continue
		}
		for _, id := range p.ids {
			delete(s.rowsOf, id)
		}
		s.mem.EvictScope(sc)
		delete(s.parts, sc)
		delete(s.indexed, sc)
	}
}

// notePartWrite records that a commit wrote record id of a partly loaded
// Scope. The caller holds s.mu for writing.
func (s *Store) notePartWrite(sc memorykit.Scope, id string) {
	if p := s.parts[sc]; p != nil {
		p.ids = append(p.ids, id)
	}
}
