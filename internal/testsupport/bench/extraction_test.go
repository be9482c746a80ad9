package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

const extractionSetDir = "testdata/extraction"

func loadSet(tb testing.TB) []ExtractionCase {
	tb.Helper()
	cs, err := LoadExtractionSet(extractionSetDir)
	if err != nil {
		tb.Fatal(err)
	}
	return cs
}

// TestExtractionSetIsLabelled: at least 60 cases, at least 20 per
// language, unique ids, valid kinds and keys, some small talk with no
// memory to find.
func TestExtractionSetIsLabelled(t *testing.T) {
	cs := loadSet(t)
	if len(cs) < 60 {
		t.Fatalf("%d cases, want at least 60", len(cs))
	}
	perLang, empty, ids := map[string]int{}, 0, map[string]bool{}
	for _, c := range cs {
		if ids[c.ID] || c.Transcript == "" {
			t.Errorf("case %q: duplicate id or empty transcript", c.ID)
		}
		ids[c.ID] = true
		perLang[strings.TrimRight(c.ID, "0123456789")]++
		if len(c.Facts) == 0 {
			empty++
		}
		for _, f := range c.Facts {
			if !memorykit.Kind(f.Kind).Valid() || storekit.NormalizeKey(f.Key) == "" || f.Content == "" {
				t.Errorf("case %s: bad gold memory %+v", c.ID, f)
			}
		}
	}
	for _, l := range []string{"en", "zh", "ja"} {
		if perLang[l] < 20 {
			t.Errorf("%s has %d cases, want at least 20", l, perLang[l])
		}
	}
	if empty < 10 {
		t.Errorf("%d cases without memories, want at least 10 (precision needs negatives)", empty)
	}
}

func TestMatches(t *testing.T) {
	g := GoldMemory{Kind: "fact", Key: "release day", Content: "The release day is Friday."}
	cases := []struct {
		p    memorykit.Proposal
		want bool
	}{
		{memorykit.Proposal{Key: "Release  Day", Content: "whatever"}, true},
		{memorykit.Proposal{Key: "shipping", Content: "Releases happen on Friday; the release day is fixed."}, true},
		{memorykit.Proposal{Key: "lunch", Content: "Lunch is at noon."}, false},
		{memorykit.Proposal{Key: "发布", Content: "发布日是每周五"}, false},
	}
	for _, c := range cases {
		if got := Matches(c.p, g); got != c.want {
			t.Errorf("Matches(%+v) = %v, want %v", c.p, got, c.want)
		}
	}
	zh := GoldMemory{Kind: "fact", Key: "发布日", Content: "发布日是每周五。"}
	if !Matches(memorykit.Proposal{Key: "发布时间", Content: "每周五是发布日"}, zh) {
		t.Errorf("a Chinese paraphrase with the same grams did not match")
	}
}

// oracleServer is an OpenAI-compatible chat completions server whose
// answer for a transcript is answer(case); it finds the case by the
// neutralized transcript in the user message, as a model would read it.
func oracleServer(t *testing.T, cs []ExtractionCase, answer func(ExtractionCase) []GoldMemory) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model          string              `json:"model"`
			Messages       []map[string]string `json:"messages"`
			ResponseFormat struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string          `json:"name"`
					Strict bool            `json:"strict"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, "bad request line", http.StatusBadRequest)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 ||
			!req.ResponseFormat.JSONSchema.Strict || req.ResponseFormat.JSONSchema.Name != extraction.SchemaName {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		input := req.Messages[1]["content"]
		var mems []GoldMemory
		for _, c := range cs {
			if strings.Contains(input, projector.Neutralize(c.Transcript)) {
				mems = answer(c)
				break
			}
		}
		if mems == nil {
			mems = []GoldMemory{}
		}
		type wireMem struct {
			GoldMemory
			Sources []string `json:"sources"`
		}
		wm := make([]wireMem, len(mems))
		for i, m := range mems {
			wm[i] = wireMem{GoldMemory: m, Sources: []string{"user"}}
		}
		content, _ := json.Marshal(map[string]any{"memories": wm})
		_ = json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": string(content)}}},
			"usage":   map[string]any{"prompt_tokens": len(input) / 4, "completion_tokens": len(content) / 4},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func benchEngine(tb testing.TB, m extraction.Model, events memorykit.EventSink) *extraction.Engine {
	tb.Helper()
	e, err := extraction.New(extraction.Config{Model: m, Prompt: extraction.PromptV1, Limits: extraction.LimitsV1(),
		Guard: benchGuard(tb), Events: events, Clock: benchClock()})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

type usageSink struct{ in, out int64 }

func (u *usageSink) Emit(e memorykit.Event) {
	if e.Kind == memorykit.EventExtractionUsage {
		u.in += e.InputTokens
		u.out += e.OutputTokens
	}
}

// TestExtractionHarness tests the harness itself against scripted
// OpenAI-compatible servers: an oracle that answers the gold memories
// scores precision and recall 1; one that answers only the first gold
// memory of each case and a made-up one scores what counting says; and
// the offline Explicit extractor is scored and reported.
func TestExtractionHarness(t *testing.T) {
	cs := loadSet(t)
	ctx := context.Background()
	scope := scopeOf(t, "extract-bench")
	gold, withGold := 0, 0
	for _, c := range cs {
		gold += len(c.Facts)
		if len(c.Facts) > 0 {
			withGold++
		}
	}

	oracle := oracleServer(t, cs, func(c ExtractionCase) []GoldMemory { return c.Facts })
	sink := &usageSink{}
	model := ChatModel{BaseURL: oracle.URL + "/v1", Model: "oracle", Key: "test-key", Client: oracle.Client()}
	s := ScoreExtractor(ctx, benchEngine(t, model, sink), scope, cs)
	t.Logf("oracle:\n%s", s.Report())
	if s.Failed != 0 || s.All.Precision() != 1 || s.All.Recall() != 1 || s.All.Gold != gold {
		t.Errorf("oracle scored %s, failed %d; want 1 and 1 over %d gold memories", s.All, s.Failed, gold)
	}
	if sink.in == 0 || sink.out == 0 {
		t.Errorf("no token usage reported: %+v", sink)
	}

	partial := oracleServer(t, cs, func(c ExtractionCase) []GoldMemory {
		out := []GoldMemory{{Kind: "note", Key: "made up " + c.ID, Content: "Zebras audit the quarterly llama budget."}}
		if len(c.Facts) > 0 {
			out = append(out, c.Facts[0])
		}
		return out
	})
	model.BaseURL = partial.URL + "/v1"
	s = ScoreExtractor(ctx, benchEngine(t, model, sink), scope, cs)
	t.Logf("partial:\n%s", s.Report())
	if s.All.Matched != withGold || s.All.Proposed != len(cs)+withGold || s.All.Gold != gold {
		t.Errorf("partial scored %+v; want %d matched of %d proposed and %d gold", s.All, withGold, len(cs)+withGold, gold)
	}

	ex := ScoreExtractor(ctx, extraction.Explicit{}, scope, cs)
	t.Logf("extraction.Explicit:\n%s", ex.Report())
	if ex.Failed != 0 || ex.All.Matched == 0 {
		t.Errorf("Explicit scored %s", ex.All)
	}
}

// TestChatModelErrors: the harness's HTTP model maps provider failures to
// content-free errors: Retry-After kept on a 429, a refusal or a missing
// choice is a recoverable provider_bad_response, a 401 is final, an
// oversized body is refused.
func TestChatModelErrors(t *testing.T) {
	cases := map[string]struct {
		handler    http.HandlerFunc
		reason     string
		retry      bool
		retryAfter time.Duration
	}{
		"429": {func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		}, "provider_status_429", true, 7 * time.Second},
		"401": {func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }, "provider_status_401", false, 0},
		"refusal": {func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"choices":[{"message":{"content":null,"refusal":"no"}}]}`)
		}, "provider_bad_response", true, 0},
		"no choice": {func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"choices":[]}`) }, "provider_bad_response", true, 0},
		"huge": {func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"`+strings.Repeat("x", 2<<20)+`"}}]}`)
		}, "provider_answer_too_large", true, 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			m := ChatModel{BaseURL: srv.URL, Model: "m", Client: srv.Client()}
			_, err := m.Generate(context.Background(), extraction.Request{Schema: extraction.SchemaV1()})
			var me *memorykit.Error
			if !asError(err, &me) || me.Reason != c.reason || me.Retry != c.retry || me.RetryAfter != c.retryAfter {
				t.Fatalf("err = %#v, want %s retry=%v after %v", err, c.reason, c.retry, c.retryAfter)
			}
		})
	}
}

func asError(err error, me **memorykit.Error) bool {
	e, ok := err.(*memorykit.Error)
	*me = e
	return ok
}

// TestExtractionLive scores the engine on the endpoint the environment
// names (MEMORYKIT_EXTRACT_URL, MEMORYKIT_EXTRACT_MODEL,
// MEMORYKIT_EXTRACT_KEY); without them it is skipped:
//
//	MEMORYKIT_EXTRACT_URL=https://api.openai.com/v1 MEMORYKIT_EXTRACT_MODEL=gpt-4o-mini \
//	MEMORYKIT_EXTRACT_KEY=... go test ./internal/testsupport/bench -run TestExtractionLive -v
func TestExtractionLive(t *testing.T) {
	m, ok := ChatModelFromEnv(os.Getenv)
	if !ok {
		t.Skip("set " + EnvExtractURL + " and " + EnvExtractModel + " to score a live model")
	}
	sink := &usageSink{}
	s := ScoreExtractor(context.Background(), benchEngine(t, m, sink), scopeOf(t, "extract-live"), loadSet(t))
	t.Logf("model %s:\n%s tokens in %d out %d", m.Model, s.Report(), sink.in, sink.out)
}

// zeroModel answers at once with two proposals: the worker's own cost
// is all that is left to measure.
type zeroModel struct{ answer []byte }

func (z zeroModel) Generate(context.Context, extraction.Request) (extraction.Response, error) {
	return extraction.Response{JSON: z.answer, Usage: extraction.Usage{InputTokens: 100, OutputTokens: 20}}, nil
}

// BenchmarkExtractionJob measures one extraction job on memorystore
// through the worker with the engine and a model that answers at once:
// lease, related lookup none, prompt build, parse, checks, candidate
// writes and completion. extractor=bare is the worker with an Extractor
// that returns the same two proposals without the engine, so the
// difference is the engine's own cost.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkExtractionJob' -benchtime 2000x -count 3
func BenchmarkExtractionJob(b *testing.B) {
	answer, _ := json.Marshal(map[string]any{"memories": []map[string]any{
		{"kind": "decision", "key": "database engine", "content": "The project uses PostgreSQL 16.", "sources": []string{"user"}},
		{"kind": "preference", "key": "review style", "content": "Reviews are short and kind.", "sources": nil},
	}})
	var bare []memorykit.Proposal
	for _, p := range []struct{ k, key, c string }{{"decision", "database engine", "The project uses PostgreSQL 16."},
		{"preference", "review style", "Reviews are short and kind."}} {
		bare = append(bare, memorykit.Proposal{Kind: memorykit.Kind(p.k), Key: p.key, Content: p.c})
	}
	for _, kind := range []string{"engine", "bare"} {
		b.Run("extractor="+kind, func(b *testing.B) {
			clk := benchClock()
			s := writeStoreOn(b, "memory", clk)
			var x memorykit.Extractor = extractorFunc(func(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
				return append([]memorykit.Proposal(nil), bare...), nil
			})
			if kind == "engine" {
				x = benchEngine(b, zeroModel{answer: answer}, memorykit.DiscardEvents{})
			}
			w, err := extractworker.New(extractworker.Config{
				Store: s, Extractor: x, Guard: benchGuard(b), Clock: clk, Logger: zap.NewNop(), Events: memorykit.DiscardEvents{},
				WorkerID: "bench", LeaseTTL: time.Hour, BatchSize: 1, PollInterval: time.Second, JobDeadline: time.Minute,
				Retry:           memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
				StoreBackoff:    memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
				HandBackTimeout: time.Minute,
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			sc := scopeOf(b, "extract-job")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// One job queued at a time, so the queue's length (which
				// memorystore's lease scans) stays out of the number.
				b.StopTimer()
				if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: storekit.ExtractionJobID(sc, fmt.Sprintf("turn-%d", i)),
					Scope: sc, Payload: "user: we decided to use PostgreSQL 16\nassistant: noted", MaxAttempts: 3, MaxReaps: 3}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				r, err := w.RunOnce(ctx)
				if err != nil || r.Completed != 1 {
					b.Fatalf("round %+v, %v", r, err)
				}
			}
		})
	}
}

type extractorFunc func(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error)

func (f extractorFunc) Extract(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	return f(ctx, in)
}

// scopeAllow authorizes reads of one Scope for the benchmark.
type scopeAllow struct{ scope memorykit.Scope }

func (a scopeAllow) Authorize(_ context.Context, _ memorykit.Principal, perm memorykit.Permission, s memorykit.Scope) error {
	if perm != memorykit.PermRead || s != a.scope {
		return memorykit.NewError("bench.authorize", memorykit.ErrForbidden, "denied")
	}
	return nil
}

// BenchmarkRelatedLookup compares the related-memory lookup (a recall
// whose query is a whole finished turn) with an ordinary recall (a short
// question) on the same 1,000-record Scope on memorystore, lexical
// channels and vectors alike; it reports each one's p50.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkRelatedLookup' -benchtime 300x
func BenchmarkRelatedLookup(b *testing.B) {
	clk := benchClock()
	s := writeStoreOn(b, "memory", clk)
	plan := scopePlan{scope: scopeOf(b, "related"), n: 1000, seed: 7}
	load(b, s.(storekit.BatchCreator), plan)
	emb := embedder.NewLocal()
	eng, err := recall.New(recall.Config{Store: s, Embedder: emb, Authorizer: scopeAllow{plan.scope},
		Policy: memorykit.RecallPolicyV1(emb.Profile(), emb.Dimension()),
		Clock:  clk, Events: memorykit.DiscardEvents{}, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	p := memorykit.Principal{TenantID: plan.scope.TenantID, Actor: memorykit.Actor{Kind: memorykit.ActorWorker, ID: "bench"}}
	queries := map[string]string{
		"question": "which database do we use for the billing service?",
		"turn": "user: we decided the billing service moves to PostgreSQL 16 next sprint, and the on-call rotation stays weekly\n" +
			"assistant: Noted: billing moves to PostgreSQL 16 next sprint; on-call rotation unchanged.",
	}
	for _, name := range []string{"question", "turn"} {
		b.Run("query="+name, func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := eng.Recall(context.Background(), recall.Request{Principal: p, Scope: plan.scope, Query: queries[name]}); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
		})
	}
}
