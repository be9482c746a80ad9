package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testkit/pgtest"
	"github.com/goagents/memorykit/pgstore"
)

// BenchmarkHostLoad drives the example Host's search route over HTTP on
// 127.0.0.1 at 1, 4, 16, 64 and 256 concurrent clients, on memorystore and
// (with a test DSN) pgstore, each level for MEMORYKIT_LOAD_SECONDS seconds
// (default 3) over MEMORYKIT_LOAD_RECORDS memories (default 5000) in one
// project. It reports per level: throughput, goodput (200 answers whose
// recall did not degrade), p50/p99 of every answer, the 503 overload
// rejections and their p99, and the PostgreSQL sessions the pool opened.
// Run it with -benchtime 1x: one pass is the measurement.
//
//	go test -run '^$' -bench BenchmarkHostLoad -benchtime 1x ./examples/host-api/
func BenchmarkHostLoad(b *testing.B) {
	secs := envInt("MEMORYKIT_LOAD_SECONDS", 3)
	records := envInt("MEMORYKIT_LOAD_RECORDS", 5000)
	backends := []struct {
		name string
		opts func(b *testing.B) Options
	}{
		{"memorystore", func(*testing.B) Options { return Options{TombstoneSecret: testTombstoneSecret} }},
		{"pgstore", func(b *testing.B) Options {
			dsn := pgtest.DSN(b)
			return Options{DSN: dsn, Schema: pgtest.Schema(b, dsn), TombstoneSecret: testTombstoneSecret}
		}},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			for b.Loop() {
				runLoad(b, be.opts(b), records, time.Duration(secs)*time.Second)
			}
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var loadWords = []string{"deploy", "region", "database", "backup", "rollout", "pager", "latency", "budget",
	"schema", "index", "cache", "queue", "tenant", "billing", "search", "audit"}

func runLoad(b *testing.B, o Options, records int, dur time.Duration) {
	dir, err := LoadDirectory("")
	if err != nil {
		b.Fatal(err)
	}
	o.Directory, o.Clock, o.Logger, o.Model, o.WorkerID = dir, clock.New(), zap.NewNop(), ScriptedModel{}, "load-host"
	ctx := context.Background()
	host, err := NewHost(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = host.Close(cctx)
	}()
	seed(b, host, records)
	srv := httptest.NewServer(host.Handler())
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	defer client.CloseIdleConnections()

	b.Logf("%-7s %9s %9s %8s %8s %8s %9s %9s", "clients", "req/s", "good/s", "p50", "p99", "503s", "p99(503)", "new_pg")
	for _, clients := range []int{1, 4, 16, 64, 256} {
		var newBefore int64
		ps, isPG := host.store.(*pgstore.Store)
		if isPG {
			newBefore = ps.PoolStats().NewConns
		}
		var (
			mu               sync.Mutex
			all, rejects     []time.Duration
			good, n, refused int
		)
		stop := time.Now().Add(dur)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				i := c
				for time.Now().Before(stop) {
					q := loadWords[i%len(loadWords)] + " " + loadWords[(i*7+3)%len(loadWords)]
					i++
					body := fmt.Sprintf(`{"query":%q}`, q)
					req, _ := http.NewRequest("POST", srv.URL+"/v1/projects/apollo/search", bytes.NewBufferString(body))
					req.Header.Set("Authorization", "Bearer "+aliceToken)
					req.Header.Set("Content-Type", "application/json")
					start := time.Now()
					resp, err := client.Do(req)
					took := time.Since(start)
					status, degraded := 0, false
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						status, degraded = resp.StatusCode, resp.Header.Get(degradedHeader) != ""
					}
					mu.Lock()
					n++
					all = append(all, took)
					switch {
					case status == http.StatusOK && !degraded:
						good++
					case status == http.StatusServiceUnavailable:
						refused++
						rejects = append(rejects, took)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		newConns := int64(0)
		if isPG {
			newConns = ps.PoolStats().NewConns - newBefore
		}
		s := dur.Seconds()
		b.Logf("%-7d %9.1f %9.1f %8s %8s %8d %9s %9d", clients, float64(n)/s, float64(good)/s,
			pct(all, 50), pct(all, 99), refused, pct(rejects, 99), newConns)
	}
}

func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[(len(d)-1)*p/100].Round(100 * time.Microsecond).String()
}

// seed writes records memories with their vectors straight into the
// Host's store, in batches.
func seed(b *testing.B, host *Host, records int) {
	ctx := context.Background()
	bc, ok := host.store.(memorykit.BatchCreator)
	if !ok {
		b.Fatal("store cannot batch")
	}
	scope, err := memorykit.ProjectScope("acme", "apollo")
	if err != nil {
		b.Fatal(err)
	}
	emb := embedder.NewLocalV2()
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}
	for start := 0; start < records; start += 100 {
		var items []memorykit.BatchItem
		var texts []memorykit.NewRecord
		for i := start; i < min(records, start+100); i++ {
			content := ""
			for j := range 10 {
				content += loadWords[(i*31+j*17)%len(loadWords)] + " "
			}
			texts = append(texts, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindNote, Key: fmt.Sprintf("note %d", i),
				Content: content + strconv.Itoa(i), Status: memorykit.StatusActive, Actor: actor})
		}
		in := make([]string, len(texts))
		for i, r := range texts {
			in[i] = memorykit.EmbeddingText(r.Key, r.Content)
		}
		vecs, err := emb.Embed(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range texts {
			items = append(items, memorykit.BatchItem{Record: r, Embedding: &memorykit.BatchEmbedding{Profile: emb.Profile(), Vector: vecs[i]}})
		}
		if _, err := bc.CreateBatch(ctx, items); err != nil {
			b.Fatal(err)
		}
	}
}
