package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/base32"
	"encoding/binary"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Recall of a Scope the mirror does not hold is answered from the file, so
// a Scope's first recall after Open (or after eviction) does not wait for
// the whole Scope to load; the Scope then loads in the background and
// later calls use the mirror. The answer is the mirror's: the same
// recallable records, the same full-text rule and weights (storekit.IDF
// over the Scope's recallable records), the same exact-key order and the
// same float64 cosine similarities and tie-breaks as memorystore.
//
// The file keeps, for every active record of an indexed Scope, one FTS5
// row (rowid = the record's rowid) of tokens: each index term and the key
// as a hash prefixed by a hash of the Scope, so a token names one term in
// one Scope and the index holds no text. Hash collisions cannot change an
// answer: every row a token finds is checked against the Scope, and exact
// keys against the record's key.

// tokenEncoding writes hashes with letters and digits only, which FTS5's
// ascii tokenizer keeps as one token.
var tokenEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// hash64 is FNV-1a over the parts, each followed by a zero byte.
func hash64(parts ...string) []byte {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// scopeTag is the prefix of every token of a Scope.
func scopeTag(sc memorykit.Scope) string {
	return strings.ToLower(tokenEncoding.EncodeToString(hash64(sc.TenantID, string(sc.SubjectType), sc.SubjectID))[:12])
}

// termToken is the token of an index term in the Scope of tag; keyToken
// that of an exact key.
func termToken(tag, term string) string {
	return tag + strings.ToLower(tokenEncoding.EncodeToString(hash64("t", term)))
}

func keyToken(tag, key string) string {
	return tag + strings.ToLower(tokenEncoding.EncodeToString(hash64("k", key)))
}

// recordTokens is the FTS5 document of an active record.
func recordTokens(r *memorykit.Record) string {
	tag := scopeTag(r.Scope)
	terms := storekit.IndexTerms(r.Key, r.Content)
	var b strings.Builder
	b.Grow((len(terms) + 1) * 26)
	for _, t := range terms {
		b.WriteString(termToken(tag, t))
		b.WriteByte(' ')
	}
	if r.Key != "" {
		b.WriteString(keyToken(tag, r.Key))
	}
	return b.String()
}

// unixNanos is t in Unix nanoseconds, clamped to the int64 range.
func unixNanos(t time.Time) int64 {
	switch {
	case t.Before(minNanoTime):
		return math.MinInt64
	case t.After(maxNanoTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minNanoTime = time.Unix(0, math.MinInt64)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

// boundNanos is a bound of the effective window as a column value: NULL
// when open (the zero time).
func boundNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: unixNanos(t), Valid: true}
}

// recallColumns are the updated_ns, from_ns and until_ns of r.
func recallColumns(r *memorykit.Record) (updated int64, from, until sql.NullInt64) {
	return unixNanos(r.UpdatedAt), boundNanos(r.EffectiveFrom), boundNanos(r.EffectiveUntil)
}

// markScopeLocked makes sure the file's recall index holds sc (a Scope
// just loaded into the mirror) and notes it in s.indexed, so every later
// write keeps it. A Scope written before the index existed gets its rows
// now, in one transaction with its mark; an empty one is marked in the
// next commit. The caller holds s.mu for writing.
func (s *Store) markScopeLocked(ctx context.Context, sc memorykit.Scope) error {
	var marked int
	if err := s.conn.QueryRowContext(ctx, `SELECT count(*) FROM recall_scopes WHERE tenant_id = ? AND subject_type = ? AND subject_id = ?`, scopeArgs(sc)...).Scan(&marked); err != nil {
		return err
	}
	if marked > 0 {
		s.indexed[sc] = true
		return nil
	}
	type row struct {
		rowid int64
		rec   memorykit.Record
	}
	var active []row
	err := s.each(ctx, `SELECT rowid, id, content_hash, body FROM records WHERE tenant_id = ? AND subject_type = ? AND subject_id = ? AND status = 'active'`, func(rows *sql.Rows) error {
		var rowid int64
		var id, hash, body string
		if err := rows.Scan(&rowid, &id, &hash, &body); err != nil {
			return err
		}
		r, err := decodeRecord(id, sc, string(memorykit.StatusActive), hash, body)
		if err != nil {
			return err
		}
		active = append(active, row{rowid, r})
		return nil
	}, scopeArgs(sc)...)
	if err != nil {
		return err
	}
	if len(active) == 0 {
		s.pendingMarks = append(s.pendingMarks, sc)
		s.indexed[sc] = true
		return nil
	}
	if _, err := s.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	err = func() error {
		for _, a := range active {
			u, f, t := recallColumns(&a.rec)
			if _, err := s.stmts.setRecallColumns.ExecContext(ctx, u, f, t, a.rowid); err != nil {
				return err
			}
			if _, err := s.stmts.insertTerms.ExecContext(ctx, a.rowid, recordTokens(&a.rec)); err != nil {
				return err
			}
		}
		if _, err := s.stmts.insertMark.ExecContext(ctx, scopeArgs(sc)...); err != nil {
			return err
		}
		_, err := s.conn.ExecContext(ctx, "COMMIT")
		return err
	}()
	if err != nil {
		_, _ = s.conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	s.indexed[sc] = true
	return nil
}

// sqlRecall answers q from the file when its Scope is indexed there; ok
// is false when it is not (the caller then loads the Scope). The caller
// holds s.mu shared, and q has passed the mirror's checks.
func (s *Store) sqlRecall(ctx context.Context, q storekit.RecallQuery) (res storekit.RecallResult, ok bool, err error) {
	s.sqlMu.Lock()
	defer s.sqlMu.Unlock()
	sc := q.Scope
	var marked int
	if err := s.conn.QueryRowContext(ctx, `SELECT count(*) FROM recall_scopes WHERE tenant_id = ? AND subject_type = ? AND subject_id = ?`, scopeArgs(sc)...).Scan(&marked); err != nil {
		return res, false, err
	}
	if marked == 0 {
		return res, false, nil
	}
	// memorystore reads its clock in UTC microseconds.
	now := unixNanos(s.memCfg.Clock.Now().UTC().Truncate(time.Microsecond))
	live := func(r *candidate) bool {
		return r.scope == sc && r.status == string(memorykit.StatusActive) && (!r.from.Valid || r.from.Int64 <= now) &&
			(!r.until.Valid || now < r.until.Int64)
	}
	tag := scopeTag(sc)
	bodies := make(map[string]*candidate)

	// Exact keys, newest first.
	if len(q.ExactKeys) > 0 {
		seen := make(map[string]bool, len(q.ExactKeys))
		var found []*candidate
		for _, k := range q.ExactKeys {
			if seen[k] {
				continue
			}
			seen[k] = true
			cands, err := s.tokenRows(ctx, []string{keyToken(tag, k)}, true)
			if err != nil {
				return res, false, err
			}
			for _, c := range cands {
				if live(c) && c.rec.Key == k {
					found = append(found, c)
					bodies[c.id] = c
				}
			}
		}
		sort.Slice(found, func(i, j int) bool {
			a, b := found[i], found[j]
			if a.updated != b.updated {
				return a.updated > b.updated
			}
			return a.id < b.id
		})
		found = found[:min(len(found), q.ExactLimit)]
		res.Exact = make([]storekit.Hit, len(found))
		for i, c := range found {
			res.Exact[i] = storekit.Hit{ID: c.id, Rank: i + 1, Score: 1}
		}
	}

	// Full text: matched terms and summed IDF, in query-term order.
	var uniq []string
	seen := make(map[string]bool, len(q.Terms))
	for _, t := range q.Terms {
		if t != "" && !seen[t] {
			seen[t] = true
			uniq = append(uniq, t)
		}
	}
	if len(uniq) > 0 {
		var n int
		if err := s.conn.QueryRowContext(ctx, `SELECT count(*) FROM records WHERE tenant_id = ? AND subject_type = ? AND subject_id = ?
			AND status = 'active' AND (from_ns IS NULL OR from_ns <= ?) AND (until_ns IS NULL OR until_ns > ?)`, sc.TenantID, string(sc.SubjectType), sc.SubjectID, now, now).Scan(&n); err != nil {
			return res, false, err
		}
		if n > 0 {
			lists := make([][]*candidate, len(uniq))
			for i, t := range uniq {
				cands, err := s.tokenRows(ctx, []string{termToken(tag, t)}, false)
				if err != nil {
					return res, false, err
				}
				for _, c := range cands {
					if live(c) {
						lists[i] = append(lists[i], c)
					}
				}
			}
			type acc struct {
				c   *candidate
				m   int
				sum float64
			}
			byID := make(map[string]*acc)
			var order []*acc
			for _, l := range lists {
				idf := storekit.IDF(n, len(l))
				for _, c := range l {
					a := byID[c.id]
					if a == nil {
						a = &acc{c: c}
						byID[c.id] = a
						order = append(order, a)
					}
					a.m++
					a.sum += idf
				}
			}
			cands := make([]storekit.FullTextCandidate, len(order))
			for i, a := range order {
				cands[i] = storekit.FullTextCandidate{ID: a.c.id, Matched: a.m, Weight: storekit.RoundWeight(a.sum), UpdatedAt: time.Unix(0, a.c.updated).UTC()}
			}
			kept, below := storekit.FullTextRule(cands, q.FullTextLimit)
			res.FullText, res.FullTextBelow = storekit.FullTextHits(kept), storekit.FullTextHits(below)
			for _, h := range res.FullText {
				bodies[h.ID] = byID[h.ID].c
			}
		}
	}

	if q.Vector != nil {
		hits, hitRows, err := s.sqlVectorHits(ctx, q, now)
		if err != nil {
			return res, false, err
		}
		res.Vector = hits
		for id, c := range hitRows {
			bodies[id] = c
		}
	}

	res.Records = make(map[string]memorykit.Record, len(bodies))
	for _, hits := range [][]storekit.Hit{res.Exact, res.FullText, res.Vector} {
		for _, h := range hits {
			c := bodies[h.ID]
			if !c.decoded {
				if err := s.decodeCandidate(ctx, c); err != nil {
					return res, false, err
				}
			}
			res.Records[h.ID] = c.rec
		}
	}
	return res, true, nil
}

// candidate is a record a token or the vector scan found, with what
// recallability and ranking read; rec is filled when it is decoded.
type candidate struct {
	rowid       int64
	id, status  string
	scope       memorykit.Scope
	updated     int64
	from, until sql.NullInt64
	body, hash  string
	decoded     bool
	rec         memorykit.Record
}

// tokenRows are the records the index lists under any of tokens, each
// once; with decode set their bodies are decoded (exact keys compare the
// record's key).
func (s *Store) tokenRows(ctx context.Context, tokens []string, decode bool) ([]*candidate, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	var out []*candidate
	body := "''"
	if decode {
		body = "r.body"
	}
	err := s.each(ctx, `SELECT r.rowid, r.id, r.tenant_id, r.subject_type, r.subject_id, r.status, r.content_hash, r.updated_ns, r.from_ns, r.until_ns, `+body+`
		FROM records r WHERE r.rowid IN (SELECT rowid FROM recall_terms WHERE recall_terms MATCH ?)`, func(rows *sql.Rows) error {
		var c candidate
		var st string
		if err := rows.Scan(&c.rowid, &c.id, &c.scope.TenantID, &st, &c.scope.SubjectID, &c.status, &c.hash, &c.updated, &c.from, &c.until, &c.body); err != nil {
			return err
		}
		c.scope.SubjectType = memorykit.SubjectType(st)
		out = append(out, &c)
		return nil
	}, `"`+strings.Join(tokens, `" OR "`)+`"`)
	if err != nil || !decode {
		return out, err
	}
	for _, c := range out {
		if err := s.decodeCandidate(ctx, c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeCandidate decodes c's record from its body.
func (s *Store) decodeCandidate(ctx context.Context, c *candidate) error {
	if c.body == "" {
		if err := s.conn.QueryRowContext(ctx, `SELECT body FROM records WHERE rowid = ?`, c.rowid).Scan(&c.body); err != nil {
			return err
		}
	}
	r, err := decodeRecord(c.id, c.scope, c.status, c.hash, c.body)
	if err != nil {
		return err
	}
	c.rec, c.decoded = r, true
	return nil
}

// sqlVectorHits ranks the Scope's current vectors of q's profile and
// dimension as memorystore's exact float64 scan does. The scan reads only
// the recall columns' index of records and the embeddings found through
// their record's row number (embeddings.rec), never a record's row: a
// record's ID, update time and content hash are read afterwards for the
// best-scoring vectors only, best first, until the limit is filled and
// the next score is lower than the last kept (so ties at the cut are all
// read and broken by recency, then ID). A vector whose record changed
// content since it was computed (its hash differs) is not current and is
// skipped there, as is a row whose record number no longer names it.
func (s *Store) sqlVectorHits(ctx context.Context, q storekit.RecallQuery, now int64) ([]storekit.Hit, map[string]*candidate, error) {
	qn := storekit.VectorNorm(q.Vector)
	if qn == 0 || q.VectorLimit <= 0 {
		return nil, nil, nil
	}
	type scored struct {
		erow  int64
		score float64
		c     *candidate
	}
	var all []scored
	sc := q.Scope
	err := s.each(ctx, `SELECT e.rowid, e.vector FROM records r INDEXED BY records_recall
		JOIN embeddings e ON e.rec = r.rowid AND e.profile = ?
		WHERE r.tenant_id = ? AND r.subject_type = ? AND r.subject_id = ? AND r.status = 'active'
			AND (r.from_ns IS NULL OR r.from_ns <= ?) AND (r.until_ns IS NULL OR r.until_ns > ?)
			AND length(e.vector) = ?`, func(rows *sql.Rows) error {
		var erow int64
		var vec sql.RawBytes
		if err := rows.Scan(&erow, &vec); err != nil {
			return err
		}
		if len(vec) != 4*len(q.Vector) {
			return nil
		}
		// The sums run in the order storekit.VectorNorm and memorystore's
		// scan use, so the score is the same float64.
		d, vv := 0.0, 0.0
		for i, x := range q.Vector {
			f := float64(math.Float32frombits(binary.LittleEndian.Uint32(vec[4*i:])))
			d += float64(x) * f
			vv += f * f
		}
		if vv == 0 {
			return nil
		}
		all = append(all, scored{erow: erow, score: d / (qn * math.Sqrt(vv))})
		return nil
	}, q.Profile, sc.TenantID, string(sc.SubjectType), sc.SubjectID, now, now, 4*len(q.Vector))
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].score > all[j].score })
	var kept []scored
	for next := 0; next < len(all); {
		if len(kept) >= q.VectorLimit && all[next].score < kept[q.VectorLimit-1].score {
			break
		}
		batch := all[next:min(len(all), next+max(q.VectorLimit-len(kept), 0)+16)]
		next += len(batch)
		erows := make([]any, len(batch))
		for i, b := range batch {
			erows[i] = b.erow
		}
		found, err := s.currentVectors(ctx, sc, erows)
		if err != nil {
			return nil, nil, err
		}
		for _, b := range batch {
			if c := found[b.erow]; c != nil {
				b.c = c
				kept = append(kept, b)
			}
		}
	}
	sort.Slice(kept, func(i, j int) bool {
		a, b := kept[i], kept[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.c.updated != b.c.updated {
			return a.c.updated > b.c.updated
		}
		return a.c.id < b.c.id
	})
	kept = kept[:min(len(kept), q.VectorLimit)]
	if len(kept) == 0 {
		return nil, nil, nil
	}
	hits := make([]storekit.Hit, len(kept))
	rows := make(map[string]*candidate, len(kept))
	for i, a := range kept {
		hits[i] = storekit.Hit{ID: a.c.id, Rank: i + 1, Score: a.score}
		rows[a.c.id] = a.c
	}
	return hits, rows, nil
}

// currentVectors reads, for the embedding rows erows, the record each
// belongs to, keyed by embedding row, when the row is current: its record
// number names the record it was written for and the record's content
// hash is the one the vector was computed from.
func (s *Store) currentVectors(ctx context.Context, sc memorykit.Scope, erows []any) (map[int64]*candidate, error) {
	out := make(map[int64]*candidate, len(erows))
	if len(erows) == 0 {
		return out, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(erows)), ",")
	err := s.each(ctx, `SELECT e.rowid, r.rowid, r.id, r.status, r.content_hash, r.updated_ns FROM embeddings e
		JOIN records r ON r.rowid = e.rec AND r.id = e.record_id AND r.content_hash = e.content_hash
		WHERE e.rowid IN (`+marks+`)`, func(rows *sql.Rows) error {
		var erow int64
		c := &candidate{scope: sc}
		if err := rows.Scan(&erow, &c.rowid, &c.id, &c.status, &c.hash, &c.updated); err != nil {
			return err
		}
		out[erow] = c
		return nil
	}, erows...)
	return out, err
}
