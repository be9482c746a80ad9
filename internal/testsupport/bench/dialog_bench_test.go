package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/storekit"
)

// The conversation-shaped fixture: dialogScopes Scopes, each one
// conversation of dialogTurns turns of about 25 words (chat words plus, in
// some turns, a named thing and a topic), queried with questions of 6 to
// 15 words about things said in them.
const (
	dialogScopes  = 10
	dialogTurns   = 600
	dialogQueries = 100 // per Scope
)

var chatWords = strings.Fields(`yeah so I think we should maybe go there again next week because it was
really nice last time and the food was good but the traffic was terrible honestly I do not know what
happened to the bus it was late again and my phone died so I could not call you sorry about that anyway
how was your weekend did you finish the book you were reading I started running in the mornings it helps
a lot with sleep my sister is moving to a new flat soon she wants help with the boxes on saturday are you
free we could grab coffee after that sounds great let me check my calendar first I have a meeting at ten`)

var questionWords = []string{"what", "when", "where", "did", "who", "how", "remind", "me", "about", "the", "tell", "again"}

// dialogFixture is the generated conversations with their embeddings and
// query sets, built once per run.
type dialogFixture struct {
	scopes  []memorykit.Scope
	items   [][]storekit.BatchItem
	queries [][]storekit.RecallQuery
}

var (
	dialogOnce sync.Once
	dialogData *dialogFixture
)

func dialogFixtureOf(tb testing.TB) *dialogFixture {
	tb.Helper()
	dialogOnce.Do(func() {
		r := rand.New(rand.NewPCG(16, 1616))
		ents := entityNames(600)
		f := &dialogFixture{}
		for s := 0; s < dialogScopes; s++ {
			sc := scopeOf(tb, fmt.Sprintf("dialog-%02d", s))
			texts := make([]string, dialogTurns)
			about := make([][2]string, dialogTurns)
			for i := range texts {
				w := make([]string, 0, 28)
				for len(w) < 20+r.IntN(10) {
					w = append(w, chatWords[r.IntN(len(chatWords))])
				}
				if r.IntN(3) > 0 {
					about[i] = [2]string{ents[r.IntN(len(ents))], enTopics[r.IntN(len(enTopics))]}
					at := r.IntN(len(w))
					w = append(w[:at], append([]string{"the", about[i][0], about[i][1]}, w[at:]...)...)
				}
				texts[i] = strings.Join(w, " ")
			}
			vecs := embedAll(tb, texts)
			var its []storekit.BatchItem
			for i, text := range texts {
				its = append(its, storekit.BatchItem{
					Record: memorykit.NewRecord{ID: fmt.Sprintf("turn_%02d_%04d", s, i), Scope: sc, Kind: memorykit.KindNote,
						Key: fmt.Sprintf("session %d turn %d", i/20, i%20), Content: text, Status: memorykit.StatusActive, Actor: author},
					Embedding: &storekit.BatchEmbedding{Profile: embedder.LocalProfile, Vector: vecs[i]},
				})
			}
			qtexts := make([]string, dialogQueries)
			for i := range qtexts {
				a := about[r.IntN(len(about))]
				for a[0] == "" {
					a = about[r.IntN(len(about))]
				}
				w := []string{questionWords[r.IntN(len(questionWords))], "the", a[0], a[1]}
				for len(w) < 6+r.IntN(10) {
					w = append(w, chatWords[r.IntN(len(chatWords))])
				}
				qtexts[i] = strings.Join(w, " ")
			}
			qvecs := embedAll(tb, qtexts)
			var qs []storekit.RecallQuery
			for i, text := range qtexts {
				qs = append(qs, storekit.RecallQuery{Scope: sc, ExactKeys: storekit.ExactKeys(text, 8),
					Terms: storekit.SearchTerms(text, 32), Vector: qvecs[i], Profile: embedder.LocalProfile,
					ExactLimit: 10, FullTextLimit: 10, VectorLimit: 10})
			}
			f.scopes = append(f.scopes, sc)
			f.items = append(f.items, its)
			f.queries = append(f.queries, qs)
		}
		dialogData = f
	})
	if dialogData == nil {
		tb.Fatal("the dialog fixture failed to build earlier in this run")
	}
	return dialogData
}

// dialogStore opens an empty store of the given kind: memorystore, pgstore
// on a fresh schema (dropped when the benchmark ends), or the same with the
// recall cache on.
func dialogStore(b *testing.B, kind string) interface {
	storekit.RecallStore
	storekit.BatchCreator
} {
	b.Helper()
	if kind == "memory" {
		s, err := memorystore.New(memorystore.Config{Clock: benchClock(), Guard: benchGuard(b), Tombstones: benchTombstones(b)})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	dsn := pgtest.DSN(b)
	cfg := pgstore.Config{Clock: benchClock(), Guard: benchGuard(b), Tombstones: benchTombstones(b), Schema: pgtest.Schema(b, dsn), MaxConns: 4}
	if kind == "postgres-cached" {
		cfg.RecallCacheBytes = 256 << 20
	} else {
		cfg.SQLRecall = true
	}
	s, err := pgstore.Open(context.Background(), dsn, cfg)
	if err != nil {
		pgtest.Unusable(b, "open pgstore", err)
	}
	b.Cleanup(s.Close)
	return s
}

// BenchmarkRecallDialog ingests the conversation-shaped fixture (10 Scopes
// of 600 turns) through CreateBatch into a fresh store, then measures
// recalls (all three channels, limits 10) over the Scopes in turn: with
// phase=ingest right after the load, with phase=analyze after a manual
// ANALYZE of the schema (pgstore; memorystore has nothing to analyze),
// with phase=writes right after the load while every third recall follows
// a write (one more turn with its vector, not timed) to the Scope it asks,
// as an agent that writes as it talks. No warm-up: the first recall of
// each Scope is measured too, so with the recall cache on, p99 includes
// the cold loads. Reports p50 and p99 (ms) of every recall, of the recalls
// after each Scope's first (warm-), of the first recall of each Scope
// (first-) and, with writes, of the recalls right after a write (written-).
// With the cache on it also reports after how many recalls every Scope
// was cached (all-cached-after-recalls; b.N+1 if never): the recalls
// before that may take the SQL path after a Scope's first.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkRecallDialog' -benchtime 500x
func BenchmarkRecallDialog(b *testing.B) {
	for _, kind := range []string{"memory", "postgres", "postgres-cached"} {
		for _, phase := range []string{"ingest", "analyze", "writes"} {
			b.Run(fmt.Sprintf("store=%s/phase=%s", kind, phase), func(b *testing.B) {
				f := dialogFixtureOf(b)
				ctx := context.Background()
				s := dialogStore(b, kind)
				for _, its := range f.items {
					if _, err := s.CreateBatch(ctx, its); err != nil {
						b.Fatal(err)
					}
				}
				if ps, ok := s.(*pgstore.Store); ok && phase == "analyze" {
					conn := pgtest.Connect(b, pgtest.DSN(b))
					if _, err := conn.Exec(ctx, "ANALYZE "+ps.Schema()+".records, "+ps.Schema()+".recall_text, "+
						ps.Schema()+".embeddings, "+ps.Schema()+".term_df"); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				lat := make(latencies, 0, b.N)
				warm := make(latencies, 0, b.N)
				var first, written latencies
				// cachedAt is the recall after which every Scope was
				// cached (pgstore with the cache on): until then some
				// recalls past a Scope's first took the SQL path.
				cache, _ := s.(*pgstore.Store)
				cachedAt := -1
				if cache == nil || kind != "postgres-cached" {
					cachedAt = 0
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q := f.queries[i%dialogScopes][(i/dialogScopes)%dialogQueries]
					wrote := phase == "writes" && i >= dialogScopes && i%3 == 0
					if wrote {
						b.StopTimer()
						sc := i % dialogScopes
						turn := f.items[sc][(i*7)%dialogTurns]
						turn.Record.ID = fmt.Sprintf("more_%02d_%06d", sc, i)
						turn.Record.Key = fmt.Sprintf("later turn %d", i)
						if _, err := s.CreateBatch(ctx, []storekit.BatchItem{turn}); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					start := time.Now()
					res, err := s.Recall(ctx, q)
					d := time.Since(start)
					lat = append(lat, d)
					if i < dialogScopes {
						first = append(first, d)
					} else {
						warm = append(warm, d)
					}
					if wrote {
						written = append(written, d)
					}
					if cachedAt < 0 {
						if _, n := cache.RecallCacheUsage(); n == dialogScopes {
							cachedAt = i + 1
						}
					}
					if err != nil || res.VectorErr != nil {
						b.Fatalf("recall: %v %v", err, res.VectorErr)
					}
				}
				b.StopTimer()
				lat.report(b, "")
				warm.report(b, "warm-")
				first.report(b, "first-")
				if phase == "writes" {
					written.report(b, "written-")
				}
				if kind == "postgres-cached" {
					if cachedAt < 0 {
						cachedAt = b.N + 1 // never within the run
					}
					b.ReportMetric(float64(cachedAt), "all-cached-after-recalls")
				}
			})
		}
	}
}
