package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/storekit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgPool != nil {
		pgPool.Close()
	}
	sqliteCleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// The recall fixture: 100 other scopes of otherRecords records each, and
// one target scope per size in targetSizes, every record embedded with the
// local embedder. Generated deterministically (seeded), so every run and
// both stores see the same data.
const (
	otherScopes  = 100
	otherRecords = 1500
	fixtureName  = "mk_bench_recall_v4" // bump when the data or the layout changes (v4: schema 9)
)

var targetSizes = []int{1000, 10000, 50000}

// benchEpoch is the instant of every fixture write; the stores' clocks stay
// there, so every record is in effect.
var benchEpoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func benchClock() *clock.Mock {
	c := clock.NewMock()
	c.Set(benchEpoch)
	return c
}

// acceptAll is the benchmarks' ContentValidator: the data is synthetic and
// the cost of a real Host policy is not what is measured.
type acceptAll struct{}

func (acceptAll) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

// batchSize is the benchmarks' Limits.MaxListSize: the largest batch.
const batchSize = 1000

func benchTombstones(tb testing.TB) *memorykit.TombstoneKeyer {
	tb.Helper()
	k, err := memorykit.NewTombstoneKeyer([]byte("bench tombstone secret, benchmarks only"))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func benchGuard(tb testing.TB) *memorykit.WriteGuard {
	tb.Helper()
	g, err := memorykit.NewWriteGuard(memorykit.Limits{
		Version: 1, MaxKeyBytes: 256, MaxContentBytes: 8192, MaxMetadataEntries: 8, MaxMetadataBytes: 1024,
		MaxSources: 4, MaxSourceBytes: 256, MaxListSize: batchSize, MaxJobPayloadBytes: 16384, MaxReasonBytes: 1024,
	}, acceptAll{})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

var author = memorykit.Actor{Kind: memorykit.ActorTool, ID: "bench-import"}

func scopeOf(tb testing.TB, name string) memorykit.Scope {
	tb.Helper()
	sc, err := memorykit.ProjectScope("tenant-bench", name)
	if err != nil {
		tb.Fatal(err)
	}
	return sc
}

// scopePlan lists the fixture's scopes with their sizes and seeds.
type scopePlan struct {
	scope memorykit.Scope
	n     int
	seed  uint64
}

func fixturePlan(tb testing.TB) []scopePlan {
	var out []scopePlan
	for i := 0; i < otherScopes; i++ {
		out = append(out, scopePlan{scopeOf(tb, fmt.Sprintf("other-%03d", i)), otherRecords, uint64(1000 + i)})
	}
	for _, n := range targetSizes {
		out = append(out, scopePlan{scopeOf(tb, fmt.Sprintf("target-%d", n)), n, uint64(n)})
	}
	return out
}

// scopeDocs generates a scope's records and their vectors.
func scopeDocs(tb testing.TB, p scopePlan) ([]Doc, [][]float32) {
	tb.Helper()
	g := NewGenerator(p.seed)
	docs := make([]Doc, p.n)
	texts := make([]string, p.n)
	for i := range docs {
		docs[i] = g.Doc(i)
		texts[i] = storekit.EmbeddingText(storekit.NormalizeKey(docs[i].Key), docs[i].Content)
	}
	return docs, embedAll(tb, texts)
}

// embedAll embeds texts with the local embedder, in calls it accepts.
func embedAll(tb testing.TB, texts []string) [][]float32 {
	tb.Helper()
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += embedder.MaxLocalTexts {
		vs, err := embedder.NewLocal().Embed(context.Background(), texts[start:min(start+embedder.MaxLocalTexts, len(texts))])
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, vs...)
	}
	return out
}

func recordID(sc memorykit.Scope, i int) string { return fmt.Sprintf("mem_%s_%06d", sc.SubjectID, i) }

// load writes a scope's records with their embeddings through CreateBatch.
func load(tb testing.TB, s storekit.BatchCreator, p scopePlan) {
	tb.Helper()
	ctx := context.Background()
	docs, vecs := scopeDocs(tb, p)
	for start := 0; start < len(docs); start += batchSize {
		end := min(start+batchSize, len(docs))
		its := make([]storekit.BatchItem, 0, end-start)
		for i := start; i < end; i++ {
			its = append(its, storekit.BatchItem{
				Record: memorykit.NewRecord{ID: recordID(p.scope, i), Scope: p.scope, Kind: docs[i].Kind, Key: docs[i].Key,
					Content: docs[i].Content, Status: memorykit.StatusActive, Actor: author},
				Embedding: &storekit.BatchEmbedding{Profile: embedder.LocalProfile, Vector: vecs[i]},
			})
		}
		if _, err := s.CreateBatch(ctx, its); err != nil {
			tb.Fatalf("load %s: %v", p.scope.SubjectID, err)
		}
	}
}

var (
	memOnce    sync.Once
	memFixture *memorystore.Store
)

// memoryFixture builds the recall fixture in a memorystore once per process.
func memoryFixture(tb testing.TB) *memorystore.Store {
	tb.Helper()
	memOnce.Do(func() {
		s, err := memorystore.New(memorystore.Config{Clock: benchClock(), Guard: benchGuard(tb), Tombstones: benchTombstones(tb)})
		if err != nil {
			tb.Fatal(err)
		}
		for _, p := range fixturePlan(tb) {
			load(tb, s, p)
		}
		memFixture = s
	})
	if memFixture == nil {
		tb.Fatal("the memorystore fixture failed to build earlier in this run")
	}
	return memFixture
}

var (
	pgOnce    sync.Once
	pgFixture *pgstore.Store
	pgPool    *pgxpool.Pool
)

// postgresFixture opens the recall fixture's schema, building it when it
// is missing or incomplete. The schema outlives the run (the data is
// deterministic), so repeated runs skip the load; set
// MEMORYKIT_BENCH_REBUILD=1 to build it again.
func postgresFixture(tb testing.TB) (*pgstore.Store, *pgxpool.Pool) {
	tb.Helper()
	pgOnce.Do(func() {
		dsn := pgtest.DSN(tb)
		ctx := context.Background()
		conn := pgtest.Connect(tb, dsn)
		var done bool
		err := conn.QueryRow(ctx, `SELECT done FROM `+fixtureName+`.bench_fixture`).Scan(&done)
		if err != nil || !done || os.Getenv("MEMORYKIT_BENCH_REBUILD") == "1" {
			if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+fixtureName+` CASCADE`); err != nil {
				tb.Fatal(err)
			}
			done = false
		}
		pool := openPool(tb, dsn)
		s, err := pgstore.New(ctx, pool, pgstore.Config{Clock: benchClock(), Guard: benchGuard(tb), Tombstones: benchTombstones(tb), Schema: fixtureName,
			SQLRecall: true})
		if err != nil {
			pool.Close()
			pgtest.Unusable(tb, "open the fixture schema", err)
		}
		if !done {
			start := time.Now()
			for _, p := range fixturePlan(tb) {
				load(tb, s, p)
			}
			for _, q := range []string{
				`VACUUM ANALYZE ` + fixtureName + `.records`, `VACUUM ANALYZE ` + fixtureName + `.recall_text`,
				`VACUUM ANALYZE ` + fixtureName + `.embeddings`, `VACUUM ANALYZE ` + fixtureName + `.term_df`,
				`CREATE TABLE ` + fixtureName + `.bench_fixture (done boolean NOT NULL)`,
				`INSERT INTO ` + fixtureName + `.bench_fixture VALUES (true)`,
			} {
				if _, err := conn.Exec(ctx, q); err != nil {
					tb.Fatal(err)
				}
			}
			tb.Logf("built the PostgreSQL recall fixture in %s", time.Since(start).Round(time.Second))
		}
		pgFixture, pgPool = s, pool
	})
	if pgFixture == nil {
		tb.Fatal("the PostgreSQL fixture failed to open earlier in this run")
	}
	return pgFixture, pgPool
}

// openPool opens a pool that registers the pgvector types; it is closed by
// closeFixtures at the end of the run.
func openPool(tb testing.TB, dsn string) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = 8
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error { return pgxvec.RegisterTypes(ctx, c) }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return pool
}

// latencies records per-operation durations and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(l)))) - 1
		return float64(l[max(i, 0)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), prefix+"p50-ms")
	b.ReportMetric(pct(0.99), prefix+"p99-ms")
}

// pgvectorTypes registers the pgvector types on a plain connection.
func pgvectorTypes(ctx context.Context, conn *pgx.Conn) error { return pgxvec.RegisterTypes(ctx, conn) }

// tsvectorQuoter escapes a lexeme for a quoted tsvector literal. It is
// built once: building it per term made copy=floor spend half its client
// CPU here, which slowed the floor it is meant to measure.
var tsvectorQuoter = strings.NewReplacer(`\`, `\\`, "'", "''")

// tsvectorLiteral renders terms as tsvector text input, each quoted.
func tsvectorLiteral(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(tsvectorQuoter.Replace(t))
		b.WriteByte('\'')
	}
	return b.String()
}
