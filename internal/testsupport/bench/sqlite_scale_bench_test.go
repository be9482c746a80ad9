package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
)

// The sqlitestore scale benchmark: files of 100k (and, with
// MEMORYKIT_BENCH_SQLITE_1M=1, 1M) records in Scopes of
// scaleScopeRecords notes of about 30 words each, with and without a
// 384-d vector per record. Each file is built once per machine and kept
// in the temporary directory (memorykit-bench-sqlite-scale/), named by
// schema version, size and variant; delete the folder to rebuild.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'SQLiteScale' -benchtime 5x
//
// Per file it reports: Open time and the heap Open leaves; the first
// recall of one Scope after Open; warm recall p50 against memorystore
// holding the same Scope; batch write throughput with synchronous=FULL;
// the file's bytes per record. The open benchmark fails when Open takes
// over openTarget on average or leaves over heapTarget of heap.
const (
	scaleScopeRecords = 10_000
	scaleDims         = 384
	scaleBatch        = 100
)

// The targets the open benchmark checks at every size.
const (
	openTarget = 500 * time.Millisecond
	heapTarget = 64 << 20
)

// scaleLayout tells apart cached files of one schema version whose
// migrations changed before release; bump it with such a change.
const scaleLayout = "d"

// scaleSizes are the record counts benchmarked.
func scaleSizes() []int {
	sizes := []int{1_000, 100_000}
	if os.Getenv("MEMORYKIT_BENCH_SQLITE_1M") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	return sizes
}

// scaleVocab is the notes' vocabulary: 5,000 made-up words.
var scaleVocab = func() []string {
	rng := rand.New(rand.NewSource(7))
	out := make([]string, 5000)
	for i := range out {
		n := 3 + rng.Intn(7)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteByte(byte('a' + rng.Intn(26)))
		}
		out[i] = b.String()
	}
	return out
}()

// scaleNote is note i of Scope sc: about 30 words, deterministic.
func scaleNote(rng *rand.Rand) string {
	n := 25 + rng.Intn(11)
	w := make([]string, n)
	for i := range w {
		w[i] = scaleVocab[rng.Intn(len(scaleVocab))]
	}
	return strings.Join(w, " ")
}

func scaleVector(rng *rand.Rand) []float32 {
	v := make([]float32, scaleDims)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

// scaleItems are the batch items of records [from, to) of Scope number sc.
func scaleItems(tb testing.TB, sc, from, to int, vectors bool) []storekit.BatchItem {
	scope := scopeOf(tb, fmt.Sprintf("scale-%04d", sc))
	rng := rand.New(rand.NewSource(int64(sc)*1_000_003 + int64(from)))
	its := make([]storekit.BatchItem, 0, to-from)
	for i := from; i < to; i++ {
		it := storekit.BatchItem{Record: memorykit.NewRecord{ID: fmt.Sprintf("mem_scale_%04d_%05d", sc, i), Scope: scope,
			Kind: memorykit.KindFact, Key: "note-" + strconv.Itoa(i), Content: scaleNote(rng), Status: memorykit.StatusActive, Actor: author}}
		if vectors {
			it.Embedding = &storekit.BatchEmbedding{Profile: "bench/v384", Vector: scaleVector(rng)}
		}
		its = append(its, it)
	}
	return its
}

// scaleFile returns the path of the file of n records, building it when
// it is not there yet.
func scaleFile(b *testing.B, n int, vectors bool) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "memorykit-bench-sqlite-scale")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	name := fmt.Sprintf("v%d%s-%d-vec%v.db", sqlitestore.SchemaVersion, scaleLayout, n, vectors)
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path + ".done"); err == nil {
		return path
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(path + suffix)
	}
	start := time.Now()
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: benchClock(), Guard: benchGuard(b),
		Tombstones: benchTombstones(b), Sync: sqlitestore.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	per := min(n, scaleScopeRecords)
	for sc := 0; sc < n/per; sc++ {
		for from := 0; from < per; from += batchSize {
			if _, err := s.CreateBatch(context.Background(), scaleItems(b, sc, from, min(from+batchSize, per), vectors)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path+".done", nil, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %s in %v", name, time.Since(start).Round(time.Millisecond))
	return path
}

// fileStats is the file's record count and its bytes (with its WAL).
func fileStats(b *testing.B, path string) (int, int64) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, suffix := range []string{"", "-wal"} {
		if st, err := os.Stat(path + suffix); err == nil {
			size += st.Size()
		}
	}
	return n, size
}

func openScale(b *testing.B, path string) *sqlitestore.Store {
	b.Helper()
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: benchClock(), Guard: benchGuard(b),
		Tombstones: benchTombstones(b), Sync: sqlitestore.SyncFull})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// cpuNow is the CPU time (user and system) the process has used: on a
// machine shared with other work it tells the cost apart from the wait.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// scaleQuery is the recall of a few words of the vocabulary in Scope 0.
func scaleQuery(tb testing.TB, rng *rand.Rand, vectors bool) storekit.RecallQuery {
	q := storekit.RecallQuery{Scope: scopeOf(tb, "scale-0000"), ExactLimit: 5, FullTextLimit: 20, VectorLimit: 20,
		Terms: []string{scaleVocab[rng.Intn(len(scaleVocab))], scaleVocab[rng.Intn(len(scaleVocab))], scaleVocab[rng.Intn(len(scaleVocab))]}}
	if vectors {
		q.Profile, q.Vector = "bench/v384", scaleVector(rng)
	}
	return q
}

func BenchmarkSQLiteScale(b *testing.B) {
	for _, n := range scaleSizes() {
		for _, vectors := range []bool{false, true} {
			b.Run(fmt.Sprintf("records=%d/vectors=%v", n, vectors), func(b *testing.B) { benchScale(b, n, vectors) })
		}
	}
}

func benchScale(b *testing.B, n int, vectors bool) {
	path := scaleFile(b, n, vectors)
	ctx := context.Background()
	b.Run("open", func(b *testing.B) {
		count, size := fileStats(b, path)
		var heap uint64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			before := heapNow()
			b.StartTimer()
			s := openScale(b, path)
			b.StopTimer()
			if after := heapNow(); after > before {
				heap = max(heap, after-before)
			}
			_ = s.Close()
			b.StartTimer()
		}
		perOpen := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
		b.ReportMetric(float64(heap)/(1<<20), "heap-MB-after-open")
		// The targets: Open reads no rows, so neither its time nor its
		// heap grows with the file.
		if perOpen > openTarget {
			b.Errorf("Open took %v on average; the target is %v", perOpen, openTarget)
		}
		if heap > heapTarget {
			b.Errorf("Open left %d MB of heap; the target is %d MB", heap>>20, heapTarget>>20)
		}
		b.ReportMetric(float64(size)/float64(count), "file-B/record")
	})
	b.Run("first-recall", func(b *testing.B) {
		rng := rand.New(rand.NewSource(3))
		var total, cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s := openScale(b, path)
			q := scaleQuery(b, rng, vectors)
			b.StartTimer()
			t0, c0 := time.Now(), cpuNow()
			if _, err := s.Recall(ctx, q); err != nil {
				b.Fatal(err)
			}
			total += time.Since(t0)
			cpu += cpuNow() - c0
			b.StopTimer()
			_ = s.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/first-recall")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/first-recall")
	})
	b.Run("warm-recall", func(b *testing.B) {
		s := openScale(b, path)
		defer s.Close()
		mem, err := memorystore.New(memorystore.Config{Clock: benchClock(), Guard: benchGuard(b), Tombstones: benchTombstones(b)})
		if err != nil {
			b.Fatal(err)
		}
		per := min(n, scaleScopeRecords)
		for from := 0; from < per; from += batchSize {
			if _, err := mem.CreateBatch(ctx, scaleItems(b, 0, from, min(from+batchSize, per), vectors)); err != nil {
				b.Fatal(err)
			}
		}
		rng := rand.New(rand.NewSource(5))
		if _, err := s.Recall(ctx, scaleQuery(b, rng, vectors)); err != nil {
			b.Fatal(err)
		}
		const rounds = 200
		var sq, ms []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for r := 0; r < rounds; r++ {
				q := scaleQuery(b, rng, vectors)
				t0 := time.Now()
				a, err := s.Recall(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				sq = append(sq, time.Since(t0))
				t0 = time.Now()
				m, err := mem.Recall(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				ms = append(ms, time.Since(t0))
				if len(a.FullText) != len(m.FullText) || len(a.Vector) != len(m.Vector) {
					b.Fatalf("sqlitestore and memorystore disagree: %d/%d full-text, %d/%d vector hits",
						len(a.FullText), len(m.FullText), len(a.Vector), len(m.Vector))
				}
			}
		}
		p50 := func(d []time.Duration) float64 {
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			return float64(d[len(d)/2].Microseconds())
		}
		b.ReportMetric(p50(sq), "sqlite-p50-µs")
		b.ReportMetric(p50(ms), "memorystore-p50-µs")
		b.ReportMetric(p50(sq)/max(p50(ms), 1), "p50-ratio")
	})
	b.Run("batch-write", func(b *testing.B) {
		s := openScale(b, path)
		defer s.Close()
		// Each run writes to a Scope of its own, with ids the store makes.
		scope := scopeOf(b, fmt.Sprintf("write-%d", time.Now().UnixNano()))
		var cpu time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			its := scaleItems(b, 1, i*scaleBatch, (i+1)*scaleBatch, vectors)
			for j := range its {
				its[j].Record.ID, its[j].Record.Scope = "", scope
			}
			b.StartTimer()
			c0 := cpuNow()
			if _, err := s.CreateBatch(ctx, its); err != nil {
				b.Fatal(err)
			}
			cpu += cpuNow() - c0
		}
		b.ReportMetric(float64(b.N*scaleBatch)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*scaleBatch), "cpu-µs/record")
	})
}
