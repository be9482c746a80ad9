package bench

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pgvector/pgvector-go"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
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

func (w writeSet) item(sc memorykit.Scope, i int, withVec bool) storekit.BatchItem {
	d := w.docs[i%len(w.docs)]
	it := storekit.BatchItem{Record: memorykit.NewRecord{Scope: sc, Kind: d.Kind, Key: fmt.Sprintf("%s w%d", d.Key, i),
		Content: d.Content, Status: memorykit.StatusActive, Actor: author}}
	if withVec {
		it.Embedding = &storekit.BatchEmbedding{Profile: embedder.LocalProfile, Vector: w.vecs[i%len(w.vecs)]}
	}
	return it
}

// writeStore opens an empty store of the kind named, on a fresh schema for
// PostgreSQL.
func writeStore(b *testing.B, kind string) storekit.Store {
	b.Helper()
	return writeStoreOn(b, kind, benchClock())
}

// writeStoreOn is writeStore on the given clock.
func writeStoreOn(b *testing.B, kind string, clk clock.Clock) storekit.Store {
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
// the wire and the heap. copy=schema is the same rows COPYed into the
// tables of a real pgstore schema (every index, constraint and trigger of
// the current migrations, no validation, no pgstore code, no locks): what
// the schema costs. mode=batch over copy=schema is what pgstore's code
// adds; copy=schema over copy=floor is what the schema adds.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkWrite' -benchtime 10000x -count 5
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkWrite/store=postgres/(mode=batch|copy)' -benchtime 10000x -count 3
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
						if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: sc, RecordID: rec.ID, Profile: it.Embedding.Profile,
							ContentHash: rec.ContentHash, Vector: it.Embedding.Vector, WorkerID: "bench"}); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					bc := s.(storekit.BatchCreator)
					for i := 0; i < b.N; i += batchSize {
						its := make([]storekit.BatchItem, 0, batchSize)
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
				key := storekit.NormalizeKey(in.Key)
				id := fmt.Sprintf("mem_floor_%08d", j)
				hash := storekit.ContentHash(in.Content)
				recs = append(recs, []any{id, sc.TenantID, string(sc.SubjectType), sc.SubjectID, string(in.Kind), key, in.Content,
					"active", int64(1), hash, benchEpoch, "tool", "bench", benchEpoch, benchEpoch,
					tsvectorLiteral(storekit.IndexTerms(key, in.Content))})
				revs = append(revs, []any{id, int64(1), "create", "tool", "bench", "", "active", hash, in.Content, benchEpoch})
				embs = append(embs, []any{id, it.Embedding.Profile, hash, pgvector.NewVector(it.Embedding.Vector)})
			}
			copyBatch(b, conn, schema, []schemaCopy{
				{"records", []string{"id", "tenant_id", "subject_type", "subject_id", "kind", "key", "content", "status", "version",
					"content_hash", "effective_from", "created_by_kind", "created_by_id", "created_at", "updated_at", "search_tsv"}, recs},
				{"revisions", []string{"record_id", "version", "action", "actor_kind", "actor_id", "reason", "status",
					"content_hash", "content", "at"}, revs},
				{"embeddings", []string{"record_id", "profile", "content_hash", "embedding"}, embs},
			})
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	})
	b.Run("store=postgres/copy=schema", benchCopySchema)
}

// benchCopySchema COPYs the rows CreateBatch would write (the same
// columns, the same values: tagged lexemes in binary, generated record
// IDs, the embeddings marked live) straight into a migrated pgstore
// schema, one transaction of three COPYs per batch.
func benchCopySchema(b *testing.B) {
	dsn := pgtest.DSN(b)
	ctx := context.Background()
	schema := pgtest.Schema(b, dsn)
	s, err := pgstore.Open(ctx, dsn, pgstore.Config{Clock: benchClock(), Guard: benchGuard(b), Tombstones: benchTombstones(b),
		Schema: schema, MaxConns: 1})
	if err != nil {
		pgtest.Unusable(b, "open pgstore", err)
	}
	s.Close() // it only migrated the schema
	conn := pgtest.Connect(b, dsn)
	if err := pgvectorTypes(ctx, conn); err != nil {
		b.Fatal(err)
	}
	ws := newWriteSet(b, min(b.N, 20000), 42)
	sc := scopeOf(b, "writes")
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += batchSize {
		copyBatch(b, conn, schema, schemaBatch(ws, sc, i, min(i+batchSize, b.N)))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
}

// schemaCopy is one COPY of a batch into a pgstore schema.
type schemaCopy struct {
	table string
	cols  []string
	rows  [][]any
}

// copyBatch runs copies into schema in one transaction on conn.
func copyBatch(b *testing.B, conn *pgx.Conn, schema string, copies []schemaCopy) {
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range copies {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{schema, c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}

// schemaBatch is the COPYs of items from..to-1 of ws, as CreateBatch
// makes them: records, revisions, embeddings.
func schemaBatch(ws writeSet, sc memorykit.Scope, from, to int) []schemaCopy {
	tag := pgScopeTag(sc)
	var recs, revs, embs [][]any
	for j := from; j < to; j++ {
		it := ws.item(sc, j, true)
		in := it.Record
		key := storekit.NormalizeKey(in.Key)
		id := storekit.NewRecordID(benchEpoch)
		hash := storekit.ContentHash(in.Content)
		at := storekit.BatchItemTime(benchEpoch, j-from, to-from)
		terms := storekit.IndexTerms(key, in.Content)
		tsv := pgtype.TSVector{Lexemes: make([]pgtype.TSVectorLexeme, len(terms)), Valid: true}
		for k, t := range terms {
			tsv.Lexemes[k].Word = tag + pgLexeme(t)
		}
		recs = append(recs, []any{id, sc.TenantID, string(sc.SubjectType), sc.SubjectID, string(in.Kind), key, in.Content,
			nil, nil, "active", int64(1), hash, at, nil, string(in.Actor.Kind), in.Actor.ID, string(in.Actor.Kind), in.Actor.ID,
			at, at, tsv})
		revs = append(revs, []any{id, int64(1), "create", string(in.Actor.Kind), in.Actor.ID, "", "active", hash, in.Content,
			nil, nil, at})
		embs = append(embs, []any{id, it.Embedding.Profile, sc.TenantID, string(sc.SubjectType), sc.SubjectID, hash,
			int32(len(it.Embedding.Vector)), pgvector.NewVector(it.Embedding.Vector), at, true})
	}
	return []schemaCopy{
		{"records", []string{"id", "tenant_id", "subject_type", "subject_id", "kind", "key", "content", "metadata", "sources",
			"status", "version", "content_hash", "effective_from", "effective_until", "created_by_kind", "created_by_id",
			"touched_by_kind", "touched_by_id", "created_at", "updated_at", "search_tsv"}, recs},
		{"revisions", []string{"record_id", "version", "action", "actor_kind", "actor_id", "reason", "status",
			"content_hash", "content", "metadata", "sources", "at"}, revs},
		{"embeddings", []string{"record_id", "profile", "tenant_id", "subject_type", "subject_id", "content_hash", "dims",
			"embedding", "created_at", "live"}, embs},
	}
}

// pgScopeTag is the prefix pgstore puts before every lexeme of a Scope's
// records (pgstore's scopeTag: 12 hex digits of the md5 of the Scope).
func pgScopeTag(sc memorykit.Scope) string {
	sum := md5.Sum([]byte(sc.TenantID + "/" + string(sc.SubjectType) + "/" + sc.SubjectID))
	return hex.EncodeToString(sum[:])[:12] + "."
}

// pgLexeme is the lexeme pgstore stores for a term (pgstore's ftsTerm: a
// term over 256 bytes becomes a fixed-size surrogate).
func pgLexeme(t string) string {
	if len(t) <= 256 {
		return t
	}
	sum := sha256.Sum256([]byte(t))
	return "~" + hex.EncodeToString(sum[:])
}
