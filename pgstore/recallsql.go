package pgstore

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/goagents/memorykit"
)

// This file is the one place pgstore generates SQL at run time (every
// other statement is a named statement of sql/*.sql, see sql.go): the
// recall statement, whose full-text part depends on the number of query
// lexemes. newStore renders it once per number of lexemes (recallSQLFor).
//
// The recall statement runs all three channels at once, so recall costs one
// round trip and every channel sees the same snapshot. It reads the layout
// of migration 0002 (see the comments there for why it looks this way).
//
// Parameters:
//
//	$1..$3  scope                  $4  now
//	$5      exact keys             $6  exact limit
//	$7      full-text query terms as scope-tagged tsquery literals
//	$8      the same terms as plain lexemes (term_df keys)
//	$9      full-text limit
//	$10     profile                $11 query dimensions (0: no vector channel)
//	$12     query vector           $13 vector rows to return
//	$14     vector candidates to re-rank
//
// Recallable means active (a recall_text row exists), effective at $4 and
// in the scope. The few active records outside their window ("dormant")
// are found through two small indexes (the one for records not yet in
// effect only when the scope's max_from says one may exist) and subtracted
// from the maintained counts, so n and df are exactly those of the
// recallable records.
//
// Full-text. Each query term gets its IDF ln(1 + n/df) from term_df. A
// record's matched count and weight (IDFs summed in query-term order,
// rounded half away from zero to 6 decimals) are computed exactly as in
// memorystore. Which records need computing is decided in levels, to avoid
// reading the records that hold nothing but very common terms:
//
// Order the terms by df, most common first, and let C be the c most common
// (counting only terms with df > 0) and R the others. Level c reads the
// records holding an R term (through the GIN index) and scores them. A
// record outside that set holds only C terms, so it has matched <= c and
// weight <= W(C), the rounded sum of C's IDFs. If, among the records read,
// best >= 2c (no outside record can reach the kept side of the threshold,
// and best is exact) and the FullTextLimit-th record below the threshold
// ranks strictly above (c, W(C)), then no outside record can appear in
// either list and the result is exact. Otherwise the next level moves the
// least common term of C into R and reads its records too; level 0 reads
// every matching record and needs no check. Each level is a gated CTE, so
// the first level that passes ends the work. FullTextRule runs in Go on the
// returned rows, as before.
//
// Vector. Candidates come from the embeddings_live index: the current
// vectors of the scope, profile and dimension at half precision (normalised,
// so cosine order is kept), ordered by cosine distance to the normalised
// query, the $14 nearest. Those are re-ranked exactly by pgvector's cosine
// distance on the full vectors, the best $13 are returned with their
// vectors, and Go computes the final similarity in float64 like memorystore.
// A scope with at most $14 current vectors is therefore ranked exactly; in a
// larger one a record is missed only if rounding to half precision pushes it
// out of the $14 nearest, which needs a similarity within about 1e-3 of the
// $14-th. docs/benchmarks.md reports the measured recall@10 against exact
// search. Vectors over 1024 dimensions have no half-precision copy and are
// ranked by an exact scan of the scope.

// maxInlineTerms is the largest query for which the full-text part gets one
// column per term and the pruning levels; longer queries take the generic
// path, which reads every matching record.
const maxInlineTerms = 32

// maxPruneLevel bounds how many of the most common terms the first level
// leaves out.
const maxPruneLevel = 4

// smallScope is the number of recallable records up to which the levels
// are skipped and every matching record is read at once: in a scope that
// small the levels mostly fall through, reading postings twice. Measured
// on the benchmark corpus (docs/benchmarks.md), a 1k-record scope is
// already better off with the levels (p50 without vectors 3.7x its floor
// against 4.6x reading everything, three alternating runs each), so the
// cut-off sits well below it. Tests lower it to exercise the levels on
// small data; stores render it into their statements when they open.
var smallScope = 500

// vectorSlack is how many rows beyond VectorLimit the vector channel
// returns, so re-ranking in float64 cannot miss a record that pgvector's
// float32 arithmetic placed just past the limit.
const vectorSlack = 16

// ftSlack is how many full-text rows beyond FullTextLimit the statement
// returns on each side of the threshold.
const ftSlack = "4"

// vectorCandidates is how many half-precision candidates the vector
// channel re-ranks exactly (at least VectorLimit + vectorSlack).
var vectorCandidates = 64

// halfMaxDims is the widest vector the half-precision index holds (see
// migration 0002); wider ones are ranked by an exact scan of the scope.
const halfMaxDims = "1024"

// scopeTag is the tag put before every stored and queried lexeme of a
// scope (migration 0002): the first 12 hex digits of
// md5(tenant/subject_type/subject_id) and a dot. It only narrows GIN posting
// lists to one scope; it is not a security boundary (every query also
// filters on the scope columns).
func scopeTag(scope memorykit.Scope) string {
	sum := md5.Sum([]byte(scope.TenantID + "/" + string(scope.SubjectType) + "/" + scope.SubjectID))
	return hex.EncodeToString(sum[:])[:12] + "."
}

const recallExact = `
WITH ex AS (
	SELECT id FROM {schema}.records
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3
	  AND status = 'active' AND effective_from <= $4
	  AND (effective_until IS NULL OR effective_until > $4)
	  AND key = ANY ($5::text[])
	ORDER BY updated_at DESC, id
	LIMIT $6
),
dorm AS MATERIALIZED (
	SELECT t.record_id, t.terms FROM {schema}.recall_text t
	WHERE $4 < (SELECT max_from FROM {schema}.term_df
		WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND term = '')
	  AND t.tenant_id = $1 AND t.subject_type = $2 AND t.subject_id = $3 AND t.effective_from > $4
	UNION ALL
	SELECT t.record_id, t.terms FROM {schema}.recall_text t
	WHERE t.tenant_id = $1 AND t.subject_type = $2 AND t.subject_id = $3
	  AND t.effective_until <= $4 AND t.effective_from <= $4
),
nn AS MATERIALIZED (
	SELECT (coalesce((SELECT df FROM {schema}.term_df
		WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND term = ''), 0)
		- (SELECT count(*) FROM dorm))::float8 AS n
),
qp AS MATERIALIZED (
	SELECT s.i, s.lit, s.q, s.df, CASE WHEN s.df > 0 THEN ln(1 + nn.n / s.df) ELSE 0 END AS idf,
		row_number() OVER (ORDER BY s.df DESC, s.i) AS pos
	FROM nn, (
		SELECT u.i, u.lit, u.lit::tsquery AS q,
			(coalesce(d.df, 0) - (SELECT count(*) FROM dorm WHERE dorm.terms @@ u.lit::tsquery))::float8 AS df
		FROM unnest($7::text[], $8::text[]) WITH ORDINALITY AS u(lit, lex, i)
		LEFT JOIN {schema}.term_df d ON d.tenant_id = $1 AND d.subject_type = $2 AND d.subject_id = $3
			AND d.term = u.lex
	) s
),
`

// recallTextRow restricts recall_text rows (alias t) to recallable ones
// where the rows come from the GIN index. The whole test sits in a CASE,
// which no index can answer: otherwise the generic plan, which cannot tell
// that nearly every row passes, intersects the GIN results with a range
// scan of recall_text_recent (the whole scope) or recall_text_from (the
// whole table).
const recallTextRow = `CASE WHEN t.tenant_id = $1 AND t.subject_type = $2 AND t.subject_id = $3
	  AND t.effective_from <= $4 AND (t.effective_until IS NULL OR t.effective_until > $4) THEN true ELSE false END`

// recallTextRecent is recallTextRow for rows read newest first through
// recall_text_recent: there the scope must be an index condition.
const recallTextRecent = `t.tenant_id = $1 AND t.subject_type = $2 AND t.subject_id = $3
	  AND CASE WHEN t.effective_from <= $4 AND (t.effective_until IS NULL OR t.effective_until > $4) THEN true ELSE false END`

// recallTail follows the full-text CTEs, which end in fx (id, updated_at,
// m, raw, w): every record that has to be ranked, with its matched count,
// raw weight and rounded weight. A few rows beyond the limit are returned
// on each side of the threshold (ftSlack), so Go's re-rounding cannot
// change which records make the cut.
const recallTail = `
ftb AS MATERIALIZED (
	SELECT max(m) AS best FROM fx
),
ftk AS (
	SELECT id, m, raw FROM fx, ftb WHERE 2 * m > best
	ORDER BY m DESC, w DESC, updated_at DESC, id
	LIMIT $9 + ` + ftSlack + `
),
ftl AS (
	SELECT id, m, raw FROM fx, ftb WHERE 2 * m <= best
	ORDER BY m DESC, w DESC, updated_at DESC, id
	LIMIT $9 + ` + ftSlack + `
),
vc AS MATERIALIZED (
	SELECT e.record_id FROM {schema}.embeddings e
	WHERE e.tenant_id = $1 AND e.subject_type = $2 AND e.subject_id = $3
	  AND e.profile = $10 AND e.dims = $11 AND e.live AND e.dims <= ` + halfMaxDims + `
	  AND e.record_id NOT IN (SELECT record_id FROM dorm)
	ORDER BY e.half OPERATOR({ext}.<=>) (SELECT {ext}.l2_normalize($12::{ext}.vector)::{ext}.halfvec), e.record_id
	LIMIT $14
),
vec AS (
	(SELECT e.record_id AS id, e.embedding
	FROM vc JOIN {schema}.embeddings e ON e.record_id = vc.record_id AND e.tenant_id = $1 AND e.profile = $10
	JOIN {schema}.records r ON r.id = e.record_id AND r.tenant_id = $1
	ORDER BY e.embedding OPERATOR({ext}.<=>) $12::{ext}.vector, r.updated_at DESC, e.record_id
	LIMIT $13)
	UNION ALL
	(SELECT e.record_id, e.embedding FROM {schema}.embeddings e
	JOIN {schema}.records r ON r.id = e.record_id AND r.tenant_id = $1
	WHERE $11 > ` + halfMaxDims + ` AND e.tenant_id = $1 AND e.subject_type = $2 AND e.subject_id = $3
	  AND e.profile = $10 AND e.dims = $11 AND e.live
	  AND e.record_id NOT IN (SELECT record_id FROM dorm)
	ORDER BY e.embedding OPERATOR({ext}.<=>) $12::{ext}.vector, r.updated_at DESC, e.record_id
	LIMIT $13)
),
hits AS (
	SELECT 'e'::text AS ch, id, 0 AS m, 0::float8 AS w, NULL::{ext}.vector AS embedding FROM ex
	UNION ALL SELECT 'k', id, m, raw, NULL FROM ftk
	UNION ALL SELECT 'b', id, m, raw, NULL FROM ftl
	UNION ALL SELECT 'v', id, 0, 0, embedding FROM vec
)
SELECT h.ch, h.m, h.w, h.embedding, ` + recordColsR + `
FROM hits h JOIN {schema}.records r ON r.id = h.id AND r.tenant_id = $1`

// fullTextCTEs returns the CTEs ending in fx for k distinct query terms.
func fullTextCTEs(k int) string {
	var b strings.Builder
	switch {
	case k == 0:
		b.WriteString(`fx AS (
	SELECT NULL::text AS id, NULL::timestamptz AS updated_at, 0 AS m, 0::float8 AS raw, 0::float8 AS w
	FROM qp WHERE false
),`)
	case k <= maxInlineTerms:
		inlineFullText(&b, k)
	default:
		b.WriteString(`fp AS MATERIALIZED (
	SELECT t.record_id AS id, t.updated_at, qp.i, qp.idf
	FROM qp JOIN {schema}.recall_text t ON t.terms @@ qp.q
	WHERE ` + recallTextRow + `
),
fs AS (
	SELECT id, updated_at, count(*)::int AS m, sum(idf ORDER BY i) AS raw
	FROM fp GROUP BY id, updated_at
),
fx AS (
	SELECT s.*, ` + roundedRaw + ` AS w FROM fs s
),`)
	}
	return b.String()
}

// inlineFullText writes the pruned full-text CTEs for 1 <= k <=
// maxInlineTerms terms (see the comment at the top of this file), in
// order: the query's terms and levels (qv, lv), then for each level l =
// top..0 the records it reads (lC) and, above level 0, whether the records
// read so far decide the result (xC, vC), then fx, the union of the
// levels.
func inlineFullText(b *strings.Builder, k int) {
	top := min(k-1, maxPruneLevel)
	writeTermsAndLevels(b, k, top)
	f := newFullTextScan(k)
	for c := top; c >= 0; c-- {
		b.WriteString(f.levelCTE(c, top))
		if c > 0 {
			b.WriteString(levelCheckCTEs(c, top))
		}
	}
	fmt.Fprintf(b, "fx AS (%s),", unionLevels(top, 0))
}

// writeTermsAndLevels writes qv and lv.
//
// qv is one row holding each term's tsquery (qN), IDF (wN) and whether any
// recallable record holds it (dN), and cap, the largest c worth trying
// (R must keep a term some record holds). lv holds one row per level
// l = top..0 with c = min(l, cap), the OR of the R terms (r), the term the
// level adds (p) and W(C) (wc). Level l reads its records only when level
// l+1 did not pass and has a larger c.
func writeTermsAndLevels(b *strings.Builder, k, top int) {
	b.WriteString("qv AS MATERIALIZED (\n\tSELECT ")
	for i := 1; i <= k; i++ {
		fmt.Fprintf(b, "a.qa[%d] AS q%d, a.wa[%d] AS w%d, a.da[%d] AS d%d, ", i, i, i, i, i, i)
	}
	fmt.Fprintf(b, `a.kd, CASE WHEN (SELECT n FROM nn) <= %d THEN 0 ELSE greatest(0, least(%d, a.kd - 1)) END AS cap
	FROM (SELECT array_agg(q ORDER BY i) AS qa, array_agg(idf ORDER BY i) AS wa, array_agg(df > 0 ORDER BY i) AS da,
		count(*) FILTER (WHERE df > 0) AS kd FROM qp) a
),
lv AS MATERIALIZED (
	SELECT g.l, g.c,
		(SELECT string_agg(lit, ' | ')::tsquery FROM qp WHERE pos > g.c AND df > 0) AS r,
		(SELECT q FROM qp WHERE pos = g.c + 1) AS p,
		coalesce((SELECT `+weightSum+` FROM qp WHERE pos <= g.c), 0) AS wc
	FROM (SELECT l, least(l, qv.cap) AS c FROM qv, generate_series(0, %d) AS l) g
),
`, smallScope, top, top)
}

// fullTextScan scores the rows a level reads. Each row carries a bit mask
// of the terms it holds (the @@ tests run once per row), from which the
// matched count m and the raw weight (IDFs added in query-term order) are
// derived.
type fullTextScan struct {
	mask, score string
}

func newFullTextScan(k int) fullTextScan {
	var mask, score strings.Builder
	for i := 1; i <= k; i++ {
		if i > 1 {
			mask.WriteString(" | ")
		}
		fmt.Fprintf(&mask, "CASE WHEN qv.d%d AND t.terms @@ qv.q%d THEN %d::bigint ELSE 0 END", i, i, uint64(1)<<(i-1))
	}
	score.WriteString("(")
	for i := 1; i <= k; i++ {
		if i > 1 {
			score.WriteString(" + ")
		}
		fmt.Fprintf(&score, "(a.mask & %d <> 0)::int", uint64(1)<<(i-1))
	}
	score.WriteString(") AS m, (")
	for i := 1; i <= k; i++ {
		if i > 1 {
			score.WriteString(" + ")
		}
		fmt.Fprintf(&score, "CASE WHEN a.mask & %d <> 0 THEN qv.w%d ELSE 0 END", uint64(1)<<(i-1), i)
	}
	score.WriteString(") AS raw")
	return fullTextScan{mask: mask.String(), score: score.String()}
}

// scan is a level's rows, scored. where is its FROM ... WHERE; an ordered
// level keeps only the first $9 + ftSlack rows in rank order (see
// levelCTE). OFFSET 0 keeps the planner from folding the sub-selects,
// which would repeat the tests.
func (f fullTextScan) scan(where string, ordered bool) string {
	tail, row := "OFFSET 0", recallTextRow
	if ordered {
		tail, row = "ORDER BY t.updated_at DESC, t.record_id\n\t\t\tLIMIT $9 + "+ftSlack, recallTextRecent
	}
	return fmt.Sprintf(`SELECT s.id, s.updated_at, s.m, s.raw, `+roundedRaw+` AS w FROM (
		SELECT a.id, a.updated_at, %s
		FROM qv, (
			SELECT t.record_id AS id, t.updated_at, %s AS mask
			FROM %s
			  AND %s
			%s
		) a
		OFFSET 0
	) s`, f.score, f.mask, where, row, tail)
}

// levelCTE is lC, the records level c reads.
//
// A level whose C is empty adds rows that all hold the same single term
// (the only one any record holds, or the most common one, the others
// having been read already): they tie on matched count and weight, so
// they rank by recency alone and only the first $9 + ftSlack can reach
// either list. Those are read newest first through recall_text_recent;
// the term test is written so that no GIN scan is planned for it.
func (f fullTextScan) levelCTE(c, top int) string {
	switch {
	case c == top:
		// The first level: every record holding an R term, unless R is a
		// single term and C empty (then the newest few suffice).
		return levelCTE(c,
			f.scan(fmt.Sprintf("qv, {schema}.recall_text t\n\t\t\tWHERE (%s > 0 OR (SELECT kd FROM qv) > 1) AND t.terms @@ %s",
				lvAt("c", c), lvAt("r", c)), false),
			f.scan(fmt.Sprintf("qv, {schema}.recall_text t\n\t\t\tWHERE %s = 0 AND (SELECT kd FROM qv) <= 1 AND %s", lvAt("c", c),
				singleTerm("t.terms @@ "+lvAt("r", c)+" THEN true")), true))
	case c > 0:
		return levelCTE(c, f.scan(fmt.Sprintf(`qv, {schema}.recall_text t
			WHERE %s < %s AND NOT (SELECT ok FROM v%d)
			  AND t.terms @@ %s AND NOT coalesce(t.terms @@ %s, false)`,
			lvAt("c", c), lvAt("c", c+1), c+1, lvAt("p", c), lvAt("r", c+1)), false))
	default:
		return levelCTE(c, f.scan(fmt.Sprintf(`qv, {schema}.recall_text t
			WHERE %s < %s AND NOT (SELECT ok FROM v1)
			  AND `, lvAt("c", 0), lvAt("c", 1))+
			singleTerm("t.terms @@ "+lvAt("p", 0)+" THEN NOT coalesce(t.terms @@ "+lvAt("r", 1)+", false)"), true))
	}
}

// levelCTE names the union of parts lC.
func levelCTE(c int, parts ...string) string {
	return fmt.Sprintf("l%d AS MATERIALIZED (\n\t%s\n),\n", c, strings.Join(parts, "\n\tUNION ALL\n\t"))
}

// singleTerm wraps a term test in a CASE (see levelCTE).
func singleTerm(cond string) string {
	return "CASE WHEN " + cond + " ELSE false END"
}

// unionLevels is the union of the levels from..to.
func unionLevels(from, to int) string {
	parts := make([]string, 0, from-to+1)
	for c := from; c >= to; c-- {
		parts = append(parts, fmt.Sprintf("SELECT * FROM l%d", c))
	}
	return strings.Join(parts, " UNION ALL ")
}

// lvAt is column col of level l. lv values enter the scans as
// uncorrelated sub-selects (computed once, before the scan), so gates
// become one-time filters and the planner never drives a scan from a join
// with lv.
func lvAt(col string, l int) string { return fmt.Sprintf("(SELECT %s FROM lv WHERE l = %d)", col, l) }

// levelCheckCTEs are xC, the records read down to level c, and vC,
// whether they decide the result exactly. cb is the most terms an unread
// record below the threshold can hold, tb the most weight it can have
// (the cb largest IDFs of C).
func levelCheckCTEs(c, top int) string {
	return fmt.Sprintf(`x%d AS (%s),
v%d AS MATERIALIZED (%s
	SELECT coalesce(lv.c = 0 OR (s.best >= lv.c
		AND (2 * lv.c <= s.best OR (kl.m IS NOT NULL AND (kl.m > lv.c OR (kl.m = lv.c AND kl.w > lv.wc))))
		AND (s.cb = 0 OR (bl.m IS NOT NULL AND (bl.m > s.cb OR (bl.m = s.cb AND bl.w > coalesce(
			(SELECT `+weightSum+` FROM qp WHERE pos <= lv.c AND pos > lv.c - s.cb), 0)))))), false) AS ok
	FROM lv, (SELECT max(m) AS best, least(min(lv0.c), max(m) / 2) AS cb FROM x%d, lv lv0 WHERE lv0.l = %d) s
	LEFT JOIN LATERAL (
		SELECT m, w FROM x%d WHERE 2 * m > s.best
		ORDER BY m DESC, w DESC, updated_at DESC, id
		OFFSET $9 - 1 LIMIT 1
	) kl ON true
	LEFT JOIN LATERAL (
		SELECT m, w FROM x%d WHERE 2 * m <= s.best
		ORDER BY m DESC, w DESC, updated_at DESC, id
		OFFSET $9 - 1 LIMIT 1
	) bl ON true
	WHERE lv.l = %d%s
),
`, c, unionLevels(top, c), c, prevPassed(c, top), c, c, c, c, c, prevFailed(c, top))
}

// weightSum sums the IDFs of qp rows in query-term order and rounds like
// storekit.RoundWeight (see roundedRaw).
const weightSum = `round(sum(idf ORDER BY i) * 1e6) / 1e6`

// roundedRaw rounds a row's raw weight to 6 decimals for ordering inside
// the statement. PostgreSQL rounds float halves to even where
// storekit.RoundWeight rounds them away from zero; the two differ only
// when the scaled weight is exactly a half, and Go re-rounds the raw
// weights it receives, so the final order is memorystore's.
const roundedRaw = `round(s.raw * 1e6) / 1e6`

// prevPassed and prevFailed split vC on an earlier level's success: when
// level C+1 already decided the result, vC is that one true row, and the
// failed branch's condition (an uncorrelated sub-select, so a one-time
// filter) keeps PostgreSQL from computing the check over the rows read so
// far at all, which cost 0.1-0.25 ms per level on the benchmark corpus.
func prevPassed(c, top int) string {
	if c == top {
		return ""
	}
	return fmt.Sprintf("\n\tSELECT true AS ok WHERE (SELECT ok FROM v%d)\n\tUNION ALL", c+1)
}

func prevFailed(c, top int) string {
	if c == top {
		return ""
	}
	return fmt.Sprintf(" AND NOT (SELECT ok FROM v%d)", c+1)
}

// recallStatement renders the recall statement for k distinct terms.
func recallStatement(k int) string {
	return recallExact + fullTextCTEs(k) + recallTail
}

// recallSQLFor returns the store's rendered statement for k terms.
func (s *Store) recallSQLFor(k int) string {
	if k > maxInlineTerms {
		k = maxInlineTerms + 1
	}
	return s.recallSQL[k]
}
