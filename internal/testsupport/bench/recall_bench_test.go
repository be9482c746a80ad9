package bench

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/storekit"
)

// queriesPerScope is the size of each target scope's query set.
const queriesPerScope = 200

// recallSet is a target scope's queries with, for each, the exact top 10
// of the vector channel (the ground truth for recall@10).
type recallSet struct {
	scope   memorykit.Scope
	queries []storekit.RecallQuery
	exact   [][]string
	// ids and vecs are the scope's records and vectors, in ID order.
	ids  []string
	vecs [][]float32
}

var (
	setsMu sync.Mutex
	sets   = map[int]*recallSet{}
)

// targetSet builds (once per run) the query set of the target scope with n
// records: questions about random records of the scope, as a user would
// ask them, with the query vector from the local embedder.
func targetSet(tb testing.TB, n int) *recallSet {
	tb.Helper()
	setsMu.Lock()
	defer setsMu.Unlock()
	if s := sets[n]; s != nil {
		return s
	}
	var p scopePlan
	for _, x := range fixturePlan(tb) {
		if x.n == n && strings.HasPrefix(x.scope.SubjectID, "target-") {
			p = x
		}
	}
	docs, vecs := scopeDocs(tb, p)
	set := &recallSet{scope: p.scope, vecs: vecs}
	for i := range docs {
		set.ids = append(set.ids, recordID(p.scope, i))
	}
	g := NewGenerator(p.seed + 7777)
	texts := make([]string, queriesPerScope)
	for i := range texts {
		texts[i] = g.QueryText(docs[g.r.IntN(len(docs))])
	}
	qvecs := embedAll(tb, texts)
	for i, text := range texts {
		set.queries = append(set.queries, storekit.RecallQuery{
			Scope: p.scope, ExactKeys: storekit.ExactKeys(text, 8), Terms: storekit.SearchTerms(text, 32),
			Vector: qvecs[i], Profile: embedder.LocalProfile, ExactLimit: 10, FullTextLimit: 10, VectorLimit: 10,
		})
		set.exact = append(set.exact, exactTop(set.ids, vecs, qvecs[i], 10))
	}
	sets[n] = set
	return set
}

// exactTop ranks every vector by float64 cosine similarity, then ID.
func exactTop(ids []string, vecs [][]float32, q []float32, k int) []string {
	type scored struct {
		id string
		s  float64
	}
	qn := norm64(q)
	all := make([]scored, len(vecs))
	for i, v := range vecs {
		d := 0.0
		for j := range q {
			d += float64(q[j]) * float64(v[j])
		}
		all[i] = scored{ids[i], d / (qn * norm64(v))}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].s != all[j].s {
			return all[i].s > all[j].s
		}
		return all[i].id < all[j].id
	})
	out := make([]string, 0, k)
	for _, s := range all[:min(k, len(all))] {
		out = append(out, s.id)
	}
	return out
}

func norm64(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func recallStore(b *testing.B, store string) storekit.RecallStore {
	switch store {
	case "memory":
		return memoryFixture(b)
	case "postgres-cached":
		return cachedFixture(b)
	case "sqlite":
		return sqliteFixture(b)
	}
	s, _ := postgresFixture(b)
	return s
}

var (
	cachedOnce sync.Once
	cachedPG   *pgstore.Store
)

// cachedFixture is a second pgstore on the fixture's schema and pool, with
// the recall cache on (budget 2 GiB: every target Scope fits).
func cachedFixture(b *testing.B) *pgstore.Store {
	b.Helper()
	_, pool := postgresFixture(b)
	cachedOnce.Do(func() {
		s, err := pgstore.New(context.Background(), pool, pgstore.Config{Clock: benchClock(), Guard: benchGuard(b), Tombstones: benchTombstones(b),
			Schema: fixtureName, RecallCacheBytes: 2 << 30})
		if err != nil {
			b.Fatal(err)
		}
		cachedPG = s
	})
	if cachedPG == nil {
		b.Fatal("the cached store failed to open earlier in this run")
	}
	return cachedPG
}

// BenchmarkRecall measures one Recall (exact, full-text and, with
// vectors=true, vector channel) in a target scope of 1k, 10k or 50k records
// while 100 other scopes of 1.5k records share the store; 384-d vectors
// from the local embedder. The stores run in one process, one after the
// other, so their ratio holds on a loaded machine: memorystore, sqlitestore
// (1k and 10k only, beside 10 other scopes; its floor is memorystore's),
// pgstore
// (the SQL path) and pgstore with the recall cache on (postgres-cached,
// on the same schema and pool; its floor is the version round trip plus
// memorystore's). It reports p50 and p99 latency (ms), the same
// for the floor (floor-p50-ms, floor-p99-ms: see floorFor), measured in
// the same loop on the same query just before each recall, and, with
// vectors, the vector channel's recall@10 against an exact float64 scan.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkRecall$' -benchtime 300x -count 5
func BenchmarkRecall(b *testing.B) {
	for _, store := range []string{"memory", "sqlite", "postgres", "postgres-cached"} {
		for _, n := range targetSizes {
			for _, withVec := range []bool{true, false} {
				b.Run(fmt.Sprintf("store=%s/records=%d/vectors=%t", store, n, withVec), func(b *testing.B) {
					if store == "sqlite" && n > sqliteMaxTarget {
						b.Skip("the SQLite fixture holds target scopes up to 10k records")
					}
					rs := recallStore(b, store)
					set := targetSet(b, n)
					ctx := context.Background()
					floor := floorFor(b, store, set, withVec)
					query := func(i int) storekit.RecallQuery {
						q := set.queries[i%len(set.queries)]
						if !withVec {
							q.Vector, q.Profile = nil, ""
						}
						return q
					}
					// Warm up: the recall cache, caches, and prepared
					// statements past the planner's custom-plan phase.
					if ps, ok := rs.(*pgstore.Store); ok {
						if err := ps.WarmRecallCache(ctx, set.scope); err != nil {
							b.Fatal(err)
						}
					}
					for i := range set.queries {
						if _, err := rs.Recall(ctx, query(i)); err != nil {
							b.Fatal(err)
						}
					}
					lat := make(latencies, 0, b.N)
					flat := make(latencies, 0, b.N)
					found, total := 0, 0
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						q := query(i)
						start := time.Now()
						if err := floor(q); err != nil {
							b.Fatal(err)
						}
						flat = append(flat, time.Since(start))
						start = time.Now()
						res, err := rs.Recall(ctx, q)
						lat = append(lat, time.Since(start))
						if err != nil || res.VectorErr != nil {
							b.Fatalf("recall: %v %v", err, res.VectorErr)
						}
						if withVec {
							want := set.exact[i%len(set.queries)]
							in := map[string]bool{}
							for _, id := range want {
								in[id] = true
							}
							for _, h := range res.Vector {
								if in[h.ID] {
									found++
								}
							}
							total += len(want)
						} else if len(res.FullText) == 0 {
							b.Fatalf("query %d found nothing by full text", i)
						}
					}
					b.StopTimer()
					lat.report(b, "")
					flat.report(b, "floor-")
					if total > 0 {
						b.ReportMetric(float64(found)/float64(total), "recall@10")
					}
				})
			}
		}
	}
}

// floorFor returns the floor of one recall, what any recall over the same
// data costs at least:
//
//   - memorystore: a plain exact top-10 float32 dot-product scan over the
//     scope's vectors, held contiguously, with nothing else (with
//     vectors=false, nothing at all);
//   - pgstore with the recall cache: the Scope version's round trip, then
//     memorystore's floor;
//   - pgstore: one pipelined batch of the cheapest channel reads the schema
//     allows (the exact key lookup; the GIN lookup of records holding any
//     query term, LIMIT 10, unranked; with vectors, the top 10 of the
//     half-precision index, not re-ranked), none of recall's rules.
func floorFor(b *testing.B, store string, set *recallSet, withVec bool) func(storekit.RecallQuery) error {
	if store == "postgres-cached" {
		// The cache's own floor: the version round trip every cached
		// recall makes, then memorystore's floor.
		_, pool := postgresFixture(b)
		scan := floorFor(b, "memory", set, withVec)
		sc := set.scope
		return func(q storekit.RecallQuery) error {
			var v int64
			if err := pool.QueryRow(context.Background(), `SELECT COALESCE((SELECT version FROM `+fixtureName+`.scope_versions
				WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3), 0)`,
				sc.TenantID, string(sc.SubjectType), sc.SubjectID).Scan(&v); err != nil {
				return err
			}
			return scan(q)
		}
	}
	if store == "memory" || store == "sqlite" {
		dims := len(set.vecs[0])
		flat := make([]float32, 0, len(set.vecs)*dims)
		for _, v := range set.vecs {
			flat = append(flat, v...)
		}
		return func(q storekit.RecallQuery) error {
			if withVec {
				if top := scanTop10(flat, dims, q.Vector); top[0] < 0 {
					return fmt.Errorf("empty scan")
				}
			}
			return nil
		}
	}
	_, pool := postgresFixture(b)
	ctx := context.Background()
	tag := md5.Sum([]byte(set.scope.TenantID + "/" + string(set.scope.SubjectType) + "/" + set.scope.SubjectID))
	prefix := hex.EncodeToString(tag[:])[:12] + "."
	sc := set.scope
	return func(q storekit.RecallQuery) error {
		var lits []string
		for _, t := range q.Terms {
			lits = append(lits, "'"+strings.NewReplacer(`\`, `\\`, "'", "''").Replace(prefix+t)+"'")
		}
		batch := &pgx.Batch{}
		batch.Queue(`SELECT id FROM `+fixtureName+`.records WHERE tenant_id = $1 AND subject_type = $2
			AND subject_id = $3 AND status = 'active' AND key = ANY ($4::text[]) LIMIT 10`,
			sc.TenantID, string(sc.SubjectType), sc.SubjectID, q.ExactKeys)
		batch.Queue(`SELECT record_id FROM `+fixtureName+`.recall_text WHERE terms @@ $1::tsquery
			AND tenant_id = $2 AND subject_type = $3 AND subject_id = $4 LIMIT 10`,
			strings.Join(lits, " | "), sc.TenantID, string(sc.SubjectType), sc.SubjectID)
		if withVec {
			batch.Queue(`SELECT record_id FROM `+fixtureName+`.embeddings WHERE tenant_id = $1 AND subject_type = $2
				AND subject_id = $3 AND profile = $4 AND dims = 384 AND dims <= 1024 AND live
				ORDER BY half <=> (SELECT l2_normalize($5::vector)::halfvec) LIMIT 10`,
				sc.TenantID, string(sc.SubjectType), sc.SubjectID, q.Profile, pgvector.NewVector(q.Vector))
		}
		return pool.SendBatch(ctx, batch).Close()
	}
}

// BenchmarkRoundTrip measures a bare SELECT 1 on the fixture's pool: the
// network and protocol share of every PostgreSQL latency above.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkRoundTrip' -benchtime 2000x -count 5
func BenchmarkRoundTrip(b *testing.B) {
	_, pool := postgresFixture(b)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var one int
		err := pool.QueryRow(ctx, "SELECT 1").Scan(&one)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	lat.report(b, "")
}

// scanTop10 is the floor's exact scan: float32 dot products over a flat
// slab (the local embedder's vectors are unit length, so the dot product
// is the cosine), keeping the best ten in a small sorted array.
func scanTop10(flat []float32, dims int, q []float32) [10]int {
	var best [10]int
	var score [10]float32
	for i := range best {
		best[i], score[i] = -1, float32(math.Inf(-1))
	}
	q = q[:dims]
	for row := 0; row*dims < len(flat); row++ {
		v := flat[row*dims : (row+1)*dims]
		v = v[:len(q)]
		var s0, s1, s2, s3 float32
		for j := 0; j+4 <= len(q); j += 4 {
			s0 += q[j] * v[j]
			s1 += q[j+1] * v[j+1]
			s2 += q[j+2] * v[j+2]
			s3 += q[j+3] * v[j+3]
		}
		s := (s0 + s1) + (s2 + s3)
		if s <= score[9] {
			continue
		}
		k := 9
		for k > 0 && score[k-1] < s {
			score[k], best[k] = score[k-1], best[k-1]
			k--
		}
		score[k], best[k] = s, row
	}
	return best
}
