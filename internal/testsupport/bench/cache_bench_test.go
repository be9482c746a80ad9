package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/pgstore"
)

// BenchmarkRecallCacheLoad measures a cold-Scope load of pgstore's recall
// cache: a fresh Store with the cache on (as after a Host restart) loads
// the fixture's target Scope of 10k records with 384-d vectors
// (WarmRecallCache: what a Scope's first recall starts in the background),
// reading the Scope's rows and building its index. It reports
// the load's latency (ms), the cache's accounted bytes per record, and the
// heap it actually holds per record (from HeapAlloc after GC), so the
// accounting can be checked against the heap.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkRecallCacheLoad' -benchtime 3x
func BenchmarkRecallCacheLoad(b *testing.B) {
	_, pool := postgresFixture(b)
	set := targetSet(b, 10000)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	var accounted, heap float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := pgstore.New(ctx, pool, pgstore.Config{Clock: benchClock(), Guard: benchGuard(b), Tombstones: benchTombstones(b),
			Schema: fixtureName, RecallCacheBytes: 1 << 30})
		if err != nil {
			pgtest.Unusable(b, "open pgstore", err)
		}
		before := heapAfterGC()
		b.StartTimer()
		start := time.Now()
		if err := s.WarmRecallCache(ctx, set.scope); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		used, n := s.RecallCacheUsage()
		if n != 1 {
			b.Fatalf("the cache holds %d scopes, want 1", n)
		}
		heap = float64(heapAfterGC()-before) / float64(len(set.ids))
		accounted = float64(used) / float64(len(set.ids))
		runtime.KeepAlive(s)
		s.Close()
		b.StartTimer()
	}
	b.StopTimer()
	lat.report(b, "")
	b.ReportMetric(accounted, "accounted-bytes/record")
	b.ReportMetric(heap, "heap-bytes/record")
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
