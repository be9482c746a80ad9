package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
)

// readScope reads one Scope's rows into a memorystore image and estimates
// the heap the mirror will spend on them.
func (s *Store) readScope(ctx context.Context, sc memorykit.Scope) (memorystore.Image, int64, error) {
	return s.readRecords(ctx, sc, nil)
}

// readRecords reads the Scope's rows as readScope does, or, with ids not
// nil, only the records of ids with their revisions, vectors, leases and
// tokens, and the Scope's unfinished purge (no jobs): the part of a Scope
// a create needs (see createWrite).
func (s *Store) readRecords(ctx context.Context, sc memorykit.Scope, ids []string) (memorystore.Image, int64, error) {
	var img memorystore.Image
	bytes := int64(scopeBytes)
	byID := make(map[string]int)
	args := scopeArgs(sc)
	inScope := ` JOIN records r ON r.id = x.record_id WHERE r.tenant_id = ? AND r.subject_type = ? AND r.subject_id = ?`
	recordsOf := `SELECT id, status, content_hash, trail, body FROM records WHERE tenant_id = ? AND subject_type = ? AND subject_id = ? ORDER BY id`
	if ids != nil {
		list, err := json.Marshal(ids)
		if err != nil {
			return img, 0, err
		}
		// The records are found by id; the unary + keeps SQLite from
		// walking the Scope's index instead.
		const byID = ` WHERE r.id IN (SELECT value FROM json_each(?)) AND +r.tenant_id = ? AND +r.subject_type = ? AND +r.subject_id = ?`
		inScope = ` JOIN records r ON r.id = x.record_id` + byID
		recordsOf = `SELECT r.id, r.status, r.content_hash, r.trail, r.body FROM records r` + byID + ` ORDER BY r.id`
		args = append([]any{string(list)}, args...)
	}
	var err error
	if ids == nil || len(ids) > 0 {
		err = s.readRecordRows(ctx, recordsOf, args, sc, &img, byID, &bytes, inScope)
	}
	if err == nil {
		err = s.each(ctx, `SELECT body FROM purges WHERE tenant_id = ? AND subject_type = ? AND subject_id = ?`, func(rows *sql.Rows) error {
			var body string
			if err := rows.Scan(&body); err != nil {
				return err
			}
			var p memorykit.PurgeReport
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				return err
			}
			img.Purges = append(img.Purges, p)
			return nil
		}, scopeArgs(sc)...)
	}
	if err == nil && ids == nil {
		err = s.each(ctx, `SELECT body, erased_keys FROM jobs WHERE tenant_id = ? AND subject_type = ? AND subject_id = ? ORDER BY id`, func(rows *sql.Rows) error {
			var body, keys string
			if err := rows.Scan(&body, &keys); err != nil {
				return err
			}
			var j memorystore.JobImage
			if err := json.Unmarshal([]byte(body), &j.Job); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(keys), &j.ErasedKeys); err != nil {
				return err
			}
			img.Jobs = append(img.Jobs, j)
			return nil
		}, args...)
	}
	return img, bytes, err
}

// readRecordRows reads the rows of the records recordsOf selects, and their
// revisions, vectors, leases and tokens, into img.
func (s *Store) readRecordRows(ctx context.Context, recordsOf string, args []any, sc memorykit.Scope, img *memorystore.Image, byID map[string]int, bytes *int64, inScope string) error {
	err := s.each(ctx, recordsOf, func(rows *sql.Rows) error {
		var id, status, hash, body string
		var trail int
		if err := rows.Scan(&id, &status, &hash, &trail, &body); err != nil {
			return err
		}
		r, err := decodeRecord(id, sc, status, hash, body)
		if err != nil {
			return err
		}
		byID[r.ID] = len(img.Records)
		ri := memorystore.RecordImage{Lifecycle: true, Record: r}
		if trail == 0 {
			// The one revision is the create the record describes; its
			// row is not read (the query below skips it).
			ri.Revisions = []storekit.Revision{createRevision(&ri.Record, "").Clone()}
		}
		img.Records = append(img.Records, ri)
		*bytes += recordBytes + 2*int64(len(r.Content)+len(r.Key))
		return nil
	}, args...)
	if err == nil {
		err = s.each(ctx, `SELECT x.record_id, x.body FROM revisions x`+inScope+` AND r.trail <> 0 ORDER BY x.record_id, x.seq`, func(rows *sql.Rows) error {
			var id, body string
			if err := rows.Scan(&id, &body); err != nil {
				return err
			}
			i, ok := byID[id]
			if !ok {
				return errOrphan
			}
			v, err := decodeRevision(body, &img.Records[i].Record)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(body, derivedMark) {
				*bytes += revisionBytes + int64(len(v.Content))
			}
			img.Records[i].Revisions = append(img.Records[i].Revisions, v)
			return nil
		}, args...)
	}
	if err == nil {
		err = s.each(ctx, `SELECT x.record_id, x.profile, x.content_hash, x.vector, x.at FROM embeddings x`+inScope+` ORDER BY x.record_id, x.profile`, func(rows *sql.Rows) error {
			var id, at string
			var m memorystore.EmbeddingImage
			var vec []byte
			if err := rows.Scan(&id, &m.Profile, &m.ContentHash, &vec, &at); err != nil {
				return err
			}
			t, err := time.Parse(time.RFC3339Nano, at)
			if err != nil {
				return err
			}
			m.At, m.Vector = t, decodeVector(vec)
			i, ok := byID[id]
			if !ok {
				return errOrphan
			}
			img.Records[i].Embeddings = append(img.Records[i].Embeddings, m)
			*bytes += vectorBytes + int64(len(vec))
			return nil
		}, args...)
	}
	if err == nil {
		err = s.each(ctx, `SELECT x.record_id, x.body FROM embedding_leases x`+inScope+` ORDER BY x.record_id, x.profile`, func(rows *sql.Rows) error {
			var id, body string
			if err := rows.Scan(&id, &body); err != nil {
				return err
			}
			var l memorystore.LeaseImage
			if err := json.Unmarshal([]byte(body), &l); err != nil {
				return err
			}
			i, ok := byID[id]
			if !ok {
				return errOrphan
			}
			img.Records[i].Leases = append(img.Records[i].Leases, l)
			return nil
		}, args...)
	}
	if err == nil {
		err = s.each(ctx, `SELECT x.record_id, x.profile, x.content_hash, x.token FROM embedding_tokens x`+inScope+` ORDER BY x.record_id, x.profile`, func(rows *sql.Rows) error {
			var id string
			var t memorystore.TokenImage
			if err := rows.Scan(&id, &t.Profile, &t.ContentHash, &t.Token); err != nil {
				return err
			}
			i, ok := byID[id]
			if !ok {
				return errOrphan
			}
			img.Records[i].Tokens = append(img.Records[i].Tokens, t)
			return nil
		}, args...)
	}
	return err
}

// derivedMark starts the body of a create revision that the record
// describes exactly as it is now; the rest of the body is the create's
// reason. Such a revision costs a few bytes instead of a second copy of
// the content; a JSON body always starts with '{'.
const derivedMark = "~"

// createRevision is the revision a create of r with reason wrote, as
// long as r has not changed since.
func createRevision(r *memorykit.Record, reason string) storekit.Revision {
	return storekit.Revision{
		RecordID:    r.ID,
		Version:     r.Version,
		Action:      memorykit.ActionCreate,
		Actor:       r.CreatedBy,
		Reason:      reason,
		Status:      r.Status,
		ContentHash: r.ContentHash,
		Content:     r.Content,
		Metadata:    r.Metadata,
		Sources:     r.Sources,
		At:          r.CreatedAt,
	}
}

// encodeRevision is the body of revision seq of r.
func encodeRevision(seq int, v storekit.Revision, r *memorykit.Record) (string, error) {
	if seq == 0 && v.Action == memorykit.ActionCreate {
		d := createRevision(r, v.Reason)
		if reflect.DeepEqual(v, d) {
			// Equal values encode alike: no need to encode either.
			return derivedMark + v.Reason, nil
		}
		a, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(d)
		if err != nil {
			return "", err
		}
		if string(a) == string(b) {
			return derivedMark + v.Reason, nil
		}
		return string(a), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// decodeRevision reads a body encodeRevision wrote for a revision of r.
func decodeRevision(body string, r *memorykit.Record) (storekit.Revision, error) {
	if reason, ok := strings.CutPrefix(body, derivedMark); ok {
		v := createRevision(r, reason)
		return v.Clone(), nil
	}
	var v storekit.Revision
	err := json.Unmarshal([]byte(body), &v)
	return v, err
}

// errOrphan: a row names a record the file does not hold.
var errOrphan = orphanError{}

type orphanError struct{}

func (orphanError) Error() string { return "row of a missing record" }

// each runs fn on every row of query.
func (s *Store) each(ctx context.Context, query string, fn func(*sql.Rows) error, args ...any) error {
	rows, err := s.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
