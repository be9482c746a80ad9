package memorystore_test

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

var benchWords = []string{"deploy", "region", "database", "backup", "rollout", "pager", "latency", "budget", "schema", "index",
	"数据库", "東京", "カタログ", "监控", "告警"}

// BenchmarkRecall measures one Recall (all three channels) over a Scope of
// n active records with 64-dimensional embeddings.
func BenchmarkRecall(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, err := memorystore.New(memorystore.Config{Clock: storetest.NewClock(), Guard: storetest.NewGuard(b), Tombstones: storetest.NewTombstones(b)})
			if err != nil {
				b.Fatal(err)
			}
			scope := storetest.Scope(b, "tenant-a", "project-1")
			rng := rand.New(rand.NewSource(1))
			vec := func() []float32 {
				v := make([]float32, 64)
				for i := range v {
					v[i] = rng.Float32()*2 - 1
				}
				return v
			}
			for i := 0; i < n; i++ {
				content := ""
				for j := 0; j < 12; j++ {
					content += benchWords[rng.Intn(len(benchWords))] + " "
				}
				r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: fmt.Sprintf("key %d", i),
					Content: content, Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorTool, ID: "bench"}})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: r.ID, Profile: "bench/v1",
					ContentHash: r.ContentHash, Vector: vec(), WorkerID: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
			q := storekit.RecallQuery{Scope: scope, ExactKeys: storekit.ExactKeys("key 42", 8),
				Terms: storekit.SearchTerms("database backup in 東京 region", 32), Vector: vec(), Profile: "bench/v1",
				ExactLimit: 8, FullTextLimit: 8, VectorLimit: 8}
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Recall(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkModelWriteKeyOwner measures the model's active create (Expect
// None plus KeyOwner, which scans the Scope's records for the key) against
// a plain active create, in a Scope of n records.
func BenchmarkModelWriteKeyOwner(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, owner := range []bool{false, true} {
			b.Run(fmt.Sprintf("records=%d/key_owner=%v", n, owner), func(b *testing.B) {
				ctx := context.Background()
				s, err := memorystore.New(memorystore.Config{Clock: storetest.NewClock(), Guard: storetest.NewGuard(b), Tombstones: storetest.NewTombstones(b)})
				if err != nil {
					b.Fatal(err)
				}
				scope := storetest.Scope(b, "tenant-a", "project-1")
				user := memorykit.Actor{Kind: memorykit.ActorUser, ID: "bench"}
				model := memorykit.Actor{Kind: memorykit.ActorModel, ID: "bench"}
				for i := 0; i < n; i++ {
					if _, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: fmt.Sprintf("key %d", i),
						Content: "some content", Status: memorykit.StatusActive, Actor: user}); err != nil {
						b.Fatal(err)
					}
				}
				i := 0
				for b.Loop() {
					in := memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: fmt.Sprintf("model key %d", i),
						Content: "model content", Status: memorykit.StatusActive, Actor: model,
						Expect: &memorykit.ActiveExpectation{None: true}}
					if owner {
						in.Expect.KeyOwner = &model
					}
					if _, err := s.Create(ctx, in); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkIndexBytes reports the heap a memorystore holds per record
// (bytes/record, from runtime.MemStats.HeapAlloc after GC, before and after
// the load): 20,000 records of about 40 words, each with a 384-dimensional
// vector (1.5 KB of float32) stored through CreateBatch.
//
//	go test ./memorystore -run '^$' -bench BenchmarkIndexBytes -benchtime 1x
func BenchmarkIndexBytes(b *testing.B) {
	const n, dims = 20000, 384
	batch := storetest.Limits().MaxListSize
	ctx := context.Background()
	rng := rand.New(rand.NewSource(3))
	words := make([]string, 5000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx%d", i, rng.Intn(1000))
	}
	for b.Loop() {
		b.StopTimer()
		before := heapAfterGC()
		s, err := memorystore.New(memorystore.Config{Clock: storetest.NewClock(), Guard: storetest.NewGuard(b), Tombstones: storetest.NewTombstones(b)})
		if err != nil {
			b.Fatal(err)
		}
		scope := storetest.Scope(b, "tenant-a", "project-1")
		b.StartTimer()
		var text []byte
		for start := 0; start < n; start += batch {
			its := make([]storekit.BatchItem, 0, batch)
			for i := start; i < start+batch; i++ {
				text = text[:0]
				for j := 0; j < 40; j++ {
					text = append(text, words[rng.Intn(len(words))]...)
					text = append(text, ' ')
				}
				v := make([]float32, dims)
				for k := range v {
					v[k] = rng.Float32()*2 - 1
				}
				its = append(its, storekit.BatchItem{
					Record: memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: fmt.Sprintf("key %d", i),
						Content: string(text), Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorTool, ID: "bench"}},
					Embedding: &storekit.BatchEmbedding{Profile: "bench/v1", Vector: v},
				})
			}
			if _, err := s.CreateBatch(ctx, its); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		after := heapAfterGC()
		b.ReportMetric(float64(after-before)/n, "bytes/record")
		runtime.KeepAlive(s)
		b.StartTimer()
	}
}

// BenchmarkSnapshotBytes reports the heap a Snapshot (pgstore's recall
// cache entry: the recall index with the records it serves) holds per
// record (bytes/record, HeapAlloc after GC, before the records are made
// and after they are indexed and dropped), and what Snapshot.Bytes
// accounts for them (accounted-bytes/record): the corpus of
// BenchmarkIndexBytes, 20,000 records of about 40 words, each with a
// 384-dimensional vector.
//
//	go test ./memorystore -run '^$' -bench BenchmarkSnapshotBytes -benchtime 1x
func BenchmarkSnapshotBytes(b *testing.B) {
	const n, dims = 20000, 384
	rng := rand.New(rand.NewSource(3))
	words := make([]string, 5000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx%d", i, rng.Intn(1000))
	}
	scope := storetest.Scope(b, "tenant-a", "project-1")
	actor := memorykit.Actor{Kind: memorykit.ActorTool, ID: "bench"}
	now := storetest.NewClock().Now()
	for b.Loop() {
		b.StopTimer()
		before := heapAfterGC()
		recs := make([]memorykit.Record, n)
		embs := make([]memorystore.SnapshotEmbedding, n)
		var text []byte
		for i := range recs {
			text = text[:0]
			for j := 0; j < 40; j++ {
				text = append(text, words[rng.Intn(len(words))]...)
				text = append(text, ' ')
			}
			content := string(text)
			recs[i] = memorykit.Record{ID: storekit.NewRecordID(now), Scope: scope, Kind: memorykit.KindNote, Key: fmt.Sprintf("key %d", i),
				Content: content, Status: memorykit.StatusActive, Version: 1, ContentHash: storekit.ContentHash(content),
				EffectiveFrom: now, CreatedBy: actor, TouchedBy: actor, CreatedAt: now, UpdatedAt: now}
			v := make([]float32, dims)
			for k := range v {
				v[k] = rng.Float32()*2 - 1
			}
			embs[i] = memorystore.SnapshotEmbedding{RecordID: recs[i].ID, Profile: "bench/v1", ContentHash: recs[i].ContentHash, Vector: v}
		}
		b.StartTimer()
		snap := memorystore.NewSnapshot(storetest.NewClock(), recs, embs)
		b.StopTimer()
		recs, embs = nil, nil
		after := heapAfterGC()
		b.ReportMetric(float64(after-before)/n, "bytes/record")
		b.ReportMetric(float64(snap.Bytes())/n, "accounted-bytes/record")
		runtime.KeepAlive(recs)
		runtime.KeepAlive(embs)
		runtime.KeepAlive(snap)
		b.StartTimer()
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
