package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testkit/pgtest"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/storekit"
)

// writeSet is a pre-generated stream of records with their vectors, so the
// write benchmarks time only the writes.
type writeSet struct {
	docs []Doc
	vecs [][]float32
}

func newWriteSet(tb testing.TB, n int, seed uint64) writeSet {
	tb.Helper()
	docs, vecs := scopeDocs(tb, scopePlan{n: n, seed: seed})
	return writeSet{docs: docs, vecs: vecs}
}

func (w writeSet) item(sc memorykit.Scope, i int, withVec bool) memorykit.BatchItem {
	d := w.docs[i%len(w.docs)]
	it := memorykit.BatchItem{Record: memorykit.NewRecord{Scope: sc, Kind: d.Kind, Key: fmt.Sprintf("%s w%d", d.Key, i),
		Content: d.Content, Status: memorykit.StatusActive, Actor: author}}
	if withVec {
		it.Embedding = &memorykit.BatchEmbedding{Profile: embedder.LocalProfile, Vector: w.vecs[i%len(w.vecs)]}
	}
	return it
}

// writeStore opens an empty store of the kind named, on a fresh schema for
// PostgreSQL.
func writeStore(b *testing.B, kind string) memorykit.Store {
	b.Helper()
	return writeStoreOn(b, kind, benchClock())
}

// writeStoreOn is writeStore on the given clock.
func writeStoreOn(b *testing.B, kind string, clk clock.Clock) memorykit.Store {
	b.Helper()
	if kind == "sqlite" {
		return openSQLiteStore(b, clk)
	}
	if kind == "memory" {
		s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: benchGuard(b), Tombstones: benchTombstones(b)})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	dsn := pgtest.DSN(b)
	s, err := pgstore.Open(context.Background(), dsn, pgstore.Config{Clock: clk, Guard: benchGuard(b), Tombstones: benchTombstones(b),
		Schema: pgtest.Schema(b, dsn), MaxConns: 4})
	if err != nil {
		pgtest.Unusable(b, "open pgstore", err)
	}
	b.Cleanup(s.Close)
	return s
}

// BenchmarkWrite measures write throughput (records/s, every record active
// with a 384-d embedding): mode=single is Create then PutEmbedding per
// record; mode=batch is CreateBatch of 1000 items carrying their
// embeddings. Each run writes b.N records into one scope of an empty store.
// sqlitestore commits with synchronous=FULL (the WAL fsynced at every
// commit: one fsync per Create, PutEmbedding or batch).
// For PostgreSQL, copy=floor is the same rows COPYed into bare tables (no
// index, no trigger, no validation) in the same run: the speed limit of
// the wire and the heap.
//
//	go test ./internal/bench -run '^$' -bench 'BenchmarkWrite' -benchtime 10000x -count 5
func BenchmarkWrite(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite", "postgres"} {
		for _, mode := range []string{"single", "batch"} {
			b.Run(fmt.Sprintf("store=%s/mode=%s", kind, mode), func(b *testing.B) {
				s := writeStore(b, kind)
				ws := newWriteSet(b, min(b.N, 20000), 42)
				sc := scopeOf(b, "writes")
				ctx := context.Background()
				b.ResetTimer()
				start := time.Now()
				if mode == "single" {
					for i := 0; i < b.N; i++ {
						it := ws.item(sc, i, true)
						rec, err := s.Create(ctx, it.Record)
						if err != nil {
							b.Fatal(err)
						}
						if err := s.PutEmbedding(ctx, memorykit.EmbeddingPut{Scope: sc, RecordID: rec.ID, Profile: it.Embedding.Profile,
							ContentHash: rec.ContentHash, Vector: it.Embedding.Vector, WorkerID: "bench"}); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					bc := s.(memorykit.BatchCreator)
					for i := 0; i < b.N; i += batchSize {
						its := make([]memorykit.BatchItem, 0, batchSize)
						for j := i; j < min(i+batchSize, b.N); j++ {
							its = append(its, ws.item(sc, j, true))
						}
						if _, err := bc.CreateBatch(ctx, its); err != nil {
							b.Fatal(err)
						}
					}
				}
				elapsed := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
			})
		}
	}
	b.Run("store=postgres/copy=floor", func(b *testing.B) {
		dsn := pgtest.DSN(b)
		ctx := context.Background()
		conn := pgtest.Connect(b, dsn)
		if err := pgvectorTypes(ctx, conn); err != nil {
			b.Fatal(err)
		}
		schema := pgtest.Schema(b, dsn)
		for _, q := range []string{
			`CREATE SCHEMA ` + schema,
			`CREATE TABLE ` + schema + `.records (id text, tenant_id text, subject_type text, subject_id text, kind text,
				key text, content text, status text, version bigint, content_hash text, effective_from timestamptz,
				created_by_kind text, created_by_id text, created_at timestamptz, updated_at timestamptz, search_tsv tsvector)`,
			`CREATE TABLE ` + schema + `.revisions (record_id text, version bigint, action text, actor_kind text,
				actor_id text, reason text, status text, content_hash text, content text, at timestamptz)`,
			`CREATE TABLE ` + schema + `.embeddings (record_id text, profile text, content_hash text, embedding vector)`,
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		ws := newWriteSet(b, min(b.N, 20000), 42)
		sc := scopeOf(b, "writes")
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i += batchSize {
			var recs, revs, embs [][]any
			for j := i; j < min(i+batchSize, b.N); j++ {
				it := ws.item(sc, j, true)
				in := it.Record
				key := memorykit.NormalizeKey(in.Key)
				id := fmt.Sprintf("mem_floor_%08d", j)
				hash := storekit.ContentHash(in.Content)
				recs = append(recs, []any{id, sc.TenantID, string(sc.SubjectType), sc.SubjectID, string(in.Kind), key, in.Content,
					"active", int64(1), hash, benchEpoch, "tool", "bench", benchEpoch, benchEpoch,
					tsvectorLiteral(memorykit.IndexTerms(key, in.Content))})
				revs = append(revs, []any{id, int64(1), "create", "tool", "bench", "", "active", hash, in.Content, benchEpoch})
				embs = append(embs, []any{id, it.Embedding.Profile, hash, pgvector.NewVector(it.Embedding.Vector)})
			}
			tx, err := conn.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct {
				table string
				cols  []string
				rows  [][]any
			}{
				{"records", []string{"id", "tenant_id", "subject_type", "subject_id", "kind", "key", "content", "status", "version",
					"content_hash", "effective_from", "created_by_kind", "created_by_id", "created_at", "updated_at", "search_tsv"}, recs},
				{"revisions", []string{"record_id", "version", "action", "actor_kind", "actor_id", "reason", "status",
					"content_hash", "content", "at"}, revs},
				{"embeddings", []string{"record_id", "profile", "content_hash", "embedding"}, embs},
			} {
				if _, err := tx.CopyFrom(ctx, pgx.Identifier{schema, c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	})
}
