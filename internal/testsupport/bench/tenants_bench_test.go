package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/storekit"
)

// Environment of BenchmarkTenants. It runs only when
// MEMORYKIT_BENCH_TENANTS is set, so a default -bench run stays fast.
const (
	// envTenants is the number of tenants (one project each).
	envTenants = "MEMORYKIT_BENCH_TENANTS"
	// envTenantRecords is the records per tenant (default 1000).
	envTenantRecords = "MEMORYKIT_BENCH_TENANT_RECORDS"
	// envCitusDSN is the Citus coordinator (scripts/citus-test-env.sh);
	// without it only store=postgres runs.
	envCitusDSN = "MEMORYKIT_CITUS_TEST_DSN"
	// envTenantWriters is the number of goroutines that ingest different
	// tenants at once, as several Hosts would (default 1).
	envTenantWriters = "MEMORYKIT_BENCH_TENANT_WRITERS"
)

// BenchmarkTenants loads MEMORYKIT_BENCH_TENANTS tenants of
// MEMORYKIT_BENCH_TENANT_RECORDS records each (every record active, with a
// 384-d vector, written by CreateBatch per tenant) into a fresh schema of
// single-node PostgreSQL (store=postgres) and of the Citus cluster
// (store=citus, distributed with pgstore.Distribute before the load),
// and reports, for each:
//
//   - ingest-records/s: the load's throughput, with
//     MEMORYKIT_BENCH_TENANT_WRITERS goroutines (default 1) each writing
//     whole tenants, one CreateBatch of up to 1,000 records at a time;
//   - ingest-s: the load's wall time;
//   - cold-p50-ms, cold-p99-ms: recall in SQL (Config.SQLRecall) of a
//     Scope not recalled before, one per tenant;
//   - cached-p50-ms: recall through the recall cache of a Scope whose copy
//     is loaded and current;
//   - jobs/s: four workers leasing and completing 2,000 extraction jobs
//     spread over the tenants.
//
// b.N is ignored (use -benchtime 1x):
//
//	MEMORYKIT_BENCH_TENANTS=1000 MEMORYKIT_BENCH_TENANT_RECORDS=1000 MEMORYKIT_BENCH_TENANT_WRITERS=4 \
//	  go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkTenants' -benchtime 1x -timeout 3h
func BenchmarkTenants(b *testing.B) {
	tenants, _ := strconv.Atoi(os.Getenv(envTenants))
	if tenants <= 0 {
		b.Skipf("%s is not set: the multi-tenant load runs only on request", envTenants)
	}
	perTenant := 1000
	if v, err := strconv.Atoi(os.Getenv(envTenantRecords)); err == nil && v > 0 {
		perTenant = v
	}
	writers := 1
	if v, err := strconv.Atoi(os.Getenv(envTenantWriters)); err == nil && v > 0 {
		writers = v
	}
	ws := newWriteSet(b, min(perTenant, 5000), 7)
	for _, kind := range []string{"postgres", "citus"} {
		b.Run(fmt.Sprintf("store=%s/tenants=%d/records=%d", kind, tenants, perTenant), func(b *testing.B) {
			dsn := pgtest.DSN(b)
			if kind == "citus" {
				if dsn = os.Getenv(envCitusDSN); dsn == "" {
					b.Skipf("%s is not set", envCitusDSN)
				}
			}
			ctx := context.Background()
			schema := pgtest.Schema(b, dsn)
			open := func(sqlRecall bool) *pgstore.Store {
				s, err := pgstore.Open(ctx, dsn, pgstore.Config{Clock: benchClock(), Guard: benchGuard(b), Tombstones: benchTombstones(b),
					Schema: schema, MaxConns: int32(max(8, writers+4)), SQLRecall: sqlRecall, RecallCacheBytes: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(s.Close)
				return s
			}
			if kind == "citus" {
				open(true).Close() // migrates
				pool, err := pgxpool.New(ctx, dsn)
				if err != nil {
					b.Fatal(err)
				}
				err = pgstore.Distribute(ctx, pool, schema)
				pool.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			sqlStore := open(true)
			scopes := make([]memorykit.Scope, tenants)
			for i := range scopes {
				sc, err := memorykit.ProjectScope(fmt.Sprintf("tenant-%05d", i), "main")
				if err != nil {
					b.Fatal(err)
				}
				scopes[i] = sc
			}

			// Ingest: writers goroutines take tenants in turn; each writes
			// its tenant with one CreateBatch of up to batchSize items at
			// a time.
			b.ResetTimer()
			start := time.Now()
			if err := ingestTenants(ctx, sqlStore, ws, scopes, perTenant, writers); err != nil {
				b.Fatal(err)
			}
			ingest := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(tenants*perTenant)/ingest.Seconds(), "ingest-records/s")
			b.ReportMetric(ingest.Seconds(), "ingest-s")

			// Cold recall in SQL: each tenant's Scope once.
			query := func(sc memorykit.Scope, i int) storekit.RecallQuery {
				d := ws.docs[i%len(ws.docs)]
				return storekit.RecallQuery{Scope: sc, Terms: storekit.SearchTerms(d.Content, 16), Vector: ws.vecs[(i+1)%len(ws.vecs)],
					Profile: embedder.LocalProfile, ExactLimit: 5, FullTextLimit: 10, VectorLimit: 10}
			}
			cold := make(latencies, 0, tenants)
			for i, sc := range scopes {
				t0 := time.Now()
				if _, err := sqlStore.Recall(ctx, query(sc, i)); err != nil {
					b.Fatal(err)
				}
				cold = append(cold, time.Since(t0))
			}
			cold.report(b, "cold-")

			// Cached recall: a store with the recall cache, its copies
			// loaded first; then one recall per tenant, twice over.
			cached := open(false)
			n := min(tenants, 200)
			for i := range n {
				if err := cached.WarmRecallCache(ctx, scopes[i]); err != nil {
					b.Fatal(err)
				}
				if _, err := cached.Recall(ctx, query(scopes[i], i)); err != nil {
					b.Fatal(err)
				}
			}
			warm := make(latencies, 0, 2*n)
			for round := range 2 {
				for i := range n {
					t0 := time.Now()
					if _, err := cached.Recall(ctx, query(scopes[i], i+round)); err != nil {
						b.Fatal(err)
					}
					warm = append(warm, time.Since(t0))
				}
			}
			warm.reportP50(b, "cached-")

			// Job leasing: four workers drain 2,000 jobs over the tenants.
			const jobs = 2000
			for i := range jobs {
				sc := scopes[i%len(scopes)]
				if _, err := sqlStore.EnqueueJob(ctx, storekit.NewJob{ID: storekit.ExtractionJobID(sc, fmt.Sprintf("turn-%d", i)),
					Scope: sc, Payload: "the finished turn text", MaxAttempts: 3, MaxReaps: 3}); err != nil {
					b.Fatal(err)
				}
			}
			start = time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for w := range 4 {
				wg.Add(1)
				go func(id string) {
					defer wg.Done()
					for {
						got, err := sqlStore.LeaseJobs(ctx, storekit.JobLease{WorkerID: id, TTL: time.Minute, Max: 10})
						if err != nil {
							errs <- err
							return
						}
						if len(got) == 0 {
							return
						}
						for _, j := range got {
							if _, err := sqlStore.CompleteJob(ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: id, LeaseToken: j.LeaseToken}); err != nil {
								errs <- err
								return
							}
						}
					}
				}(fmt.Sprintf("worker-%d", w))
			}
			wg.Wait()
			elapsed := time.Since(start)
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			counts, err := sqlStore.CountJobs(ctx)
			if err != nil || counts.Done != jobs {
				b.Fatalf("jobs %+v, %v", counts, err)
			}
			b.ReportMetric(jobs/elapsed.Seconds(), "jobs/s")
		})
	}
}

// ingestTenants writes perTenant records into each of scopes with writers
// goroutines, each taking the next tenant not yet taken, and returns the
// first error (the others stop at their next tenant).
func ingestTenants(ctx context.Context, s *pgstore.Store, ws writeSet, scopes []memorykit.Scope, perTenant, writers int) error {
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
		errs   = make(chan error, writers)
	)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				t := int(next.Add(1)) - 1
				if t >= len(scopes) {
					return
				}
				for i := 0; i < perTenant; i += batchSize {
					its := make([]storekit.BatchItem, 0, batchSize)
					for j := i; j < min(i+batchSize, perTenant); j++ {
						its = append(its, ws.item(scopes[t], j, true))
					}
					if _, err := s.CreateBatch(ctx, its); err != nil {
						failed.Store(true)
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// reportP50 reports the median of l as prefix+"p50-ms".
func (l latencies) reportP50(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	s := append(latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	b.ReportMetric(float64(s[(len(s)-1)/2].Microseconds())/1000, prefix+"p50-ms")
}
