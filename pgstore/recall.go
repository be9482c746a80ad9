package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"

	"github.com/goagents/memorykit"
)

// The recall statement runs all three channels at once, so recall costs
// one round trip and every channel sees the same snapshot.
//
// Parameters: $1..$3 scope, $4 now, $5 exact keys, $6 exact limit, $7
// full-text query lexemes as quoted tsquery literals, $8 full-text limit,
// $9 profile, $10 query dimensions (0 turns the vector channel off), $11
// query vector, $12 vector rows to fetch.
//
// Recallable means active and effective at $4 in the scope. The full-text
// channel scans the scope's recallable records once, testing each query
// lexeme against the record's tsvector (a binary search), counts matched
// terms and weighs them with ln(1 + n/df) over those records, summed in
// query-term order and rounded half away from zero to 6 decimals, exactly
// like memorystore and memorykit.RoundWeight. It returns the best $8 rows
// above the threshold (matched*2 > best) and the best $8 below it, and
// memorykit.FullTextRule then runs on exactly those rows in Go. The vector
// channel orders by pgvector's cosine distance and returns the vectors, so
// the final similarity is computed in float64 the same way memorystore
// computes it.
//
// The full-text part is generated for the number k of distinct query
// lexemes: up to maxInlineTerms each term gets its own column, so one pass
// computes everything without unnesting; more terms use a generic join.
const recallHead = `
WITH ex AS (
	SELECT id FROM {schema}.records
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3
	  AND status = 'active' AND effective_from <= $4
	  AND (effective_until IS NULL OR effective_until > $4)
	  AND key = ANY ($5::text[])
	ORDER BY updated_at DESC, id
	LIMIT $6
),
`

// recallTail follows the fts CTE (id, updated_at, matched, weight).
const recallTail = `
ftb AS (
	SELECT id, updated_at, matched, weight, max(matched) OVER () AS best FROM fts
),
ftk AS (
	SELECT id, matched, weight FROM ftb WHERE 2 * matched > best
	ORDER BY matched DESC, weight DESC, updated_at DESC, id
	LIMIT $8
),
ftl AS (
	SELECT id, matched, weight FROM ftb WHERE 2 * matched <= best
	ORDER BY matched DESC, weight DESC, updated_at DESC, id
	LIMIT $8
),
vec AS (
	SELECT e.record_id AS id, e.embedding
	FROM {schema}.embeddings e
	JOIN {schema}.records r ON r.id = e.record_id AND r.content_hash = e.content_hash
	WHERE e.tenant_id = $1 AND e.subject_type = $2 AND e.subject_id = $3
	  AND e.profile = $9 AND e.dims = $10
	  AND r.tenant_id = $1 AND r.subject_type = $2 AND r.subject_id = $3
	  AND r.status = 'active' AND r.effective_from <= $4
	  AND (r.effective_until IS NULL OR r.effective_until > $4)
	ORDER BY e.embedding OPERATOR({ext}.<=>) $11::{ext}.vector, e.record_id
	LIMIT $12
),
hits AS (
	SELECT 'e'::text AS ch, id, 0 AS matched, 0::float8 AS weight, NULL::{ext}.vector AS embedding FROM ex
	UNION ALL SELECT 'k', id, matched, weight, NULL FROM ftk
	UNION ALL SELECT 'b', id, matched, weight, NULL FROM ftl
	UNION ALL SELECT 'v', id, 0, 0, embedding FROM vec
)
SELECT h.ch, h.matched, h.weight, h.embedding, ` + recordColsR + `
FROM hits h JOIN {schema}.records r ON r.id = h.id`

// recallablePool selects the scope's recallable records (alias r).
const recallablePool = `{schema}.records r
	WHERE r.tenant_id = $1 AND r.subject_type = $2 AND r.subject_id = $3
	  AND r.status = 'active' AND r.effective_from <= $4
	  AND (r.effective_until IS NULL OR r.effective_until > $4)`

// maxInlineTerms is the largest query for which the full-text part gets
// one column per term.
const maxInlineTerms = 32

// fullTextCTEs returns the CTEs ending in fts for k distinct lexemes.
func fullTextCTEs(k int) string {
	var b strings.Builder
	switch {
	case k == 0:
		b.WriteString(`fts AS (
	SELECT NULL::text AS id, NULL::timestamptz AS updated_at, 0 AS matched, 0::float8 AS weight
	WHERE cardinality($7::text[]) < 0 -- never: no query terms (it types $7)
),`)
	case k <= maxInlineTerms:
		// qs parses each literal once; ftr tests every lexeme per record.
		b.WriteString("qs AS MATERIALIZED (\n\tSELECT ")
		for i := 1; i <= k; i++ {
			if i > 1 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "($7::text[])[%d]::tsquery AS q%d", i, i)
		}
		b.WriteString("\n),\nftr AS MATERIALIZED (\n\tSELECT r.id, r.updated_at")
		for i := 1; i <= k; i++ {
			fmt.Fprintf(&b, ", r.search_tsv @@ qs.q%d AS b%d", i, i)
		}
		b.WriteString("\n\tFROM qs, " + recallablePool + "\n),\n")
		b.WriteString("st AS (\n\tSELECT count(*)::float8 AS n")
		for i := 1; i <= k; i++ {
			fmt.Fprintf(&b, ", count(*) FILTER (WHERE b%d)::float8 AS df%d", i, i)
		}
		b.WriteString("\n\tFROM ftr\n),\n")
		b.WriteString("fts AS (\n\tSELECT f.id, f.updated_at, (")
		for i := 1; i <= k; i++ {
			if i > 1 {
				b.WriteString(" + ")
			}
			fmt.Fprintf(&b, "f.b%d::int", i)
		}
		b.WriteString(") AS matched,\n\t\tround((")
		for i := 1; i <= k; i++ {
			if i > 1 {
				b.WriteString(" + ")
			}
			fmt.Fprintf(&b, "CASE WHEN f.b%d THEN ln(1 + st.n / st.df%d) ELSE 0 END", i, i)
		}
		b.WriteString(")::numeric, 6)::float8 AS weight\n\tFROM ftr f, st\n\tWHERE ")
		for i := 1; i <= k; i++ {
			if i > 1 {
				b.WriteString(" OR ")
			}
			fmt.Fprintf(&b, "f.b%d", i)
		}
		b.WriteString("\n),")
	default:
		b.WriteString(`q AS MATERIALIZED (
	SELECT i, ($7::text[])[i]::tsquery AS tq FROM generate_subscripts($7::text[], 1) AS i
),
ftr AS MATERIALIZED (
	SELECT r.id, r.updated_at, r.search_tsv FROM ` + recallablePool + `
),
n AS (
	SELECT count(*)::float8 AS n FROM ftr
),
ftp AS MATERIALIZED (
	SELECT f.id, f.updated_at, q.i FROM ftr f JOIN q ON f.search_tsv @@ q.tq
),
df AS (
	SELECT i, count(*)::float8 AS df FROM ftp GROUP BY i
),
fts AS (
	SELECT p.id, p.updated_at, count(*)::int AS matched,
	       round(sum(ln(1 + n.n / df.df) ORDER BY p.i)::numeric, 6)::float8 AS weight
	FROM ftp p JOIN df ON df.i = p.i CROSS JOIN n
	GROUP BY p.id, p.updated_at
),`)
	}
	return b.String()
}

// recallStatement renders the recall statement for k distinct lexemes.
func recallStatement(k int) string {
	return recallHead + fullTextCTEs(k) + recallTail
}

// recallSQLFor returns the store's rendered statement for k lexemes.
func (s *Store) recallSQLFor(k int) string {
	if k > maxInlineTerms {
		k = maxInlineTerms + 1
	}
	return s.recallSQL[k]
}

// vectorSlack is how many rows beyond VectorLimit the vector channel
// fetches, so re-ranking in float64 cannot miss a record that pgvector's
// float32 arithmetic placed just past the limit.
const vectorSlack = 16

// Recall implements memorykit.RecallStore in one statement (one round
// trip). When that statement fails with a server error and a vector was
// asked for, recall runs again without the vector channel and reports the
// failure in VectorErr, so exact and full-text recall stay available.
func (s *Store) Recall(ctx context.Context, q memorykit.RecallQuery) (memorykit.RecallResult, error) {
	const op = "pgstore.recall"
	if err := live(ctx, op); err != nil {
		return memorykit.RecallResult{}, err
	}
	if err := checkRecallQuery(op, q); err != nil {
		return memorykit.RecallResult{}, err
	}
	now := s.now()
	// A zero query vector has no cosine similarity, and no stored vector
	// can have more than maxDims dimensions: either way nothing matches.
	useVector := q.Vector != nil && len(q.Vector) <= maxDims && norm(q.Vector) > 0
	res, err := s.recall(ctx, q, now, useVector)
	if err == nil {
		return res, nil
	}
	var pe *pgconn.PgError
	if !useVector || ctx.Err() != nil || !errors.As(err, &pe) {
		return memorykit.RecallResult{}, mapErr(op, err)
	}
	vecErr := mapErr(op, err)
	res, err = s.recall(ctx, q, now, false)
	if err != nil {
		return memorykit.RecallResult{}, mapErr(op, err)
	}
	res.VectorErr = vecErr
	return res, nil
}

func (s *Store) recall(ctx context.Context, q memorykit.RecallQuery, now time.Time, useVector bool) (memorykit.RecallResult, error) {
	keys := q.ExactKeys
	if keys == nil {
		keys = []string{}
	}
	terms := queryLexemes(q.Terms)
	literals := make([]string, len(terms))
	for i, t := range terms {
		literals[i] = tsqueryLiteral(t)
	}
	var (
		dims int
		vec  any
	)
	if useVector {
		dims = len(q.Vector)
		vec = pgvector.NewVector(append([]float32(nil), q.Vector...))
	}
	rows, err := s.pool.Query(ctx, s.recallSQLFor(len(literals)),
		q.Scope.TenantID, string(q.Scope.SubjectType), q.Scope.SubjectID, now,
		keys, q.ExactLimit, literals, q.FullTextLimit,
		q.Profile, dims, vec, fetchLimit(q.VectorLimit))
	if err != nil {
		return memorykit.RecallResult{}, err
	}
	defer rows.Close()

	res := memorykit.RecallResult{Records: make(map[string]memorykit.Record)}
	records := make(map[string]memorykit.Record)
	var (
		exact   []memorykit.Record
		ftCands []memorykit.FullTextCandidate
		vecHits []memorykit.Hit
	)
	qn := norm(q.Vector)
	for rows.Next() {
		var (
			ch      string
			matched int
			weight  float64
			emb     *pgvector.Vector
			d       recordDest
		)
		if err := rows.Scan(append([]any{&ch, &matched, &weight, &emb}, d.targets()...)...); err != nil {
			return memorykit.RecallResult{}, err
		}
		rec, err := d.record()
		if err != nil {
			return memorykit.RecallResult{}, err
		}
		records[rec.ID] = rec
		switch ch {
		case "e":
			exact = append(exact, rec)
		case "k", "b":
			ftCands = append(ftCands, memorykit.FullTextCandidate{
				ID: rec.ID, Matched: matched, Weight: memorykit.RoundWeight(weight), UpdatedAt: rec.UpdatedAt,
			})
		case "v":
			if emb == nil {
				continue
			}
			v := emb.Slice()
			en := norm(v)
			if en == 0 || len(v) != len(q.Vector) {
				continue
			}
			dot := 0.0
			for i := range q.Vector {
				dot += float64(q.Vector[i]) * float64(v[i])
			}
			vecHits = append(vecHits, memorykit.Hit{ID: rec.ID, Score: dot / (qn * en)})
		}
	}
	if err := rows.Err(); err != nil {
		return memorykit.RecallResult{}, err
	}

	sort.Slice(exact, func(i, j int) bool {
		a, b := exact[i], exact[j]
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.ID < b.ID
	})
	if len(exact) > q.ExactLimit {
		exact = exact[:q.ExactLimit]
	}
	for i, r := range exact {
		res.Exact = append(res.Exact, memorykit.Hit{ID: r.ID, Rank: i + 1, Score: 1})
	}

	kept, below := memorykit.FullTextRule(ftCands, q.FullTextLimit)
	res.FullText = textHits(kept)
	res.FullTextBelow = textHits(below)

	sort.Slice(vecHits, func(i, j int) bool {
		if vecHits[i].Score != vecHits[j].Score {
			return vecHits[i].Score > vecHits[j].Score
		}
		return vecHits[i].ID < vecHits[j].ID
	})
	if len(vecHits) > q.VectorLimit {
		vecHits = vecHits[:q.VectorLimit]
	}
	for i := range vecHits {
		vecHits[i].Rank = i + 1
	}
	if len(vecHits) > 0 {
		res.Vector = vecHits
	}

	for _, hits := range [][]memorykit.Hit{res.Exact, res.FullText, res.Vector} {
		for _, h := range hits {
			res.Records[h.ID] = records[h.ID]
		}
	}
	return res, nil
}

// fetchLimit is how many vector rows to fetch for limit hits.
func fetchLimit(limit int) int {
	if limit > math.MaxInt32-vectorSlack {
		return math.MaxInt32
	}
	return limit + vectorSlack
}

func textHits(cands []memorykit.FullTextCandidate) []memorykit.Hit {
	if len(cands) == 0 {
		return nil
	}
	hits := make([]memorykit.Hit, len(cands))
	for i, c := range cands {
		hits[i] = memorykit.Hit{ID: c.ID, Rank: i + 1, Score: float64(c.Matched), Weight: c.Weight}
	}
	return hits
}

func checkRecallQuery(op string, q memorykit.RecallQuery) error {
	if err := q.Scope.Validate(); err != nil {
		return err
	}
	limits := []struct {
		field string
		n     int
	}{
		{"exact_limit", q.ExactLimit},
		{"full_text_limit", q.FullTextLimit},
		{"vector_limit", q.VectorLimit},
	}
	for _, l := range limits {
		if l.n <= 0 {
			return memorykit.FieldError(op, l.field, "must_be_positive")
		}
	}
	if q.Vector == nil {
		return nil
	}
	if err := memorykit.ValidateProfile(op, q.Profile); err != nil {
		return err
	}
	if len(q.Vector) == 0 {
		return memorykit.FieldError(op, "vector", "empty")
	}
	for _, x := range q.Vector {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return memorykit.FieldError(op, "vector", "not_finite")
		}
	}
	return nil
}

func norm(v []float32) float64 {
	sum := 0.0
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	return math.Sqrt(sum)
}
