package pgstore

import (
	"context"
	"errors"
	"math"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Recall implements storekit.RecallStore in one statement (one round
// trip). When that statement fails with a server error and a vector was
// asked for, recall runs again without the vector channel and reports the
// failure in VectorErr, so exact and full-text recall stay available.
func (s *Store) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	const op = "pgstore.recall"
	if err := live(ctx, op); err != nil {
		return storekit.RecallResult{}, err
	}
	if err := storekit.CheckRecallQuery(op, q); err != nil {
		return storekit.RecallResult{}, err
	}
	now := s.now()
	// A zero query vector has no cosine similarity, and no stored vector
	// can have more than maxDims dimensions: either way nothing matches.
	useVector := q.Vector != nil && len(q.Vector) <= maxDims && storekit.VectorNorm(q.Vector) > 0
	if s.cache != nil {
		res, err := s.cachedRecall(ctx, q, useVector)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return storekit.RecallResult{}, mapErr(op, ctx.Err())
		}
		// Not cacheable, or the load failed: the SQL path answers.
		s.cache.sqlRecalls.Add(1)
	}
	res, err := s.recall(ctx, q, now, useVector)
	if err == nil {
		return res, nil
	}
	var pe *pgconn.PgError
	if !useVector || ctx.Err() != nil || !errors.As(err, &pe) {
		return storekit.RecallResult{}, mapErr(op, withCtx(ctx, err))
	}
	vecErr := mapErr(op, err)
	res, err = s.recall(ctx, q, now, false)
	if err != nil {
		return storekit.RecallResult{}, mapErr(op, withCtx(ctx, err))
	}
	res.VectorErr = vecErr
	return res, nil
}

// recall runs the recall statement and ranks what it returns, in three
// phases: send the statement (sendRecall), read its rows by channel
// (readRecallRows), rank each channel (rankRecall).
func (s *Store) recall(ctx context.Context, q storekit.RecallQuery, now time.Time, useVector bool) (storekit.RecallResult, error) {
	br := s.sendRecall(ctx, q, now, useVector)
	defer func() { _ = br.Close() }()
	if _, err := br.Exec(); err != nil {
		return storekit.RecallResult{}, err
	}
	rows, err := br.Query()
	if err != nil {
		return storekit.RecallResult{}, err
	}
	defer rows.Close()
	got, err := readRecallRows(rows, q)
	if err != nil {
		return storekit.RecallResult{}, err
	}
	return rankRecall(q, got), nil
}

// sendRecall sends the recall statement in one pipelined batch, one round
// trip: the first statement makes the second run on its generic plan,
// without parallel workers or JIT (set_config with is_local lasts until
// the pipeline's implicit transaction ends). Planning the recall
// statement for each call's values would cost milliseconds, and the right
// plan does not depend on them: every scan it makes is chosen by the
// indexes alone (see recallsql.go); starting workers or compiling would
// cost more than the statement. The caller closes the results.
func (s *Store) sendRecall(ctx context.Context, q storekit.RecallQuery, now time.Time, useVector bool) pgx.BatchResults {
	keys := q.ExactKeys
	if keys == nil {
		keys = []string{}
	}
	terms := queryLexemes(q.Scope, q.Terms)
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
	batch := &pgx.Batch{}
	batch.Queue(`SELECT set_config('plan_cache_mode', $1, true),
		set_config('max_parallel_workers_per_gather', '0', true), set_config('jit', 'off', true)`, s.planCacheMode())
	batch.Queue(s.recallSQLFor(len(literals)),
		q.Scope.TenantID, string(q.Scope.SubjectType), q.Scope.SubjectID, now,
		keys, q.ExactLimit, literals, terms, q.FullTextLimit,
		q.Profile, dims, vec, fetchLimit(q.VectorLimit), max(vectorCandidates, fetchLimit(q.VectorLimit)))
	return s.pool.SendBatch(ctx, batch)
}

// recallRows are the recall statement's rows sorted by channel, before
// ranking.
type recallRows struct {
	records map[string]memorykit.Record
	exact   []memorykit.Record
	ftCands []storekit.FullTextCandidate
	vecHits []storekit.Hit
}

// readRecallRows reads every row of the recall statement: exact hits,
// full-text candidates and vector rows (scored by cosine similarity in
// float64, like memorystore; a row whose vector is missing, zero or of
// another dimension is skipped).
func readRecallRows(rows pgx.Rows, q storekit.RecallQuery) (recallRows, error) {
	got := recallRows{records: make(map[string]memorykit.Record)}
	qn := storekit.VectorNorm(q.Vector)
	for rows.Next() {
		var (
			ch      string
			matched int
			weight  float64
			emb     *pgvector.Vector
			d       recordDest
		)
		if err := rows.Scan(append([]any{&ch, &matched, &weight, &emb}, d.targets()...)...); err != nil {
			return recallRows{}, err
		}
		rec, err := d.record()
		if err != nil {
			return recallRows{}, err
		}
		got.records[rec.ID] = rec
		switch ch {
		case "e":
			got.exact = append(got.exact, rec)
		case "k", "b":
			got.ftCands = append(got.ftCands, storekit.FullTextCandidate{
				ID: rec.ID, Matched: matched, Weight: storekit.RoundWeight(weight), UpdatedAt: rec.UpdatedAt,
			})
		case "v":
			if emb == nil {
				continue
			}
			v := emb.Slice()
			en := storekit.VectorNorm(v)
			if en == 0 || len(v) != len(q.Vector) {
				continue
			}
			dot := 0.0
			for i := range q.Vector {
				dot += float64(q.Vector[i]) * float64(v[i])
			}
			got.vecHits = append(got.vecHits, storekit.Hit{ID: rec.ID, Score: dot / (qn * en)})
		}
	}
	if err := rows.Err(); err != nil {
		return recallRows{}, err
	}
	return got, nil
}

// rankRecall orders and cuts each channel to its limit and collects the
// records the hits name.
func rankRecall(q storekit.RecallQuery, got recallRows) storekit.RecallResult {
	res := storekit.RecallResult{Records: make(map[string]memorykit.Record)}
	res.Exact = rankExact(got.exact, q.ExactLimit)
	kept, below := storekit.FullTextRule(got.ftCands, q.FullTextLimit)
	res.FullText = storekit.FullTextHits(kept)
	res.FullTextBelow = storekit.FullTextHits(below)
	res.Vector = rankVector(got.vecHits, got.records, q.VectorLimit)
	for _, hits := range [][]storekit.Hit{res.Exact, res.FullText, res.Vector} {
		for _, h := range hits {
			res.Records[h.ID] = got.records[h.ID]
		}
	}
	return res
}

// rankExact ranks exact hits newer first, then by ID, up to limit.
func rankExact(exact []memorykit.Record, limit int) []storekit.Hit {
	sort.Slice(exact, func(i, j int) bool {
		a, b := exact[i], exact[j]
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.ID < b.ID
	})
	if len(exact) > limit {
		exact = exact[:limit]
	}
	var hits []storekit.Hit
	for i, r := range exact {
		hits = append(hits, storekit.Hit{ID: r.ID, Rank: i + 1, Score: 1})
	}
	return hits
}

// rankVector ranks vector hits by similarity up to limit; nil when none.
// Equal similarities (the same text under two keys a hash embedder does
// not tell apart, for instance) go newer first, then by ID, as memorystore
// orders them.
func rankVector(hits []storekit.Hit, records map[string]memorykit.Record, limit int) []storekit.Hit {
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if ua, ub := records[a.ID].UpdatedAt, records[b.ID].UpdatedAt; !ua.Equal(ub) {
			return ua.After(ub)
		}
		return a.ID < b.ID
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	for i := range hits {
		hits[i].Rank = i + 1
	}
	if len(hits) == 0 {
		return nil
	}
	return hits
}

// fetchLimit is how many vector rows to fetch for limit hits.
func fetchLimit(limit int) int {
	if limit > math.MaxInt32-vectorSlack {
		return math.MaxInt32
	}
	return limit + vectorSlack
}
