package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/storekit"
)

// BenchmarkHostLoad drives the example Host's search route over HTTP on
// 127.0.0.1 at 1, 4, 16, 64 and 256 concurrent clients, on memorystore and
// (with a test DSN) pgstore, each level for MEMORYKIT_LOAD_SECONDS seconds
// (default 3) over MEMORYKIT_LOAD_RECORDS memories (default 5000) in one
// project. MEMORYKIT_LOAD_STORES (floor,memorystore,pgstore) and
// MEMORYKIT_LOAD_CLIENTS (1,4,16,64,256) narrow the run. It prints one
// Markdown table per store: throughput, goodput (200 answers whose recall
// did not degrade), degraded answers, p50/p99 of the successes and of the
// 503 rejections as the client saw them, the rejections' p99 without the
// level's first requests (the opening burst: every client at once on a
// new connection) and from the moment the client had its connection
// (without the client's own dial),
// their p99 inside the Host's handler and before it (accept, header read
// and scheduling, from the client's send to the handler's first line),
// and the PostgreSQL sessions the pool opened. Run it with -benchtime 1x:
// one pass is the measurement.
//
// It first measures the floor (runFloor): the same levels against a server
// that refuses every request at once, no Host behind it. Its 503 columns
// are what any Go HTTP server gets on this machine with the clients beside
// it, the bound under the Host's. MEMORYKIT_LOAD_STORES=floor runs only it.
// MEMORYKIT_LOAD_WARM=1 has every client open its connection with one
// untimed request before each level, so the level's first requests go on
// established connections; MEMORYKIT_LOAD_CLIENT=raw uses a leaner client
// (rawDoer) instead of net/http's, to see the load generator's share.
//
// MEMORYKIT_LOAD_STORES=storm runs only the retry-storm measurement
// (runStorm, storm_test.go): a well-behaved tenant's goodput alone and
// during another tenant's storm that ignores Retry-After, interleaved, and
// the storm's own goodput against the best level:
//
//	MEMORYKIT_LOAD_STORES=storm MEMORYKIT_LOAD_SECONDS=2 go test -run '^$' -bench 'BenchmarkHostLoad/storm' -benchtime 1x ./examples/host-api/
//
// MEMORYKIT_LOAD_WORK_POOL=off serves the reads without the Host's work
// pool (workpool.go) and MEMORYKIT_LOAD_WORKER_NICE=n lowers the pool's
// threads by n instead of hostWorkerNice, for A/B runs in one binary;
// MEMORYKIT_LOAD_HOST_GOGC=n sets the Host's GC percentage.
//
// The clients run in a child process (see TestHostLoadChild), so that the
// Host's Go scheduler has only the Host's goroutines, as in production;
// client-side timings are taken in the child, the server-side columns in
// this process. MEMORYKIT_LOAD_PROCESS=in runs the clients as goroutines
// of this process instead, where they and the Host share one scheduler.
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
	backoff := os.Getenv(loadBackoffEnv) != "none"
	inProcess := os.Getenv("MEMORYKIT_LOAD_PROCESS") == "in"
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
	if stores == "" || slices.Contains(strings.Split(stores, ","), "floor") {
		b.Run("floor", func(b *testing.B) {
			for b.Loop() {
				runFloor(b, time.Duration(secs)*time.Second, clients, backoff, inProcess)
			}
		})
	}
	if slices.Contains(strings.Split(stores, ","), "storm") {
		b.Run("storm", func(b *testing.B) {
			for b.Loop() {
				runStorm(b, envInt("MEMORYKIT_LOAD_STORM_RECORDS", 3000), time.Duration(secs)*time.Second)
			}
		})
	}
	for _, be := range backends {
		if stores != "" && !slices.Contains(strings.Split(stores, ","), be.name) {
			continue
		}
		b.Run(be.name, func(b *testing.B) {
			for b.Loop() {
				runLoad(b, be.opts(b), records, time.Duration(secs)*time.Second, clients, backoff, inProcess)
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
// server-side timer. Both read the wall clock of one machine, whether the
// clients run in this process or in a child.
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
// the level ends (no lock on the request path). Its fields are exported
// so that a child process can send it to the parent as JSON.
type clientTally struct {
	N, Good, Degraded, Refused, Other int
	OK, Rejects                       []time.Duration
	// FirstRejects are the 503s among the clients' first requests: the
	// burst that opens a level, all clients at once on new connections.
	// Rejects holds them too.
	FirstRejects []time.Duration
	// RejectsFromConn are the 503s timed from the moment the client had
	// its connection (httptrace GotConn) instead of from before the call:
	// without the client's own dial and the wait for its dial goroutine,
	// which in the opening burst queue behind every other client's in the
	// client process, before the Host can see the request.
	RejectsFromConn []time.Duration
	// RejectSend and RejectWait split each 503 as the client saw it: from
	// taking the start time to having written the request (the client's
	// own delay), and from there to the answer's first byte (the kernel
	// and the Host).
	RejectSend, RejectWait []time.Duration
	Reasons                map[string]int
	// Elapsed is the level's wall time, set on the merged tally.
	Elapsed time.Duration
}

// merge adds t to a.
func (a *clientTally) merge(t *clientTally) {
	a.N, a.Good, a.Degraded, a.Refused, a.Other = a.N+t.N, a.Good+t.Good, a.Degraded+t.Degraded, a.Refused+t.Refused, a.Other+t.Other
	a.OK, a.Rejects, a.FirstRejects = append(a.OK, t.OK...), append(a.Rejects, t.Rejects...), append(a.FirstRejects, t.FirstRejects...)
	a.RejectSend, a.RejectWait = append(a.RejectSend, t.RejectSend...), append(a.RejectWait, t.RejectWait...)
	a.RejectsFromConn = append(a.RejectsFromConn, t.RejectsFromConn...)
	if a.Reasons == nil {
		a.Reasons = map[string]int{}
	}
	for k, v := range t.Reasons {
		a.Reasons[k] += v
	}
}

// loadBodies are the search bodies the clients send in turn.
func loadBodies() [][]byte {
	bodies := make([][]byte, 0, len(loadWords)*len(loadWords))
	for i := range len(loadWords) * len(loadWords) {
		q := loadWords[i%len(loadWords)] + " " + loadWords[(i*7+3)%len(loadWords)]
		bodies = append(bodies, fmt.Appendf(nil, `{"query":%q}`, q))
	}
	return bodies
}

// driveLevel runs one level: clients goroutines search url for dur, each
// sending its next request when the last is answered (after the pause a
// 503's Retry-After asks for, when backoff is set). Every timing is taken
// here, on the client's side. The clients use net/http's client unless
// MEMORYKIT_LOAD_CLIENT=raw (see rawDoer); with MEMORYKIT_LOAD_WARM=1
// every client opens its connection with one untimed request first.
func driveLevel(url string, clients int, dur time.Duration, backoff bool) clientTally {
	newDoer := netHTTPDoers(url)
	if os.Getenv(loadClientEnv) == "raw" {
		newDoer = rawDoers(url)
	}
	bodies := loadBodies()
	tallies := make([]clientTally, clients)
	doers := make([]loadDoer, clients)
	for c := range doers {
		doers[c] = newDoer()
	}
	defer func() {
		for _, d := range doers {
			d.close()
		}
	}()
	if os.Getenv(loadWarmEnv) == "1" {
		var warm sync.WaitGroup
		for _, d := range doers {
			warm.Go(d.warm)
		}
		warm.Wait()
	}
	begin := time.Now()
	stop := begin.Add(dur)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			t := &tallies[c]
			t.Reasons = map[string]int{}
			rng := rand.New(rand.NewPCG(uint64(c), uint64(clients)))
			for i := c; time.Now().Before(stop); i++ {
				r, err := doers[c].do(bodies[i%len(bodies)])
				t.N++
				if err != nil {
					t.Other++
					continue
				}
				took := r.end.Sub(r.start)
				switch {
				case r.status == http.StatusOK && !r.degraded:
					t.Good++
					t.OK = append(t.OK, took)
				case r.status == http.StatusOK:
					t.Degraded++
				case r.status == http.StatusServiceUnavailable:
					t.Refused++
					t.Rejects = append(t.Rejects, took)
					if i == c {
						t.FirstRejects = append(t.FirstRejects, took)
					}
					if !r.gotConn.IsZero() {
						t.RejectsFromConn = append(t.RejectsFromConn, r.end.Sub(r.gotConn))
					}
					if !r.wrote.IsZero() && !r.first.IsZero() {
						t.RejectSend, t.RejectWait = append(t.RejectSend, r.wrote.Sub(r.start)), append(t.RejectWait, r.first.Sub(r.wrote))
					}
					var eb errorBody
					_ = json.Unmarshal(r.body, &eb)
					t.Reasons[eb.Field+"/"+eb.Reason]++
					if secs, err := strconv.Atoi(r.retryAfter); backoff && err == nil && secs > 0 {
						pause := time.Duration(secs) * time.Second
						pause = pause/2 + time.Duration(rng.Int64N(int64(pause)))
						time.Sleep(min(pause, time.Until(stop)))
					}
				default:
					t.Other++
				}
			}
		})
	}
	wg.Wait()
	all := clientTally{Reasons: map[string]int{}, Elapsed: time.Since(begin)}
	for i := range tallies {
		all.merge(&tallies[i])
	}
	return all
}

// loadResult is one answered search as a client saw it.
type loadResult struct {
	status     int
	degraded   bool
	retryAfter string
	// body is kept for a 503 only.
	body []byte
	// start is before the call; gotConn when the client had its
	// connection; wrote when the request was written; first at the
	// answer's first byte; end when the answer was read.
	start, gotConn, wrote, first, end time.Time
}

// loadDoer is one client's way of sending a search.
type loadDoer interface {
	do(body []byte) (loadResult, error)
	// warm opens the client's connection with one untimed request.
	warm()
	close()
}

// httpDoer sends through a net/http client shared by every client of the
// level, with httptrace for the timings.
type httpDoer struct {
	client      *http.Client
	url, health string
}

// netHTTPDoers returns a constructor of clients that share one net/http
// client (its pool keeps a connection per client).
func netHTTPDoers(url string) func() loadDoer {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	health := strings.Replace(url, "/v1/projects/apollo/search", "/healthz", 1)
	return func() loadDoer { return &httpDoer{client: client, url: url, health: health} }
}

func (d *httpDoer) do(body []byte) (loadResult, error) {
	var r loadResult
	req, _ := http.NewRequest("POST", d.url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Content-Type", "application/json")
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { r.gotConn = time.Now() },
		WroteRequest:         func(httptrace.WroteRequestInfo) { r.wrote = time.Now() },
		GotFirstResponseByte: func() { r.first = time.Now() },
	}))
	r.start = time.Now()
	req.Header.Set(sentHeader, strconv.FormatInt(r.start.UnixNano(), 10))
	resp, err := d.client.Do(req)
	if err != nil {
		return r, err
	}
	_ = r.read(resp)
	return r, nil
}

// read takes the answer: its body when it is a 503 (discarded otherwise),
// its status and headers, and the time it was read.
func (r *loadResult) read(resp *http.Response) error {
	var err error
	if resp.StatusCode == http.StatusServiceUnavailable {
		r.body, err = io.ReadAll(resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	_ = resp.Body.Close()
	r.end = time.Now()
	r.status, r.degraded, r.retryAfter = resp.StatusCode, resp.Header.Get(degradedHeader) != "", resp.Header.Get("Retry-After")
	return err
}

func (d *httpDoer) warm() {
	if resp, err := d.client.Get(d.health); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

func (d *httpDoer) close() { d.client.CloseIdleConnections() }

// rawDoer is a leaner client (MEMORYKIT_LOAD_CLIENT=raw): its own TCP
// connection, the request written from one reused buffer and the answer
// parsed by http.ReadResponse, on the client's goroutine, without the
// transport's connection pool and its two goroutines per connection. It
// takes less of the CPU the Host shares with it on one machine, so it
// says how much of an end-to-end time was the load generator's.
type rawDoer struct {
	addr, host string
	conn       net.Conn
	br         *bufio.Reader
	buf        []byte
}

// rawDoers returns a constructor of raw clients of url's host.
func rawDoers(url string) func() loadDoer {
	host := strings.TrimPrefix(url, "http://")
	host = host[:strings.IndexByte(host, '/')]
	return func() loadDoer { return &rawDoer{addr: host, host: host} }
}

func (d *rawDoer) connect() error {
	if d.conn != nil {
		return nil
	}
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		return err
	}
	d.conn, d.br = c, bufio.NewReader(c)
	return nil
}

func (d *rawDoer) drop() {
	if d.conn != nil {
		_ = d.conn.Close()
		d.conn = nil
	}
}

func (d *rawDoer) do(body []byte) (loadResult, error) {
	var r loadResult
	r.start = time.Now()
	if err := d.connect(); err != nil {
		return r, err
	}
	r.gotConn = time.Now()
	// The same bound as the net/http client's Timeout.
	_ = d.conn.SetDeadline(r.gotConn.Add(10 * time.Second))
	d.buf = fmt.Appendf(d.buf[:0], "POST /v1/projects/apollo/search HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\n%s: %d\r\nContent-Length: %d\r\n\r\n", d.host, aliceToken, sentHeader, r.start.UnixNano(), len(body))
	d.buf = append(d.buf, body...)
	if _, err := d.conn.Write(d.buf); err != nil {
		d.drop()
		return r, err
	}
	r.wrote = time.Now()
	if _, err := d.br.Peek(1); err != nil {
		d.drop()
		return r, err
	}
	r.first = time.Now()
	resp, err := http.ReadResponse(d.br, nil)
	if err != nil {
		d.drop()
		return r, err
	}
	err = r.read(resp)
	if err != nil || resp.Close {
		d.drop()
	}
	return r, err
}

func (d *rawDoer) warm() {
	if d.connect() != nil {
		return
	}
	_ = d.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(d.conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", d.host); err != nil {
		d.drop()
		return
	}
	resp, err := http.ReadResponse(d.br, nil)
	if err != nil {
		d.drop()
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.Close {
		d.drop()
	}
}

func (d *rawDoer) close() { d.drop() }

// Out-of-process clients. By default BenchmarkHostLoad runs its clients
// in a child process: the test binary re-executed with only
// TestHostLoadChild selected and the Host's URL in loadChildEnv. The
// parent writes a level ("<clients> <duration in ns>") on the child's
// stdin, the child drives it and prints the merged tally as one JSON line
// after loadResultPrefix on stdout, then waits for the next level; it
// exits when its stdin closes. MEMORYKIT_LOAD_PROCESS=in keeps the clients
// in the benchmark's process instead, sharing the Host's Go scheduler.
const (
	loadChildEnv     = "MEMORYKIT_LOAD_CHILD_URL"
	loadBackoffEnv   = "MEMORYKIT_LOAD_BACKOFF"
	loadWarmEnv      = "MEMORYKIT_LOAD_WARM"
	loadClientEnv    = "MEMORYKIT_LOAD_CLIENT"
	loadResultPrefix = "load-level "
	// loadHostProcsEnv, when set, is the GOMAXPROCS of the benchmark's
	// process while it serves the Host, instead of the one serve would
	// choose (serverProcs); the limits stay derived from the CPUs.
	loadHostProcsEnv = "MEMORYKIT_LOAD_HOST_PROCS"
	// loadWorkerNiceEnv, when set, is how much the Host's work pool lowers
	// its threads' priority instead of hostWorkerNice (0: not at all).
	loadWorkerNiceEnv = "MEMORYKIT_LOAD_WORKER_NICE"
	// loadWorkPoolEnv=off serves reads without the work pool, on the HTTP
	// server's goroutines (the Host before it), for A/B runs.
	loadWorkPoolEnv = "MEMORYKIT_LOAD_WORK_POOL"
	// loadHostGOGCEnv, when set, is the GC percentage of the benchmark's
	// process while it serves the Host (the client process keeps its
	// own), to weigh fewer GC pauses against memory.
	loadHostGOGCEnv = "MEMORYKIT_LOAD_HOST_GOGC"
)

// TestHostLoadChild is the client side of BenchmarkHostLoad when it runs
// out of process; run directly, it does nothing.
func TestHostLoadChild(t *testing.T) {
	url := os.Getenv(loadChildEnv)
	if url == "" {
		t.Skip("the client process of BenchmarkHostLoad")
	}
	backoff := os.Getenv(loadBackoffEnv) != "none"
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var clients int
		var dur time.Duration
		if _, err := fmt.Sscan(in.Text(), &clients, &dur); err != nil {
			t.Fatalf("level %q: %v", in.Text(), err)
		}
		out, err := json.Marshal(driveLevel(url, clients, dur, backoff))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s%s\n", loadResultPrefix, out)
	}
	if err := in.Err(); err != nil {
		t.Fatal(err)
	}
}

// loadChild is the parent's handle on the client process.
type loadChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startLoadChild(url string) (*loadChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^TestHostLoadChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadChildEnv+"="+url)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &loadChild{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// level has the child drive one level and returns its tally.
func (c *loadChild) level(clients int, dur time.Duration) (clientTally, error) {
	if _, err := fmt.Fprintf(c.in, "%d %d\n", clients, int64(dur)); err != nil {
		return clientTally{}, err
	}
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			return clientTally{}, fmt.Errorf("load child: %w", err)
		}
		if rest, ok := strings.CutPrefix(line, loadResultPrefix); ok {
			var t clientTally
			err := json.Unmarshal([]byte(rest), &t)
			return t, err
		}
	}
}

// close ends the child and waits for it.
func (c *loadChild) close() error {
	_ = c.in.Close()
	_, _ = io.Copy(io.Discard, c.out)
	return c.cmd.Wait()
}

func runLoad(b *testing.B, o Options, records int, dur time.Duration, levels []int, backoff, inProcess bool) {
	dir, err := LoadDirectory("")
	if err != nil {
		b.Fatal(err)
	}
	o.Directory, o.Clock, o.Logger, o.Model, o.WorkerID = dir, clock.New(), zap.NewNop(), ScriptedModel{}, "load-host"
	if v, err := strconv.Atoi(os.Getenv(loadWorkerNiceEnv)); err == nil {
		o.workerNice = &v
	}
	o.noWorkPool = os.Getenv(loadWorkPoolEnv) == "off"
	ctx := context.Background()
	host, err := NewHost(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	if v, err := strconv.Atoi(os.Getenv(loadHostGOGCEnv)); err == nil {
		defer debug.SetGCPercent(debug.SetGCPercent(v))
	}
	// The Ps serve gives the Host (serverProcs), or the knob's; the
	// limits stay those NewHost derived from the CPUs.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(envInt(loadHostProcsEnv, host.procs)))
	defer func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = host.Close(cctx)
	}()
	seed(b, host, records)
	var newConns func() int64
	if ps, ok := host.store.(*pgstore.Store); ok {
		newConns = func() int64 { return ps.PoolStats().NewConns }
	}
	// Read after the levels: the pool's threads lower themselves as they
	// start.
	about := func() string {
		if host.pool == nil {
			return "work pool: off"
		}
		return fmt.Sprintf("work pool: %d threads lowered, %d not", host.pool.lowered.Load(), host.pool.lowerFailed.Load())
	}
	measureLevels(b, host.Handler(), newConns, dur, levels, backoff, inProcess, about)
}

// runFloor measures what any Go HTTP server pays on this machine for the
// same load: a server with the Host's GOMAXPROCS whose every answer to
// the search route is the Host's overloaded 503 (Retry-After and the JSON
// error shape), written at once, with no authentication, no body read and
// no store. Its columns are the floor under the Host's 503 columns: the
// accepts, reads and writes on both sides and the child's and this
// process's scheduling on this machine's cores.
func runFloor(b *testing.B, dur time.Duration, levels []int, backoff, inProcess bool) {
	cpus := runtime.GOMAXPROCS(0)
	procs := serverProcs(cpus, hostLimits(cpus, true, time.Second), true)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(envInt(loadHostProcsEnv, procs)))
	refuse := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeErr(w, overloadedAt("reads"))
	})
	measureLevels(b, refuse, nil, dur, levels, backoff, inProcess, func() string { return "refusing every request" })
}

// countingServer starts a test server for handler that counts the TCP
// connections it accepts in conns.
func countingServer(handler http.Handler, conns *atomic.Int64) *httptest.Server {
	srv := httptest.NewUnstartedServer(handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	return srv
}

// measureLevels serves handler on a test server, drives every level at
// it (in the child process unless inProcess) and prints the level table.
// newConns, when not nil, reads the PostgreSQL pool's opened sessions;
// about describes the server on the table's title line.
func measureLevels(b *testing.B, handler http.Handler, newConns func() int64, dur time.Duration, levels []int, backoff, inProcess bool, about func() string) {
	var st serverTimes
	var conns atomic.Int64
	srv := countingServer(st.wrap(handler), &conns)
	defer srv.Close()
	url := srv.URL + "/v1/projects/apollo/search"
	var child *loadChild
	var err error
	if !inProcess {
		if child, err = startLoadChild(url); err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := child.close(); err != nil {
				b.Errorf("load child: %v", err)
			}
		}()
	}

	lines := []string{
		"| clients | req/s | goodput/s | degraded | ok p50 | ok p99 | 503s | 503 p50 | 503 p99 | 503 p99 after the first requests | 503 p99 from connection | 503 p99 in handler | 503 p99 before handler | new PG sessions |",
		"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
	}
	for _, clients := range levels {
		var newBefore int64
		if newConns != nil {
			newBefore = newConns()
		}
		st.reset()
		connsBefore := conns.Load()
		schedBefore, gcBefore, cpuBefore := schedLatencies(), gcPauses(), processCPU()
		var all clientTally
		if inProcess {
			all = driveLevel(url, clients, dur, backoff)
		} else if all, err = child.level(clients, dur); err != nil {
			b.Fatal(err)
		}
		elapsed := all.Elapsed.Seconds()
		gcAfter := gcPauses()
		schedP99, gcP99, gcN := schedP99Since(schedBefore, schedLatencies()), schedP99Since(gcBefore, gcAfter), countSince(gcBefore, gcAfter)
		cpu := (processCPU() - cpuBefore).Seconds() / elapsed
		opened := "-"
		if newConns != nil {
			opened = strconv.FormatInt(newConns()-newBefore, 10)
		}
		pre, inside := st.take()
		lines = append(lines, fmt.Sprintf("| %d | %.0f | %.0f | %d | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |",
			clients, float64(all.N)/elapsed, float64(all.Good)/elapsed, all.Degraded, pct(all.OK, 50), pct(all.OK, 99),
			all.Refused, pct(all.Rejects, 50), pct(all.Rejects, 99), pctLater(all.Rejects, all.FirstRejects), pct(all.RejectsFromConn, 99),
			pct(inside[http.StatusServiceUnavailable], 99), pct(pre[http.StatusServiceUnavailable], 99), opened))
		// The same figures as metrics, one unit per level, so the
		// standard benchmark output (and the charts made from it,
		// go run ./internal/testsupport/bench/charts) carries them.
		b.ReportMetric(float64(all.Good)/elapsed, fmt.Sprintf("c%d-goodput/s", clients))
		if len(all.Rejects) > 0 {
			b.ReportMetric(msAt(all.Rejects, 99), fmt.Sprintf("c%d-503-p99-ms", clients))
		}
		if all.Refused > 0 || all.Other > 0 {
			b.Logf("clients=%d 503 reasons %v, other answers %d, TCP connections accepted %d, server p99 of 200s: in handler %s, before %s; "+
				"client p99 of the 503s to first requests %s (%d), to later ones %s (%d); "+
				"503 p99 from start to request written %s, from written to first byte %s; "+
				"this process: %.2f cores busy, goroutine scheduling latency p99 %s, GC pauses %d, p99 %s",
				clients, all.Reasons, all.Other, conns.Load()-connsBefore, pct(inside[http.StatusOK], 99), pct(pre[http.StatusOK], 99),
				pct(all.FirstRejects, 99), len(all.FirstRejects), pctLater(all.Rejects, all.FirstRejects), len(all.Rejects)-len(all.FirstRejects),
				pct(all.RejectSend, 99), pct(all.RejectWait, 99), cpu, schedP99, gcN, gcP99)
		}
	}
	mode := "clients in a child process"
	if inProcess {
		mode = "clients in the Host's process"
	}
	// Printed, not logged: a benchmark's log is cut after a few lines.
	fmt.Printf("%s, %s, Host GOMAXPROCS %d, %s, backoff on 503: %v\n%s\n", b.Name(), mode, runtime.GOMAXPROCS(0), about(), backoff, strings.Join(lines, "\n"))
}

// schedLatencies reads the Go scheduler's histogram of how long
// goroutines stayed runnable before they ran.
func schedLatencies() *metrics.Float64Histogram { return histogram("/sched/latencies:seconds") }

// gcPauses reads the histogram of the garbage collector's stop-the-world
// pauses: a pool thread the operating system holds off a core delays
// them, and every goroutine waits during one.
func gcPauses() *metrics.Float64Histogram { return histogram("/sched/pauses/total/gc:seconds") }

// histogram reads one runtime/metrics histogram, nil if it has none.
func histogram(name string) *metrics.Float64Histogram {
	m := []metrics.Sample{{Name: name}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return m[0].Value.Float64Histogram()
}

// schedP99Since is the p99 of the scheduling latencies between two reads
// of the histogram (the upper bound of its bucket).
func schedP99Since(before, after *metrics.Float64Histogram) string {
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return "-"
	}
	var total uint64
	for i := range after.Counts {
		total += after.Counts[i] - before.Counts[i]
	}
	if total == 0 {
		return "-"
	}
	var seen uint64
	for i := range after.Counts {
		seen += after.Counts[i] - before.Counts[i]
		if seen*100 >= total*99 {
			return pct([]time.Duration{time.Duration(after.Buckets[i+1] * float64(time.Second))}, 99)
		}
	}
	return "-"
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countSince is how many samples a histogram gained between two reads.
func countSince(before, after *metrics.Float64Histogram) uint64 {
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return 0
	}
	var n uint64
	for i := range after.Counts {
		n += after.Counts[i] - before.Counts[i]
	}
	return n
}

// pctLater is the p99 of the rejections that were not to a first
// request: all minus first, as multisets.
func pctLater(all, first []time.Duration) string {
	drop := map[time.Duration]int{}
	for _, d := range first {
		drop[d]++
	}
	var later []time.Duration
	for _, d := range all {
		if drop[d] > 0 {
			drop[d]--
			continue
		}
		later = append(later, d)
	}
	return pct(later, 99)
}

// msAt is the p-th percentile of d in milliseconds; d is not empty.
func msAt(d []time.Duration, p int) float64 {
	slices.Sort(d)
	return float64(d[(len(d)-1)*p/100]) / float64(time.Millisecond)
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
func seed(b *testing.B, host *Host, records int) { seedTenant(b, host, "acme", "alice", records) }

// seedTenant stores records memories in tenant's project apollo, written
// by user.
func seedTenant(b *testing.B, host *Host, tenant, user string, records int) {
	ctx := context.Background()
	bc, ok := host.store.(storekit.BatchCreator)
	if !ok {
		b.Fatal("store cannot batch")
	}
	scope, err := memorykit.ProjectScope(tenant, "apollo")
	if err != nil {
		b.Fatal(err)
	}
	emb := embedder.NewLocalV2()
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: user}
	for start := 0; start < records; start += 100 {
		var items []storekit.BatchItem
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
			in[i] = storekit.EmbeddingText(r.Key, r.Content)
		}
		vecs, err := emb.Embed(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range texts {
			items = append(items, storekit.BatchItem{Record: r, Embedding: &storekit.BatchEmbedding{Profile: emb.Profile(), Vector: vecs[i]}})
		}
		if _, err := bc.CreateBatch(ctx, items); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoadDoers checks both load clients against a server that answers
// like the Host: a 503 with Retry-After and the JSON error body, a 200
// with the degraded header, a connection kept across requests, and a
// connection the server closes being dialled again.
func TestLoadDoers(t *testing.T) {
	var conns atomic.Int64
	var calls atomic.Int64
	srv := countingServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+aliceToken || r.Header.Get(sentHeader) == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		switch n := calls.Add(1); {
		case n == 1:
			writeErr(w, overloadedAt("reads"))
		case n == 2:
			w.Header().Set(degradedHeader, "deadline")
			_, _ = w.Write(body)
		default:
			w.Header().Set("Connection", "close")
			_, _ = w.Write(body)
		}
	}), &conns)
	defer srv.Close()
	url := srv.URL + "/v1/projects/apollo/search"
	for name, newDoer := range map[string]func() loadDoer{"net/http": netHTTPDoers(url), "raw": rawDoers(url)} {
		t.Run(name, func(t *testing.T) {
			calls.Store(0)
			conns.Store(0)
			d := newDoer()
			defer d.close()
			d.warm()
			r, err := d.do([]byte(`{"query":"a"}`))
			var eb errorBody
			if err != nil || r.status != http.StatusServiceUnavailable || r.retryAfter != retryAfterSeconds || json.Unmarshal(r.body, &eb) != nil || eb.Reason != reasonInFlight {
				t.Fatalf("503: %+v %v", r, err)
			}
			if r.gotConn.Before(r.start) || r.wrote.Before(r.gotConn) || r.first.Before(r.wrote) || r.end.Before(r.first) {
				t.Fatalf("timings out of order: %+v", r)
			}
			if r, err = d.do([]byte(`{"query":"b"}`)); err != nil || r.status != http.StatusOK || !r.degraded {
				t.Fatalf("degraded 200: %+v %v", r, err)
			}
			if r, err = d.do([]byte(`{"query":"c"}`)); err != nil || r.status != http.StatusOK || r.degraded {
				t.Fatalf("closing 200: %+v %v", r, err)
			}
			if n := conns.Load(); n != 1 {
				t.Fatalf("%d connections for the warm-up and three requests, want 1", n)
			}
			if r, err = d.do([]byte(`{"query":"d"}`)); err != nil || r.status != http.StatusOK {
				t.Fatalf("after the server closed: %+v %v", r, err)
			}
			if n := conns.Load(); n != 2 {
				t.Fatalf("%d connections after the server closed one, want 2", n)
			}
		})
	}
}
