package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/storekit"
)

// BenchmarkEmbedWorker measures the embedding worker draining b.N pending
// records (active, no embedding) with the local embedder: embedworker's
// RunUntilEmpty, batches of 100 (lease, embed, one PutEmbeddings). It also
// reports embed-only/s, the local embedder alone on the same texts, to
// show how much of the time is the store's.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkEmbedWorker' -benchtime 5000x -count 5
func BenchmarkEmbedWorker(b *testing.B) {
	for _, kind := range []string{"memory", "postgres"} {
		b.Run("store="+kind, func(b *testing.B) {
			s := writeStore(b, kind)
			ws := newWriteSet(b, min(b.N, 20000), 77)
			sc := scopeOf(b, "embed")
			ctx := context.Background()
			bc := s.(storekit.BatchCreator)
			texts := make([]string, 0, b.N)
			for i := 0; i < b.N; i += batchSize {
				its := make([]storekit.BatchItem, 0, batchSize)
				for j := i; j < min(i+batchSize, b.N); j++ {
					it := ws.item(sc, j, false)
					its = append(its, it)
					texts = append(texts, storekit.EmbeddingText(storekit.NormalizeKey(it.Record.Key), it.Record.Content))
				}
				if _, err := bc.CreateBatch(ctx, its); err != nil {
					b.Fatal(err)
				}
			}
			w, err := embedworker.New(embedworker.Config{
				Store: s, Embedder: embedder.NewLocal(), Clock: clock.New(), Logger: zap.NewNop(), Events: memorykit.DiscardEvents{},
				WorkerID: "bench-embed", LeaseTTL: 5 * time.Minute, BatchSize: 100, PollInterval: 10 * time.Millisecond,
				EmbedDeadline: time.Minute, HandBackTimeout: 5 * time.Second,
				Retry:        memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
				StoreBackoff: memorykit.Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2},
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			p, err := w.RunUntilEmpty(ctx, embedworker.RebuildOptions{MaxIdleRounds: 3})
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil || p.Pending != 0 || p.Stored != b.N {
				b.Fatalf("rebuild: %v, %+v", err, p)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			start = time.Now()
			embedAll(b, texts)
			b.ReportMetric(float64(len(texts))/time.Since(start).Seconds(), "embed-only/s")
		})
	}
}

// BenchmarkEmbedIdleLease measures what an idle embedding worker's poll
// costs: one LeaseEmbeddings call (Max 100) that finds nothing, in a store
// of records=N active records that all have a current embedding. On
// PostgreSQL the profile is registered by a first lease before timing, so
// the call reads the (empty) embedding queue of schema version 4.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkEmbedIdleLease' -benchtime 2000x -count 5
func BenchmarkEmbedIdleLease(b *testing.B) {
	for _, kind := range []string{"memory", "postgres"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("store=%s/records=%d", kind, n), func(b *testing.B) {
				s := writeStore(b, kind)
				ws := newWriteSet(b, min(n, 20000), 91)
				sc := scopeOf(b, "idle")
				ctx := context.Background()
				bc := s.(storekit.BatchCreator)
				for i := 0; i < n; i += batchSize {
					its := make([]storekit.BatchItem, 0, batchSize)
					for j := i; j < min(i+batchSize, n); j++ {
						its = append(its, ws.item(sc, j, true))
					}
					if _, err := bc.CreateBatch(ctx, its); err != nil {
						b.Fatal(err)
					}
				}
				lease := storekit.EmbeddingLease{Profile: embedder.LocalProfile, WorkerID: "bench-idle", TTL: time.Minute, Max: 100}
				if tasks, err := s.LeaseEmbeddings(ctx, lease); err != nil || len(tasks) != 0 {
					b.Fatalf("first lease: %d tasks, %v", len(tasks), err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if tasks, err := s.LeaseEmbeddings(ctx, lease); err != nil || len(tasks) != 0 {
						b.Fatalf("lease: %d tasks, %v", len(tasks), err)
					}
				}
			})
		}
	}
}

// BenchmarkJobs measures extraction-job throughput through the JobStore:
// workers=1, 2 or 4 goroutines, each leasing up to 10 jobs at a time
// (LeaseJobs, FOR UPDATE SKIP LOCKED) and completing each one
// (CompleteJob, no candidates), until b.N queued jobs are done. On
// PostgreSQL, raw=floor runs the same loop in the same run with two
// bare statements (claim 10 with FOR UPDATE SKIP LOCKED, then one UPDATE
// per job to done) and no memorykit in between.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkJobs' -benchtime 4000x -count 5
func BenchmarkJobs(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite", "postgres"} {
		for _, workers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("store=%s/workers=%d", kind, workers), func(b *testing.B) {
				s := writeStore(b, kind)
				enqueue(b, s, b.N)
				ctx := context.Background()
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for w := 0; w < workers; w++ {
					wg.Add(1)
					go func(id string) {
						defer wg.Done()
						for {
							jobs, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: id, TTL: time.Minute, Max: 10})
							if err != nil {
								errs <- err
								return
							}
							if len(jobs) == 0 {
								return
							}
							for _, j := range jobs {
								if _, err := s.CompleteJob(ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: id, LeaseToken: j.LeaseToken}); err != nil {
									errs <- err
									return
								}
							}
						}
					}(fmt.Sprintf("worker-%d", w))
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				counts, err := s.CountJobs(ctx)
				if err != nil || counts.Done != b.N {
					b.Fatalf("counts %+v, %v", counts, err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			})
		}
	}
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("store=postgres/raw=floor/workers=%d", workers), func(b *testing.B) {
			dsn := pgtest.DSN(b)
			ctx := context.Background()
			schema := pgtest.Schema(b, dsn)
			admin := pgtest.Connect(b, dsn)
			if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema+`;
				CREATE TABLE `+schema+`.jobs (id text PRIMARY KEY, state text NOT NULL, leased_by text NOT NULL DEFAULT '',
					lease_expires_at timestamptz, available_at timestamptz NOT NULL, payload text NOT NULL);
				CREATE INDEX ON `+schema+`.jobs (available_at, id) WHERE state = 'queued'`); err != nil {
				b.Fatal(err)
			}
			if _, err := admin.Exec(ctx, `INSERT INTO `+schema+`.jobs (id, state, available_at, payload)
				SELECT 'job-' || g, 'queued', $1, 'the finished turn text' FROM generate_series(1, $2) g`,
				benchEpoch, b.N); err != nil {
				b.Fatal(err)
			}
			if _, err := admin.Exec(ctx, `VACUUM ANALYZE `+schema+`.jobs`); err != nil {
				b.Fatal(err)
			}
			conns := make([]*pgx.Conn, workers)
			for i := range conns {
				conns[i] = pgtest.Connect(b, dsn)
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w, conn := range conns {
				wg.Add(1)
				go func(id string, conn *pgx.Conn) {
					defer wg.Done()
					for {
						rows, err := conn.Query(ctx, `WITH picked AS (
								SELECT id FROM `+schema+`.jobs WHERE state = 'queued' AND available_at <= $1
								ORDER BY available_at, id LIMIT 10 FOR UPDATE SKIP LOCKED)
							UPDATE `+schema+`.jobs j SET state = 'leased', leased_by = $2, lease_expires_at = $1 + interval '1 minute'
							FROM picked WHERE j.id = picked.id RETURNING j.id`, benchEpoch, id)
						if err != nil {
							errs <- err
							return
						}
						ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
						if err != nil {
							errs <- err
							return
						}
						if len(ids) == 0 {
							return
						}
						for _, jid := range ids {
							if _, err := conn.Exec(ctx, `UPDATE `+schema+`.jobs SET state = 'done', payload = '', leased_by = '',
								lease_expires_at = NULL WHERE id = $1 AND leased_by = $2`, jid, id); err != nil {
								errs <- err
								return
							}
						}
					}
				}(fmt.Sprintf("raw-%d", w), conn)
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
		})
	}
}

// enqueue adds n jobs spread over 20 scopes.
func enqueue(b *testing.B, s storekit.Store, n int) {
	b.Helper()
	ctx := context.Background()
	scopes := make([]memorykit.Scope, 20)
	for i := range scopes {
		scopes[i] = scopeOf(b, fmt.Sprintf("jobs-%02d", i))
	}
	for i := 0; i < n; i++ {
		sc := scopes[i%len(scopes)]
		if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: storekit.ExtractionJobID(sc, fmt.Sprintf("turn-%d", i)),
			Scope: sc, Payload: "the finished turn text", MaxAttempts: 3, MaxReaps: 3}); err != nil {
			b.Fatal(err)
		}
	}
}
