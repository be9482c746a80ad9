package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/reviewer"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/runtime/runtimetest"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
	"github.com/goagents/memorykit/writer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// extractor proposes one fact per line of the form "remember: key = value".
type extractor struct {
	mu    sync.Mutex
	calls int
}

func (e *extractor) Extract(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	var out []memorykit.Proposal
	for _, line := range strings.Split(in.Payload, "\n") {
		rest, ok := strings.CutPrefix(line, "remember: ")
		if !ok {
			continue
		}
		key, value, ok := strings.Cut(rest, " = ")
		if ok {
			out = append(out, memorykit.Proposal{Kind: memorykit.KindFact, Key: key, Content: value})
		}
	}
	return out, nil
}

func (e *extractor) Calls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

func workers() mkruntime.Workers {
	b := memorykit.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2}
	// eventually advances the mock clock by at most 1000 one-second steps
	// while real goroutines work. Leases and deadlines are longer than
	// that, so no lease expires and no deadline passes just because the
	// mock clock ran ahead of a descheduled worker; a job extracted twice
	// would then be a real double lease.
	return mkruntime.Workers{
		LeaseTTL: time.Hour, EmbedBatch: 16, EmbedPoll: time.Second, EmbedDeadline: 20 * time.Minute,
		EmbedRetry: b, ExtractBatch: 4, ExtractPoll: time.Second, JobDeadline: 20 * time.Minute,
		JobRetry: b, JobMaxAttempts: 3, JobMaxReaps: 5, ReapInterval: 5 * time.Second, StoreBackoff: b,
		HandBackTimeout: 20 * time.Minute,
		Restart:         memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}, MaxRestarts: 5,
	}
}

type bundle struct {
	clk   *clock.Mock
	store storekit.Store
	az    *testkit.Authorizer
	sink  *testkit.Sink
	logs  *observer.ObservedLogs
	ext   *extractor
	rt    *mkruntime.Runtime
	cfg   mkruntime.Config
	scope memorykit.Scope
	alice memorykit.Principal
}

func config(t *testing.T) (mkruntime.Config, *bundle) {
	t.Helper()
	clk := testkit.NewClock()
	return configOn(t, clk, testkit.MemStore(t, clk))
}

// configOn builds a full Config around store, whose clock must be clk.
func configOn(t *testing.T, clk *clock.Mock, store storekit.Store) (mkruntime.Config, *bundle) {
	t.Helper()
	b := &bundle{clk: clk, az: testkit.NewAuthorizer(), sink: &testkit.Sink{}, ext: &extractor{}}
	b.store = store
	b.scope = testkit.Scope(t, "acme", "apollo")
	b.alice = testkit.Principal("acme", memorykit.ActorUser, "alice")
	b.az.Grant("alice", b.scope, memorykit.PermRead, memorykit.PermWrite, memorykit.PermExtract, memorykit.PermReview, memorykit.PermErase)
	b.az.Grant("agent-1", b.scope, memorykit.PermRead, memorykit.PermModelWrite)
	core, logs := observer.New(zapcore.DebugLevel)
	b.logs = logs
	cfg := mkruntime.Config{
		Guard: testkit.NewGuard(t), Policy: testkit.Policy(), Embedder: embedder.NewLocal(),
		Authorizer: b.az, Extractor: b.ext, Stores: mkruntime.StoresOf(b.store), Clock: b.clk,
		WorkerID: "host-a", Logger: zap.New(core), Events: b.sink, Workers: workers(),
		Tools:  memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 400, MaxArgBytes: 8192},
		Mode:   mkruntime.ModeAll,
		Outbox: mkruntime.Outbox{MaxTurns: 100, MaxBytes: 1 << 20, Retry: memorykit.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2}},
	}
	return cfg, b
}

func setup(t *testing.T) *bundle {
	t.Helper()
	cfg, b := config(t)
	return start(t, cfg, b)
}

func start(t *testing.T, cfg mkruntime.Config, b *bundle) *bundle {
	t.Helper()
	rt, err := mkruntime.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.rt, b.cfg = rt, cfg
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return b
}

func TestNewRefusesPartialConfig(t *testing.T) {
	t.Parallel()
	cfg, _ := config(t)
	if _, err := mkruntime.New(cfg); err != nil {
		t.Fatalf("full config: %v", err)
	}
	// Zero each exported top-level field in turn; Claims (nil means the
	// built-in detector) and Admission (zero means DefaultAdmission) are
	// optional.
	v := reflect.ValueOf(cfg)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); !f.IsExported() || f.Name == "Claims" || f.Name == "Admission" {
			continue
		}
		c := cfg
		f := reflect.ValueOf(&c).Elem().Field(i)
		f.Set(reflect.Zero(f.Type()))
		_, err := mkruntime.New(c)
		if !errors.Is(err, memorykit.ErrInvalidConfig) && !errors.Is(err, memorykit.ErrInvalidPolicy) {
			t.Errorf("zero %s: New() = %v", v.Type().Field(i).Name, err)
		}
	}
	// Zero each worker setting in turn.
	w := reflect.ValueOf(cfg.Workers)
	for i := 0; i < w.NumField(); i++ {
		c := cfg
		f := reflect.ValueOf(&c.Workers).Elem().Field(i)
		f.Set(reflect.Zero(f.Type()))
		if _, err := mkruntime.New(c); !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("zero Workers.%s: New() = %v", w.Type().Field(i).Name, err)
		}
	}
	for name, mutate := range map[string]func(*mkruntime.Config){
		"nil lifecycle store":    func(c *mkruntime.Config) { c.Stores.Lifecycle = nil },
		"nil recall store":       func(c *mkruntime.Config) { c.Stores.Recall = nil },
		"nil embedding store":    func(c *mkruntime.Config) { c.Stores.Embeddings = nil },
		"nil job store":          func(c *mkruntime.Config) { c.Stores.Jobs = nil },
		"profile mismatch":       func(c *mkruntime.Config) { c.Policy.EmbeddingProfile = "openai/other" },
		"dimension mismatch":     func(c *mkruntime.Config) { c.Policy.EmbeddingDimension = 1536 },
		"partial policy":         func(c *mkruntime.Config) { c.Policy.Deadline = 0 },
		"bad worker id":          func(c *mkruntime.Config) { c.WorkerID = "host a" },
		"lease shorter than job": func(c *mkruntime.Config) { c.Workers.LeaseTTL = c.Workers.JobDeadline },
		"partial backoff":        func(c *mkruntime.Config) { c.Workers.JobRetry.Multiplier = 0 },
		"tool limits":            func(c *mkruntime.Config) { c.Tools.MaxArgBytes = 0 },
	} {
		c := cfg
		mutate(&c)
		_, err := mkruntime.New(c)
		if !errors.Is(err, memorykit.ErrInvalidConfig) && !errors.Is(err, memorykit.ErrInvalidPolicy) && !errors.Is(err, memorykit.ErrInvalidInput) {
			t.Errorf("%s: New() = %v", name, err)
		}
	}
}

// TestHooksStepTheActorsDeterministically drives the background work
// through the runtimetest hooks alone: the clock is advanced only after every actor
// has said it waits idle, and the next idle wait of each proves its work is
// done, so nothing is polled for. The Random hook pins the view's nonce.
func TestHooksStepTheActorsDeterministically(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		clk := testkit.NewClock()
		cfg, b := configOn(t, clk, be.Open(t, clk))
		type wait struct {
			actor string
			w     supervisor.Wait
		}
		waits := make(chan wait, 1000)
		runtimetest.WithHooks(&cfg, runtimetest.Hooks{
			OnWait: func(actor string, w supervisor.Wait) { waits <- wait{actor, w} },
			Random: bytes.NewReader(bytes.Repeat([]byte{0xab}, 1024)),
		})
		start(t, cfg, b)
		// idle returns once each of the actors has waited idle.
		idle := func(actors ...string) {
			t.Helper()
			left := map[string]bool{}
			for _, a := range actors {
				left[a] = true
			}
			for len(left) > 0 {
				select {
				case w := <-waits:
					if w.w.Reason != supervisor.WaitIdle {
						t.Fatalf("unexpected wait %+v", w)
					}
					delete(left, w.actor)
				case <-time.After(time.Minute): // a real-time guard against a hang, not a wait for work
					t.Fatalf("actors %v never waited idle", left)
				}
			}
		}
		ctx := context.Background()
		if err := b.rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		idle(mkruntime.ActorEmbed, mkruntime.ActorExtract, mkruntime.ActorReap)

		s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1", WriteIntent: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1"}); err != nil {
			t.Fatal(err)
		}
		if enq := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1/turn-1", Transcript: "remember: oncall = Bob"}); enq.Status != extractworker.EnqueueQueued {
			t.Fatalf("enqueue = %+v", enq)
		}
		// Nothing happens until the clock moves.
		if n, err := b.store.PendingEmbeddings(ctx, "memorykit/hash-v1"); err != nil || n != 1 {
			t.Fatalf("pending before the clock moved = %d, %v", n, err)
		}
		clk.Add(time.Second) // EmbedPoll and ExtractPoll; the reaper sleeps on
		idle(mkruntime.ActorEmbed, mkruntime.ActorExtract)
		if n, err := b.store.PendingEmbeddings(ctx, "memorykit/hash-v1"); err != nil || n != 0 {
			t.Fatalf("pending after one poll = %d, %v", n, err)
		}
		if c, err := b.store.CountJobs(ctx); err != nil || c.Done != 1 || b.ext.Calls() != 1 {
			t.Fatalf("jobs after one poll = %+v, %v; extractor calls %d", c, err, b.ext.Calls())
		}

		p, err := s.Project(ctx, userTurn("Which region does the API deploy to?"))
		if err != nil || !p.Injected {
			t.Fatalf("projection = %+v, %v", p, err)
		}
		if want := `nonce="` + strings.Repeat("ab", 16) + `"`; !strings.Contains(p.Messages[p.Index].Content, want) {
			t.Fatalf("view does not carry the pinned nonce %s:\n%s", want, p.Messages[p.Index].Content)
		}
		if err := b.rt.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func userTurn(text string) []projector.Message {
	return []projector.Message{
		{Role: projector.RoleSystem, Content: "You are a helpful agent."},
		{Role: projector.RoleUser, Content: text},
	}
}

// eventually advances the mock clock in small steps until cond holds. The
// workers poll on the mock clock, so each step lets them run one round.
func eventually(t *testing.T, clk *clock.Mock, step time.Duration, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		clk.Add(step)
	}
	t.Fatalf("%s did not happen", what)
}

func TestEndToEndTurn(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		clk := testkit.NewClock()
		cfg, b := configOn(t, clk, be.Open(t, clk))
		endToEnd(t, start(t, cfg, b))
	})
}

func endToEnd(t *testing.T, b *bundle) {
	ctx := context.Background()
	const canary = "canary-e2e-51d9"

	if _, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"}); err == nil {
		t.Fatal("Session before Start must fail")
	}
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1", WriteIntent: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1 " + canary}); err != nil {
		t.Fatal(err)
	}
	// The projector inserts the memory right before the current user message.
	p, err := s.Project(ctx, userTurn("Which region does the API deploy to? "+canary))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Injected || p.Index != 1 || len(p.Messages) != 3 || !strings.Contains(p.Messages[1].Content, "eu-west-1") {
		t.Fatalf("projection = %+v", p)
	}
	// The model writes over a user's record: a candidate, active stays.
	var names []string
	for _, tool := range s.Tools() {
		names = append(names, tool.Name)
	}
	if !reflect.DeepEqual(names, []string{memorytools.SearchMemory, memorytools.ReadMemory, memorytools.RememberProjectMemory}) {
		t.Fatalf("tools = %v", names)
	}
	args, _ := json.Marshal(map[string]string{"kind": "fact", "key": "deploy region", "content": "us-east-2 " + canary})
	res, err := s.CallTool(ctx, memorytools.RememberProjectMemory, args)
	if err != nil || res.IsError {
		t.Fatalf("remember = %+v, %v", res, err)
	}
	cands, err := b.rt.Reviewer().ListCandidates(ctx, b.alice, b.scope, reviewer.Page{Limit: 10})
	if err != nil || len(cands) != 1 {
		t.Fatalf("candidates = %v, %v", cands, err)
	}
	// The finished turn goes to extraction; the worker turns it into a
	// candidate exactly once.
	enq := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1/turn-1", Transcript: "user asked things\nremember: oncall = Bob " + canary})
	if enq.Status != extractworker.EnqueueQueued {
		t.Fatalf("enqueue = %+v", enq)
	}
	eventually(t, b.clk, time.Second, "extraction", func() bool {
		c, err := b.store.CountJobs(ctx)
		return err == nil && c.Done == 1
	})
	cands, err = b.rt.Reviewer().ListCandidates(ctx, b.alice, b.scope, reviewer.Page{Limit: 10})
	if err != nil || len(cands) != 2 {
		t.Fatalf("candidates after extraction = %d, %v", len(cands), err)
	}
	// The embedding worker embeds the active record.
	eventually(t, b.clk, time.Second, "embedding", func() bool {
		n, err := b.store.PendingEmbeddings(ctx, "memorykit/hash-v1")
		return err == nil && n == 0
	})
	if err := b.rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if b.ext.Calls() != 1 {
		t.Fatalf("extractor called %d times, want 1", b.ext.Calls())
	}
	b.sink.AssertNoCanary(t, canary)
	for _, e := range b.logs.All() {
		if strings.Contains(fmt.Sprintf("%s %v", e.Message, e.ContextMap()), canary) {
			t.Errorf("log line carries content: %s %v", e.Message, e.ContextMap())
		}
	}
}

func TestDrainClosesEveryRequestPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1", WriteIntent: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindNote, Key: "k", Content: "v"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.rt.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	draining := map[string]error{}
	_, draining["session"] = b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"})
	_, draining["project"] = s.Project(ctx, userTurn("k"))
	_, draining["remember"] = s.Remember(ctx, writer.Input{Kind: memorykit.KindNote, Key: "k2", Content: "v"})
	_, draining["search"] = s.CallTool(ctx, memorytools.SearchMemory, json.RawMessage(`{"query":"k"}`))
	_, draining["review"] = b.rt.Reviewer().Forget(ctx, b.alice, b.scope, reviewer.Decision{ID: rec.Record.ID})
	for path, err := range draining {
		if !errors.Is(err, memorykit.ErrDraining) {
			t.Errorf("%s after Drain: %v, want ErrDraining", path, err)
		}
	}
	// A model write after Drain fails truthfully and sets the flag.
	res, err := s.CallTool(ctx, memorytools.RememberProjectMemory, json.RawMessage(`{"kind":"fact","key":"x","content":"y"}`))
	if err != nil || !res.IsError || res.Content != "项目记忆未保存" || !s.WriteFailed() {
		t.Fatalf("remember after Drain = %+v, %v, flag %v", res, err, s.WriteFailed())
	}
	if err := s.ValidateOutput("Done, I saved that to memory."); err == nil || err.Error() != "项目记忆未保存" {
		t.Fatalf("ValidateOutput = %v", err)
	}
	if enq := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-9", Transcript: "text"}); enq.Status != extractworker.EnqueueFailed {
		t.Fatalf("enqueue after Drain = %+v", enq)
	}
	if err := b.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"}); !errors.Is(err, memorykit.ErrStopped) {
		t.Fatalf("Session after Stop: %v", err)
	}
	if err := b.rt.Start(ctx); err == nil {
		t.Fatal("Start after Stop must fail")
	}
}

func TestSessionRejectsUntrustedShapes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := b.rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	user := memorykit.Scope{TenantID: "acme", SubjectType: memorykit.SubjectUser, SubjectID: "alice"}
	if _, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: user, ModelID: "agent-1"}); !errors.Is(err, memorykit.ErrInvalidScope) {
		t.Fatalf("user scope: %v", err)
	}
	if _, err := b.rt.Session(ctx, mkruntime.Request{Caller: memorykit.Principal{}, Scope: b.scope, ModelID: "agent-1"}); err == nil {
		t.Fatal("empty principal must fail")
	}
	if _, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope}); err == nil {
		t.Fatal("missing model id must fail")
	}
	s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range s.Tools() {
		if tool.Name == memorytools.RememberProjectMemory {
			t.Fatal("remember_project_memory registered without write intent")
		}
	}
}

// Two runtimes with different worker identities, each with its own store on
// one PostgreSQL schema, share one extraction queue: every job is extracted
// exactly once.
func TestPostgresTwoRuntimesShareOneQueue(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	clk := testkit.NewClock()
	ext := &countingExtractor{calls: map[string]int{}}
	var runtimes []*bundle
	for _, id := range []string{"host-a", "host-b"} {
		cfg, b := configOn(t, clk, db.Open(t, clk))
		cfg.WorkerID = id
		cfg.Extractor = ext
		runtimes = append(runtimes, start(t, cfg, b))
	}
	ctx := context.Background()
	for _, b := range runtimes {
		if err := b.rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const jobs = 40
	a := runtimes[0]
	s, err := a.rt.Session(ctx, mkruntime.Request{Caller: a.alice, Scope: a.scope, ModelID: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < jobs; i++ {
		res := s.FinishTurn(ctx, mkruntime.Turn{RunRef: fmt.Sprintf("run-%d", i), Transcript: fmt.Sprintf("remember: topic %d = value %d", i, i)})
		if res.Status != extractworker.EnqueueQueued {
			t.Fatalf("enqueue %d: %+v", i, res)
		}
	}
	eventually(t, clk, time.Second, "all jobs done", func() bool {
		c, err := a.store.CountJobs(ctx)
		return err == nil && c.Done == jobs
	})
	for _, b := range runtimes {
		if err := b.rt.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.rt.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	perJob, total := ext.snapshot()
	if len(perJob) != jobs || total != jobs {
		t.Fatalf("extracted %d distinct jobs in %d calls, want %d exactly once", len(perJob), total, jobs)
	}
	cands, err := a.store.List(ctx, storekit.ListFilter{Scope: a.scope, Statuses: []memorykit.Status{memorykit.StatusCandidate}, Limit: 100})
	if err != nil || len(cands) != jobs {
		t.Fatalf("%d candidates, %v; want %d", len(cands), err, jobs)
	}
	byWorker := map[string]int{}
	for _, e := range append(runtimes[0].sink.OfKind(memorykit.EventJobCompleted), runtimes[1].sink.OfKind(memorykit.EventJobCompleted)...) {
		byWorker[e.WorkerID]++
	}
	t.Logf("jobs completed per worker: %v", byWorker)
}

type countingExtractor struct {
	mu    sync.Mutex
	calls map[string]int
	total int
}

func (c *countingExtractor) Extract(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	c.mu.Lock()
	c.calls[in.JobID]++
	c.total++
	c.mu.Unlock()
	return (&extractor{}).Extract(ctx, in)
}

func (c *countingExtractor) snapshot() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out, c.total
}
