package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
)

// load reads every row into a memorystore image.
func (s *Store) load(ctx context.Context) (memorystore.Image, error) {
	const op = "sqlitestore.load"
	var img memorystore.Image
	byID := make(map[string]int)
	err := s.each(ctx, `SELECT body FROM records ORDER BY id`, func(rows *sql.Rows) error {
		var body string
		if err := rows.Scan(&body); err != nil {
			return err
		}
		var r memorykit.Record
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return err
		}
		byID[r.ID] = len(img.Records)
		img.Records = append(img.Records, memorystore.RecordImage{Lifecycle: true, Record: r})
		return nil
	})
	if err == nil {
		err = s.each(ctx, `SELECT record_id, body FROM revisions ORDER BY record_id, seq`, func(rows *sql.Rows) error {
			var id, body string
			if err := rows.Scan(&id, &body); err != nil {
				return err
			}
			var v storekit.Revision
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				return err
			}
			i, ok := byID[id]
			if !ok {
				return errOrphan
			}
			img.Records[i].Revisions = append(img.Records[i].Revisions, v)
			return nil
		})
	}
	if err == nil {
		err = s.each(ctx, `SELECT record_id, profile, content_hash, vector, at FROM embeddings ORDER BY record_id, profile`, func(rows *sql.Rows) error {
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
			return nil
		})
	}
	if err == nil {
		err = s.each(ctx, `SELECT record_id, body FROM embedding_leases ORDER BY record_id, profile`, func(rows *sql.Rows) error {
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
		})
	}
	if err == nil {
		err = s.each(ctx, `SELECT record_id, profile, content_hash, token FROM embedding_tokens ORDER BY record_id, profile`, func(rows *sql.Rows) error {
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
		})
	}
	if err == nil {
		err = s.each(ctx, `SELECT body, erased_keys FROM jobs ORDER BY id`, func(rows *sql.Rows) error {
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
		})
	}
	if err == nil {
		err = s.each(ctx, `SELECT body FROM purges ORDER BY tenant_id, subject_type, subject_id`, func(rows *sql.Rows) error {
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
		})
	}
	if err == nil {
		err = s.each(ctx, `SELECT value FROM meta WHERE name = 'lease_seq'`, func(rows *sql.Rows) error {
			return rows.Scan(&img.LeaseSeq)
		})
	}
	if err == nil {
		s.rowsOf = make(map[string]uint8)
		for _, ri := range img.Records {
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
			if has != 0 {
				s.rowsOf[ri.Record.ID] = has
			}
		}
	}
	if err != nil {
		if err == errOrphan {
			return memorystore.Image{}, memorykit.WrapError(op, memorykit.ErrIntegrity, "orphan_row", err)
		}
		if _, ok := err.(*json.SyntaxError); ok {
			return memorystore.Image{}, memorykit.WrapError(op, memorykit.ErrIntegrity, "malformed_row", err)
		}
		return memorystore.Image{}, mapErr(op, err)
	}
	return img, nil
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
