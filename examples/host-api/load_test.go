package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
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
// project. MEMORYKIT_LOAD_STORES (memorystore,pgstore) and
// MEMORYKIT_LOAD_CLIENTS (1,4,16,64,256) narrow the run. It prints one
// Markdown table per store: throughput, goodput (200 answers whose recall
// did not degrade), degraded answers, p50/p99 of the successes and of the
// 503 rejections as the client saw them, the rejections' p99 inside the
// Host's handler and before it (accept, header read and scheduling, from
// the client's send to the handler's first line), and the PostgreSQL
// sessions the pool opened. Run it with -benchtime 1x: one pass is the
// measurement.
//
// A client that gets a 503 waits as its Retry-After says (between half and
// one and a half times it, at random, so the refused clients do not come
// back in one wave), as a well-behaved client does.
// MEMORYKIT_LOAD_BACKOFF=none makes every client send its next request at
// once instead: with no pause anywhere, the N clients always have N
// requests in flight, so by Little's law the mean answer time is N divided
// by the answers per second, however cheaply the Host refuses.
//
//	go test -run '^$' -bench BenchmarkHostLoad -benchtime 1x ./examples/host-api/
func BenchmarkHostLoad(b *testing.B) {
	secs := envInt("MEMORYKIT_LOAD_SECONDS", 3)
	records := envInt("MEMORYKIT_LOAD_RECORDS", 5000)
	clients := envInts("MEMORYKIT_LOAD_CLIENTS", []int{1, 4, 16, 64, 256})
	stores := os.Getenv("MEMORYKIT_LOAD_STORES")
	backoff := os.Getenv("MEMORYKIT_LOAD_BACKOFF") != "none"
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
		if stores != "" && !slices.Contains(strings.Split(stores, ","), be.name) {
			continue
		}
		b.Run(be.name, func(b *testing.B) {
			for b.Loop() {
				runLoad(b, be.opts(b), records, time.Duration(secs)*time.Second, clients, backoff)
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

func envInts(name string, def []int) []int {
	var out []int
	for _, f := range strings.Split(os.Getenv(name), ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && v > 0 {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}

var loadWords = []string{"deploy", "region", "database", "backup", "rollout", "pager", "latency", "budget",
	"schema", "index", "cache", "queue", "tenant", "billing", "search", "audit"}

// sentHeader carries the client's send time (Unix nanoseconds) to the
// server-side timer; both run in this process, on one clock.
const sentHeader = "X-Load-Sent"

// serverTimes collects, per status, how long requests spent before the
// Host's handler and inside it.
type serverTimes struct {
	mu          sync.Mutex
	pre, inside map[int][]time.Duration
}

func (s *serverTimes) reset() {
	s.mu.Lock()
	s.pre, s.inside = map[int][]time.Duration{}, map[int][]time.Duration{}
	s.mu.Unlock()
}

func (s *serverTimes) take() (pre, inside map[int][]time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pre, s.inside
}

// wrap times every request the Host answers.
func (s *serverTimes) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered := time.Now()
		sent, _ := strconv.ParseInt(r.Header.Get(sentHeader), 10, 64)
		r.Header.Del(sentHeader)
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		inside := time.Since(entered)
		s.mu.Lock()
		if sent > 0 {
			s.pre[sw.status] = append(s.pre[sw.status], entered.Sub(time.Unix(0, sent)))
		}
		s.inside[sw.status] = append(s.inside[sw.status], inside)
		s.mu.Unlock()
	})
}

// clientTally is one client goroutine's record of a level, merged when
// the level ends (no lock on the request path).
type clientTally struct {
	n, good, degraded, refused, other int
	ok, rejects                       []time.Duration
	reasons                           map[string]int
}

func runLoad(b *testing.B, o Options, records int, dur time.Duration, levels []int, backoff bool) {
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
	var st serverTimes
	srv := httptest.NewServer(st.wrap(host.Handler()))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	defer client.CloseIdleConnections()
	url := srv.URL + "/v1/projects/apollo/search"
	bodies := make([][]byte, 0, len(loadWords)*len(loadWords))
	for i := range len(loadWords) * len(loadWords) {
		q := loadWords[i%len(loadWords)] + " " + loadWords[(i*7+3)%len(loadWords)]
		bodies = append(bodies, fmt.Appendf(nil, `{"query":%q}`, q))
	}

	lines := []string{
		"| clients | req/s | goodput/s | degraded | ok p50 | ok p99 | 503s | 503 p50 | 503 p99 | 503 p99 in handler | 503 p99 before handler | new PG sessions |",
		"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
	}
	for _, clients := range levels {
		var newBefore int64
		ps, isPG := host.store.(*pgstore.Store)
		if isPG {
			newBefore = ps.PoolStats().NewConns
		}
		st.reset()
		tallies := make([]clientTally, clients)
		begin := time.Now()
		stop := begin.Add(dur)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				t := &tallies[c]
				t.reasons = map[string]int{}
				rng := rand.New(rand.NewPCG(uint64(c), uint64(clients)))
				for i := c; time.Now().Before(stop); i++ {
					req, _ := http.NewRequest("POST", url, bytes.NewReader(bodies[i%len(bodies)]))
					req.Header.Set("Authorization", "Bearer "+aliceToken)
					req.Header.Set("Content-Type", "application/json")
					start := time.Now()
					req.Header.Set(sentHeader, strconv.FormatInt(start.UnixNano(), 10))
					resp, err := client.Do(req)
					if err != nil {
						t.n++
						t.other++
						continue
					}
					var raw []byte
					if resp.StatusCode == http.StatusServiceUnavailable {
						raw, _ = io.ReadAll(resp.Body)
					} else {
						_, _ = io.Copy(io.Discard, resp.Body)
					}
					_ = resp.Body.Close()
					took := time.Since(start)
					t.n++
					switch {
					case resp.StatusCode == http.StatusOK && resp.Header.Get(degradedHeader) == "":
						t.good++
						t.ok = append(t.ok, took)
					case resp.StatusCode == http.StatusOK:
						t.degraded++
					case resp.StatusCode == http.StatusServiceUnavailable:
						t.refused++
						t.rejects = append(t.rejects, took)
						var eb errorBody
						_ = json.Unmarshal(raw, &eb)
						t.reasons[eb.Field+"/"+eb.Reason]++
						if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); backoff && err == nil && secs > 0 {
							pause := time.Duration(secs) * time.Second
							pause = pause/2 + time.Duration(rng.Int64N(int64(pause)))
							time.Sleep(min(pause, time.Until(stop)))
						}
					default:
						t.other++
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(begin).Seconds()
		var all clientTally
		all.reasons = map[string]int{}
		for _, t := range tallies {
			all.n, all.good, all.degraded, all.refused, all.other = all.n+t.n, all.good+t.good, all.degraded+t.degraded, all.refused+t.refused, all.other+t.other
			all.ok, all.rejects = append(all.ok, t.ok...), append(all.rejects, t.rejects...)
			for k, v := range t.reasons {
				all.reasons[k] += v
			}
		}
		newConns := "-"
		if isPG {
			newConns = strconv.FormatInt(ps.PoolStats().NewConns-newBefore, 10)
		}
		pre, inside := st.take()
		lines = append(lines, fmt.Sprintf("| %d | %.0f | %.0f | %d | %s | %s | %d | %s | %s | %s | %s | %s |",
			clients, float64(all.n)/elapsed, float64(all.good)/elapsed, all.degraded, pct(all.ok, 50), pct(all.ok, 99),
			all.refused, pct(all.rejects, 50), pct(all.rejects, 99),
			pct(inside[http.StatusServiceUnavailable], 99), pct(pre[http.StatusServiceUnavailable], 99), newConns))
		if all.refused > 0 || all.other > 0 {
			b.Logf("clients=%d 503 reasons %v, other answers %d, server p99 of 200s: in handler %s, before %s",
				clients, all.reasons, all.other, pct(inside[http.StatusOK], 99), pct(pre[http.StatusOK], 99))
		}
	}
	// Printed, not logged: a benchmark's log is cut after a few lines.
	fmt.Printf("%s, backoff on 503: %v\n%s\n", b.Name(), backoff, strings.Join(lines, "\n"))
}

func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	slices.Sort(d)
	v := d[(len(d)-1)*p/100]
	switch {
	case v < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(v)/float64(time.Millisecond))
	case v < time.Second:
		return fmt.Sprintf("%.0f ms", float64(v)/float64(time.Millisecond))
	}
	return v.Round(10 * time.Millisecond).String()
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
