package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"math"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
)

// statements are prepared once on the store's connection.
type statements struct {
	insertRecord, updateRecord, upsertRevision      *sql.Stmt
	addRecords                                      *sql.Stmt
	deleteEmbeddings, deleteLeases, deleteTokens    *sql.Stmt
	insertEmbedding, insertLease, insertToken       *sql.Stmt
	upsertJob, deletePurges, insertPurge, upsertSeq *sql.Stmt
	// The recall index (sqlrecall.go).
	oldRecord, setRecallColumns, insertTerms, deleteTerms, insertMark *sql.Stmt
}

var statementSQL = []struct {
	dst func(*statements) **sql.Stmt
	sql string
}{
	{func(x *statements) **sql.Stmt { return &x.insertRecord }, `INSERT INTO records (id, tenant_id, subject_type, subject_id, body, status, content_hash, trail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
	{func(x *statements) **sql.Stmt { return &x.updateRecord }, `UPDATE records SET body = ?, status = ?, content_hash = ?, trail = ? WHERE id = ?`},
	{func(x *statements) **sql.Stmt { return &x.addRecords }, `INSERT INTO meta (name, value) VALUES ('records', ?)
		ON CONFLICT (name) DO UPDATE SET value = value + excluded.value`},
	{func(x *statements) **sql.Stmt { return &x.upsertRevision }, `INSERT INTO revisions (record_id, seq, body) VALUES (?, ?, ?)
		ON CONFLICT (record_id, seq) DO UPDATE SET body = excluded.body WHERE body <> excluded.body`},
	{func(x *statements) **sql.Stmt { return &x.deleteEmbeddings }, `DELETE FROM embeddings WHERE record_id = ?`},
	{func(x *statements) **sql.Stmt { return &x.deleteLeases }, `DELETE FROM embedding_leases WHERE record_id = ?`},
	{func(x *statements) **sql.Stmt { return &x.deleteTokens }, `DELETE FROM embedding_tokens WHERE record_id = ?`},
	{func(x *statements) **sql.Stmt { return &x.insertEmbedding }, `INSERT INTO embeddings (record_id, profile, content_hash, vector, at, rec)
		VALUES (?1, ?, ?, ?, ?, (SELECT rowid FROM records WHERE id = ?1))`},
	{func(x *statements) **sql.Stmt { return &x.insertLease }, `INSERT INTO embedding_leases (record_id, profile, body) VALUES (?, ?, ?)`},
	{func(x *statements) **sql.Stmt { return &x.insertToken }, `INSERT INTO embedding_tokens (record_id, profile, content_hash, token) VALUES (?, ?, ?, ?)`},
	{func(x *statements) **sql.Stmt { return &x.upsertJob }, `INSERT INTO jobs (id, tenant_id, subject_type, subject_id, state, body, erased_keys)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state, body = excluded.body, erased_keys = excluded.erased_keys`},
	{func(x *statements) **sql.Stmt { return &x.deletePurges }, `DELETE FROM purges`},
	{func(x *statements) **sql.Stmt { return &x.insertPurge }, `INSERT INTO purges (tenant_id, subject_type, subject_id, body) VALUES (?, ?, ?, ?)`},
	{func(x *statements) **sql.Stmt { return &x.oldRecord }, `SELECT rowid, status FROM records WHERE id = ?`},
	{func(x *statements) **sql.Stmt { return &x.setRecallColumns }, `UPDATE records SET updated_ns = ?, from_ns = ?, until_ns = ? WHERE rowid = ?`},
	{func(x *statements) **sql.Stmt { return &x.insertTerms }, `INSERT INTO recall_terms (rowid, tokens) VALUES (?, ?)`},
	{func(x *statements) **sql.Stmt { return &x.deleteTerms }, `DELETE FROM recall_terms WHERE rowid = ?`},
	{func(x *statements) **sql.Stmt { return &x.insertMark }, `INSERT INTO recall_scopes (tenant_id, subject_type, subject_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`},
	{func(x *statements) **sql.Stmt { return &x.upsertSeq }, `INSERT INTO meta (name, value) VALUES ('lease_seq', ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`},
}

func (s *Store) prepare(ctx context.Context) error {
	for _, st := range statementSQL {
		p, err := s.conn.PrepareContext(ctx, st.sql)
		if err != nil {
			return mapErr("sqlitestore.prepare", err)
		}
		*st.dst(&s.stmts) = p
	}
	return nil
}

func (x *statements) close() {
	for _, st := range statementSQL {
		if p := *st.dst(x); p != nil {
			_ = p.Close()
			*st.dst(x) = nil
		}
	}
}

// The tables a record may have embedding rows in, as bits of Store.rowsOf,
// in the order writeRecord deletes them.
const (
	rowEmbeddings uint8 = 1 << iota
	rowLeases
	rowTokens
)

// commitLocked writes what the mirror changed since the last commit in one
// transaction. With purged set the unfinished-purge rows are rewritten too.
// A failure poisons the store. The caller holds s.mu for writing.
func (s *Store) commitLocked(op string, purged bool) error {
	ch := s.mem.TakeChanges()
	if len(ch.Records) == 0 && len(ch.Jobs) == 0 && ch.LeaseSeq == s.leaseSeq && !purged && len(s.pendingMarks) == 0 {
		return nil
	}
	// The change is already in memory: it must reach the file whatever
	// became of the caller's context.
	ctx := context.Background()
	added, err := s.writeChanges(ctx, ch, purged)
	if err != nil {
		s.failed = ReasonPoisoned
		return memorykit.WrapError(op, memorykit.ErrUnavailable, ReasonPoisoned, mapErr(op, err))
	}
	s.leaseSeq = ch.LeaseSeq
	s.pendingMarks = s.pendingMarks[:0]
	s.records.Add(added)
	s.generation++
	s.noteWritten(ch)
	return nil
}

func (s *Store) writeChanges(ctx context.Context, ch memorystore.Changes, purged bool) (added int64, err error) {
	// BEGIN and COMMIT go straight to the one connection, which the
	// prepared statements are bound to as well.
	if _, err := s.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_, _ = s.conn.ExecContext(ctx, "ROLLBACK")
		}
	}()
	for _, sc := range s.pendingMarks {
		if _, err := s.stmts.insertMark.ExecContext(ctx, scopeArgs(sc)...); err != nil {
			return 0, err
		}
	}
	for _, ri := range ch.Records {
		n, err := s.writeRecord(ctx, ri)
		if err != nil {
			return 0, err
		}
		added += n
	}
	if added > 0 {
		if _, err := s.stmts.addRecords.ExecContext(ctx, added); err != nil {
			return 0, err
		}
	}
	for _, ji := range ch.Jobs {
		body, err := json.Marshal(ji.Job)
		if err != nil {
			return 0, err
		}
		keys, err := json.Marshal(ji.ErasedKeys)
		if err != nil {
			return 0, err
		}
		sc := ji.Job.Scope
		if _, err := s.stmts.upsertJob.ExecContext(ctx, ji.Job.ID, sc.TenantID, string(sc.SubjectType), sc.SubjectID,
			string(ji.Job.State), string(body), string(keys)); err != nil {
			return 0, err
		}
	}
	if purged {
		if _, err := s.stmts.deletePurges.ExecContext(ctx); err != nil {
			return 0, err
		}
		for _, p := range ch.Purges {
			body, err := json.Marshal(p)
			if err != nil {
				return 0, err
			}
			if _, err := s.stmts.insertPurge.ExecContext(ctx, p.Scope.TenantID, string(p.Scope.SubjectType), p.Scope.SubjectID, string(body)); err != nil {
				return 0, err
			}
		}
	}
	if ch.LeaseSeq != s.leaseSeq {
		if _, err := s.stmts.upsertSeq.ExecContext(ctx, ch.LeaseSeq); err != nil {
			return 0, err
		}
	}
	if _, err = s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, err
	}
	return added, nil
}

// writeRecord writes one record image: the record and its revisions when
// the lifecycle changed, and always its whole embedding state. It returns
// 1 when the record is new to the file.
func (s *Store) writeRecord(ctx context.Context, ri memorystore.RecordImage) (added int64, err error) {
	x := &ri.Record
	if ri.Lifecycle {
		body, err := encodeRecord(x)
		if err != nil {
			return 0, err
		}
		revs := make([]string, len(ri.Revisions))
		for i, v := range ri.Revisions {
			if revs[i], err = encodeRevision(i, v, x); err != nil {
				return 0, err
			}
		}
		trail := 1
		if len(revs) == 1 && revs[0] == derivedMark {
			trail = 0
		}
		var rowid int64
		wasIndexed := false
		res, err := s.stmts.insertRecord.ExecContext(ctx, x.ID, x.Scope.TenantID, string(x.Scope.SubjectType), x.Scope.SubjectID, body,
			string(x.Status), x.ContentHash, trail)
		if err != nil {
			return 0, err
		}
		if added, err = res.RowsAffected(); err != nil {
			return 0, err
		}
		if added == 0 {
			var old string
			if err := s.stmts.oldRecord.QueryRowContext(ctx, x.ID).Scan(&rowid, &old); err != nil {
				return 0, err
			}
			wasIndexed = old == string(memorykit.StatusActive)
			if _, err := s.stmts.updateRecord.ExecContext(ctx, body, string(x.Status), x.ContentHash, trail, x.ID); err != nil {
				return 0, err
			}
		} else if rowid, err = res.LastInsertId(); err != nil {
			return 0, err
		}
		if err := s.indexRecord(ctx, rowid, x, wasIndexed); err != nil {
			return 0, err
		}
		s.notePartWrite(x.Scope, x.ID)
		for i, body := range revs {
			if _, err := s.stmts.upsertRevision.ExecContext(ctx, x.ID, i, body); err != nil {
				return 0, err
			}
		}
	}
	had := s.rowsOf[x.ID]
	for i, p := range []*sql.Stmt{s.stmts.deleteEmbeddings, s.stmts.deleteLeases, s.stmts.deleteTokens} {
		if had&(1<<i) == 0 {
			continue
		}
		if _, err := p.ExecContext(ctx, x.ID); err != nil {
			return 0, err
		}
	}
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
	// A failed commit poisons the store, so the map may run ahead of the
	// file only on a store nobody uses any more.
	if has == 0 {
		delete(s.rowsOf, x.ID)
	} else {
		s.rowsOf[x.ID] = has
	}
	for _, m := range ri.Embeddings {
		if _, err := s.stmts.insertEmbedding.ExecContext(ctx, x.ID, m.Profile, m.ContentHash, encodeVector(m.Vector), formatTime(m.At)); err != nil {
			return 0, err
		}
	}
	for _, l := range ri.Leases {
		body, err := json.Marshal(l)
		if err != nil {
			return 0, err
		}
		if _, err := s.stmts.insertLease.ExecContext(ctx, x.ID, l.Profile, string(body)); err != nil {
			return 0, err
		}
	}
	for _, t := range ri.Tokens {
		if _, err := s.stmts.insertToken.ExecContext(ctx, x.ID, t.Profile, t.ContentHash, t.Token); err != nil {
			return 0, err
		}
	}
	return added, nil
}

// indexRecord brings a record's row in the recall index in line with it:
// an active record of an indexed Scope has its tokens there, and its
// recall columns set. wasIndexed says whether its row was active before
// this write.
func (s *Store) indexRecord(ctx context.Context, rowid int64, x *memorykit.Record, wasIndexed bool) error {
	if !s.indexed[x.Scope] {
		return nil
	}
	if wasIndexed {
		if _, err := s.stmts.deleteTerms.ExecContext(ctx, rowid); err != nil {
			return err
		}
	}
	if x.Status != memorykit.StatusActive {
		return nil
	}
	u, f, t := recallColumns(x)
	if _, err := s.stmts.setRecallColumns.ExecContext(ctx, u, f, t, rowid); err != nil {
		return err
	}
	_, err := s.stmts.insertTerms.ExecContext(ctx, rowid, recordTokens(x))
	return err
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
