package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"sort"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
)

// allLoaded reports whether every Scope of need is in the mirror, and
// marks them used. The caller holds s.mu (readers share it, so marking
// use takes s.useMu).
func (s *Store) allLoaded(need []memorykit.Scope) bool {
	for _, sc := range need {
		if _, ok := s.mirror.Get(sc); !ok {
			return false
		}
	}
	s.useMu.Lock()
	defer s.useMu.Unlock()
	for _, sc := range need {
		s.mirror.Touch(sc)
	}
	return true
}

// ensureLocked loads every Scope of need the mirror does not hold. A
// Scope that is not valid is skipped (memorystore refuses a call about
// it). Loading may re-key records written under an earlier canonical key
// form, which is committed before the call goes on. The caller holds s.mu
// for writing.
func (s *Store) ensureLocked(op string, need []memorykit.Scope) error {
	for _, sc := range need {
		if _, ok := s.mirror.Touch(sc); ok {
			continue
		}
		if sc.Validate() != nil {
			continue
		}
		img, bytes, err := s.loadScope(context.Background(), sc)
		if err != nil {
			return err
		}
		s.mem.LoadScope(img)
		for _, ri := range img.Records {
			if has := rowsOfImage(ri); has != 0 {
				s.rowsOf[ri.Record.ID] = has
			}
		}
		s.mirror.Add(sc, struct{}{}, bytes, false)
		if err := s.markScopeLocked(context.Background(), sc); err != nil {
			// The Scope leaves the mirror again: no write may reach a
			// Scope whose recall index is incomplete.
			s.evictScopeLocked(sc)
			return mapErr(op, err)
		}
		if err := s.commitLocked(op, false); err != nil {
			return err
		}
	}
	return nil
}

// evictLocked drops the least recently used Scopes, except those of keep,
// until the mirror's estimate is within the budget. It runs after a
// commit, so the mirror holds no change the file does not. The caller
// holds s.mu for writing.
func (s *Store) evictLocked(keep []memorykit.Scope) {
	if !s.mirror.Over() {
		return
	}
	kept := make(map[memorykit.Scope]bool, len(keep))
	for _, sc := range keep {
		kept[sc] = true
	}
	for s.mirror.Over() {
		sc, ok := s.mirror.Oldest(func(sc memorykit.Scope) bool { return kept[sc] })
		if !ok {
			return
		}
		s.evictScopeLocked(sc)
	}
}

// evictScopeLocked drops one Scope from the mirror.
func (s *Store) evictScopeLocked(sc memorykit.Scope) {
	if _, ok := s.mirror.Get(sc); !ok {
		return
	}
	// The records' row bits leave with them (a reload sets them again).
	_ = s.each(context.Background(), `SELECT id FROM records WHERE tenant_id = ? AND subject_type = ? AND subject_id = ?`, func(rows *sql.Rows) error {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		delete(s.rowsOf, id)
		return nil
	}, sc.TenantID, string(sc.SubjectType), sc.SubjectID)
	s.mem.EvictScope(sc)
	s.mirror.Remove(sc)
	delete(s.indexed, sc)
}

// noteWritten adds the estimated bytes of what a commit wrote to the
// Scopes it wrote in (an upper bound: a rewrite counts again until the
// Scope is next loaded).
func (s *Store) noteWritten(ch memorystore.Changes) {
	for _, ri := range ch.Records {
		if _, ok := s.mirror.Get(ri.Record.Scope); !ok {
			continue
		}
		var n int64
		if ri.Lifecycle {
			n += recordBytes + 2*int64(len(ri.Record.Content)+len(ri.Record.Key))
			for _, v := range ri.Revisions[min(1, len(ri.Revisions)):] {
				n += revisionBytes + int64(len(v.Content))
			}
		}
		for _, m := range ri.Embeddings {
			n += vectorBytes + 4*int64(len(m.Vector))
		}
		s.mirror.Grow(ri.Record.Scope, n)
	}
}

// The per-item heap estimates of a loaded Scope: a record with its entry,
// maps and index share (plus twice its text, for the record and its
// index terms), a stored revision beyond the create one (plus its
// content), a vector (plus 4 bytes per dimension).
const (
	recordBytes   = 900
	revisionBytes = 256
	vectorBytes   = 96
	scopeBytes    = 4096
)

// loadScope reads one Scope's records, revisions, vectors, leases,
// tokens, jobs and unfinished purge, and estimates their heap.
func (s *Store) loadScope(ctx context.Context, sc memorykit.Scope) (memorystore.Image, int64, error) {
	const op = "sqlitestore.load"
	img, bytes, err := s.readScope(ctx, sc)
	if err != nil {
		if err == errOrphan {
			return memorystore.Image{}, 0, memorykit.WrapError(op, memorykit.ErrIntegrity, "orphan_row", err)
		}
		if _, ok := err.(*json.SyntaxError); ok {
			return memorystore.Image{}, 0, memorykit.WrapError(op, memorykit.ErrIntegrity, "malformed_row", err)
		}
		return memorystore.Image{}, 0, mapErr(op, err)
	}
	return img, bytes, nil
}

// rowsOfImage is the rowsOf bits of a loaded record.
func rowsOfImage(ri memorystore.RecordImage) uint8 {
	var has uint8
	if len(ri.Embeddings) > 0 {
		has |= rowEmbeddings
	}
	if len(ri.Leases) > 0 {
		has |= rowLeases
	}
	if len(ri.Tokens) > 0 {
		has |= rowTokens
	}
	return has
}

// scopeArgs are a Scope's three columns as query arguments.
func scopeArgs(sc memorykit.Scope) []any {
	return []any{sc.TenantID, string(sc.SubjectType), sc.SubjectID}
}

// scopeRows collects the distinct Scopes a query's (tenant_id,
// subject_type, subject_id) rows name, in order of first appearance.
func (s *Store) scopeRows(query string, args ...any) ([]memorykit.Scope, error) {
	var out []memorykit.Scope
	seen := make(map[memorykit.Scope]bool)
	err := s.each(context.Background(), query, func(rows *sql.Rows) error {
		var sc memorykit.Scope
		var st string
		if err := rows.Scan(&sc.TenantID, &st, &sc.SubjectID); err != nil {
			return err
		}
		sc.SubjectType = memorykit.SubjectType(st)
		if !seen[sc] {
			seen[sc] = true
			out = append(out, sc)
		}
		return nil
	}, args...)
	return out, err
}

// one is the Scopes function of a call about one Scope.
func one(sc memorykit.Scope) func() ([]memorykit.Scope, error) {
	return func() ([]memorykit.Scope, error) { return []memorykit.Scope{sc}, nil }
}

// withRecordIDs is the Scopes function of a create: the Scopes written,
// and those of any record already holding one of ids (so the mirror sees
// an id taken in another Scope, as memorystore would).
func (s *Store) withRecordIDs(scopes []memorykit.Scope, ids []string) func() ([]memorykit.Scope, error) {
	return func() ([]memorykit.Scope, error) {
		out := append([]memorykit.Scope(nil), scopes...)
		for _, id := range ids {
			if id == "" {
				continue
			}
			more, err := s.scopeRows(`SELECT tenant_id, subject_type, subject_id FROM records WHERE id = ?`, id)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
		return out, nil
	}
}

// ofJob is the Scopes function of a call naming a job by id: the Scope
// that holds it, plus extra.
func (s *Store) ofJob(id string, extra ...memorykit.Scope) func() ([]memorykit.Scope, error) {
	return func() ([]memorykit.Scope, error) {
		out, err := s.scopeRows(`SELECT tenant_id, subject_type, subject_id FROM jobs WHERE id = ?`, id)
		return append(extra, out...), err
	}
}

// ofQuery is the Scopes function that runs query.
func (s *Store) ofQuery(query string, args ...any) func() ([]memorykit.Scope, error) {
	return func() ([]memorykit.Scope, error) { return s.scopeRows(query, args...) }
}

// loadedScopes lists the Scopes in the mirror, sorted. The caller holds
// s.mu.
func (s *Store) loadedScopes() []memorykit.Scope {
	out := make([]memorykit.Scope, 0, s.mirror.Len())
	s.mirror.Each(func(sc memorykit.Scope, _ struct{}, _ int64) bool {
		out = append(out, sc)
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.TenantID != b.TenantID {
			return a.TenantID < b.TenantID
		}
		if a.SubjectType != b.SubjectType {
			return a.SubjectType < b.SubjectType
		}
		return a.SubjectID < b.SubjectID
	})
	return out
}
