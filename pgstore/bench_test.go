package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/goagents/memorykit"
)

// benchWords is the vocabulary of the synthetic records: a Zipf-like draw
// over it gives common and rare terms.
var benchWords = func() []string {
	w := make([]string, 5000)
	for i := range w {
		w[i] = "w" + strconv.Itoa(i)
	}
	return w
}()

func benchText(r *rand.Rand, z *rand.Zipf, n int) string {
	b := make([]byte, 0, n*6)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, benchWords[z.Uint64()]...)
	}
	return string(b)
}

// tsvectorInput renders index terms as tsvector text input for COPY.
func tsvectorInput(terms []string) string {
	lex := ftsTerms(terms)
	for i, l := range lex {
		lex[i] = tsqueryLiteral(l)
	}
	return strings.Join(lex, " ")
}

func benchVector(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// seedScope bulk-loads n active records with embeddings into one scope
// with COPY, computing search terms exactly as Create does.
func seedScope(tb testing.TB, s *Store, scope memorykit.Scope, n, dims int, profile string, r *rand.Rand) {
	tb.Helper()
	ctx := context.Background()
	z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
	now := s.now()
	recRows := make([][]any, 0, n)
	embRows := make([][]any, 0, n)
	for i := range n {
		id := fmt.Sprintf("mem_%s_%06d", scope.SubjectID, i)
		key := fmt.Sprintf("key %d %s", i, benchWords[z.Uint64()])
		content := benchText(r, z, 40)
		hash := memorykit.ContentHash(content)
		recRows = append(recRows, []any{id, scope.TenantID, string(scope.SubjectType), scope.SubjectID, "fact", key, content,
			"active", int64(1), hash, now, "user", "u1", "user", "u1", now, now, tsvectorInput(memorykit.IndexTerms(key, content))})
		embRows = append(embRows, []any{id, profile, scope.TenantID, string(scope.SubjectType), scope.SubjectID, hash,
			int32(dims), pgvector.NewVector(benchVector(r, dims)), now})
	}
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{s.schema, "records"},
		[]string{"id", "tenant_id", "subject_type", "subject_id", "kind", "key", "content", "status", "version",
			"content_hash", "effective_from", "created_by_kind", "created_by_id", "touched_by_kind", "touched_by_id",
			"created_at", "updated_at", "search_tsv"}, pgx.CopyFromRows(recRows)); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{s.schema, "embeddings"},
		[]string{"record_id", "profile", "tenant_id", "subject_type", "subject_id", "content_hash", "dims", "embedding", "created_at"},
		pgx.CopyFromRows(embRows)); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkPostgresRecall measures one fused recall (exact + full-text +
// vector) in a scope of MEMORYKIT_BENCH_RECORDS records (default 10000)
// among MEMORYKIT_BENCH_SCOPES scopes (default 5), 384 dimensions.
func BenchmarkPostgresRecall(b *testing.B) {
	perScope := envInt("MEMORYKIT_BENCH_RECORDS", 10000)
	scopes := envInt("MEMORYKIT_BENCH_SCOPES", 5)
	const dims = 384
	const profile = "bench/v1"
	schema := uniqueSchema(b)
	s := openStore(b, schema, newClock())
	r := rand.New(rand.NewPCG(1, 2))
	all := make([]memorykit.Scope, scopes)
	for i := range all {
		all[i], _ = memorykit.ProjectScope("tenant-bench", fmt.Sprintf("p%03d", i))
		seedScope(b, s, all[i], perScope, dims, profile, r)
	}
	for _, table := range []string{"records", "embeddings"} {
		if _, err := s.pool.Exec(context.Background(), "VACUUM ANALYZE "+quoteIdent(schema)+"."+table); err != nil {
			b.Fatal(err)
		}
	}
	z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
	queries := make([]memorykit.RecallQuery, 64)
	for i := range queries {
		text := benchText(r, z, 8)
		queries[i] = memorykit.RecallQuery{
			Scope: all[i%len(all)], ExactKeys: memorykit.ExactKeys(text, 8), Terms: memorykit.SearchTerms(text, 16),
			Vector: benchVector(r, dims), Profile: profile, ExactLimit: 8, FullTextLimit: 8, VectorLimit: 8,
		}
	}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := s.Recall(ctx, queries[i%len(queries)])
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Vector) != 8 {
			b.Fatalf("vector hits %d", len(res.Vector))
		}
	}
	b.StopTimer()
	if len(lat) > 0 {
		sortDurations(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	}
}

func sortDurations(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
