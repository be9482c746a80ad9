package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	ant "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	mkanthropic "github.com/goagents/memorykit/adapters/anthropic"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/adaptertest"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testKey = "sk-ant-test-KEYCANARY-0001"
	canary  = "PAYLOADCANARY-9c2e"
)

// fakeMessages is an httptest server speaking the Messages API wire format:
// POST /v1/messages with a JSON body, answered by the next scripted reply.
// It records every request body.
type fakeMessages struct {
	srv     *httptest.Server
	mu      sync.Mutex
	replies []func(w http.ResponseWriter, r *http.Request)
	bodies  []map[string]any
}

func newFake(t *testing.T, replies ...func(w http.ResponseWriter, r *http.Request)) *fakeMessages {
	f := &fakeMessages{replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMessages) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, "unexpected endpoint", http.StatusNotFound)
		return
	}
	if r.Header.Get("x-api-key") != testKey && r.Header.Get("Authorization") != "Bearer "+testKey {
		http.Error(w, "bad key", http.StatusUnauthorized)
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		http.Error(w, "no version", http.StatusBadRequest)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	var reply func(http.ResponseWriter, *http.Request)
	if n < len(f.replies) {
		reply = f.replies[n]
	} else if len(f.replies) > 0 {
		reply = f.replies[len(f.replies)-1] // the last reply repeats
	}
	f.mu.Unlock()
	if reply == nil {
		http.Error(w, "no reply scripted", http.StatusInternalServerError)
		return
	}
	reply(w, r)
}

func (f *fakeMessages) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

// client builds an SDK client for the fake server, with no retries and an
// HTTP transport the test closes.
func (f *fakeMessages) client(t *testing.T, opts ...option.RequestOption) *ant.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := ant.NewClient(append([]option.RequestOption{option.WithBaseURL(f.srv.URL), option.WithAPIKey(testKey),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0)}, opts...)...)
	return &c
}

// message writes a Message object as the API documents it.
func message(content, stop string, input, output int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_test","type":"message","role":"assistant","model":"test-model","content":[%s],`+
			`"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":%d,`+
			`"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`, content, stop, input, output)
	}
}

func textBlock(text string) string {
	b, _ := json.Marshal(text)
	return `{"type":"text","text":` + string(b) + `}`
}

func answer(text string, input, output int) func(http.ResponseWriter, *http.Request) {
	return message(textBlock(text), "end_turn", input, output)
}

type call struct{ id, name, input string }

func toolUse(input, output int, preamble string, calls ...call) func(http.ResponseWriter, *http.Request) {
	parts := []string{}
	if preamble != "" {
		parts = append(parts, textBlock(preamble))
	}
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, c.id, c.name, c.input))
	}
	return message(strings.Join(parts, ","), "tool_use", input, output)
}

func newAdapter(t *testing.T, f *fakeMessages, steps int, opts ...option.RequestOption) *mkanthropic.Adapter {
	a, err := mkanthropic.New(mkanthropic.Config{Client: f.client(t, opts...), Model: "test-model", MaxSteps: steps, MaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func userTurn(text string) []projector.Message {
	return []projector.Message{
		{Role: projector.RoleSystem, Content: "You are the project assistant."},
		{Role: projector.RoleUser, Content: text},
	}
}

// path reads a value out of decoded JSON: "messages.1.content".
func path(v any, p string) any {
	for _, part := range strings.Split(p, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []any:
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func str(v any, p string) string { s, _ := path(v, p).(string); return s }

func count(v any, p string) int { l, _ := path(v, p).([]any); return len(l) }

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPlainAnswerWithMemoryView(t *testing.T) {
	fx := adaptertest.New(t)
	id := fx.Remember(t, "deploy region", "The API runs in eu-west-1.")
	f := newFake(t, message(textBlock("The API runs ")+","+textBlock("in eu-west-1."), "end_turn", 120, 9))
	s := fx.Session(t, true)

	res, err := newAdapter(t, f, 4).RunTurn(context.Background(), mkanthropic.Turn{
		Session: s, Messages: userTurn("Where does the API run?"), RunRef: "turn-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "The API runs in eu-west-1." || res.Rejected || res.Steps != 1 || len(res.ToolCalls) != 0 {
		t.Errorf("result: %+v", res)
	}
	if res.Usage != (mkanthropic.Usage{InputTokens: 120, OutputTokens: 9, TotalTokens: 129}) {
		t.Errorf("usage: %+v", res.Usage)
	}
	if res.Extraction.Status != extractworker.EnqueueQueued || !res.Projection.Injected {
		t.Errorf("extraction %q, injected %v", res.Extraction.Status, res.Projection.Injected)
	}

	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	req := reqs[0]
	if str(req, "model") != "test-model" || path(req, "max_tokens") != float64(1024) {
		t.Errorf("request: %v", req)
	}
	// The system prompt is top-level; the memory view is its own user
	// message right before the user turn.
	if count(req, "system") != 1 || str(req, "system.0.text") != "You are the project assistant." {
		t.Errorf("system: %v", path(req, "system"))
	}
	if count(req, "messages") != 2 {
		t.Fatalf("messages: %v", path(req, "messages"))
	}
	view := str(req, "messages.0.content.0.text")
	if str(req, "messages.0.role") != "user" || count(req, "messages.0.content") != 1 ||
		!strings.HasPrefix(view, "<memory-view nonce=") || !strings.Contains(view, `id="`+id+`"`) {
		t.Errorf("memory view message: %v", path(req, "messages.0"))
	}
	if str(req, "messages.1.role") != "user" || str(req, "messages.1.content.0.text") != "Where does the API run?" {
		t.Errorf("user message: %v", path(req, "messages.1"))
	}
	// Tools: every memory tool, with its description and exact schema.
	want := s.Tools()
	if count(req, "tools") != len(want) || len(want) != 3 {
		t.Fatalf("tools: %v", path(req, "tools"))
	}
	for i, tool := range want {
		p := fmt.Sprintf("tools.%d.", i)
		if str(req, p+"name") != tool.Name || str(req, p+"description") != tool.Description {
			t.Errorf("tool %d: %v", i, path(req, "tools."+fmt.Sprint(i)))
		}
		var schema any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(t, path(req, p+"input_schema")); got != mustJSON(t, schema) {
			t.Errorf("tool %s schema %s, want %s", tool.Name, got, mustJSON(t, schema))
		}
	}
}

func TestOneToolCall(t *testing.T) {
	fx := adaptertest.New(t)
	id := fx.Remember(t, "deploy region", "The API runs in eu-west-1.")
	f := newFake(t,
		toolUse(50, 7, "Let me look.", call{"toolu_a", memorytools.SearchMemory, `{"query":"deploy region"}`}),
		answer("It runs in eu-west-1.", 80, 6))

	res, err := newAdapter(t, f, 4).RunTurn(context.Background(), mkanthropic.Turn{
		Session: fx.Session(t, false), Messages: userTurn("search please"), RunRef: "turn-2",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "It runs in eu-west-1." || res.Steps != 2 || len(res.ToolCalls) != 1 {
		t.Fatalf("result: %+v", res)
	}
	tc := res.ToolCalls[0]
	if tc.ID != "toolu_a" || tc.Name != memorytools.SearchMemory || tc.Result.IsError || !strings.Contains(tc.Result.Content, id) {
		t.Errorf("tool call: %+v", tc)
	}
	if res.Usage != (mkanthropic.Usage{InputTokens: 130, OutputTokens: 13, TotalTokens: 143}) {
		t.Errorf("usage: %+v", res.Usage)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if count(reqs[0], "tools") != 2 {
		t.Errorf("tools without write intent: %v", path(reqs[0], "tools"))
	}
	second := reqs[1]
	n := count(second, "messages")
	asst, user := fmt.Sprintf("messages.%d.", n-2), fmt.Sprintf("messages.%d.", n-1)
	// The assistant turn goes back as it came: text, then the tool_use.
	if str(second, asst+"role") != "assistant" || str(second, asst+"content.0.text") != "Let me look." ||
		str(second, asst+"content.1.type") != "tool_use" || str(second, asst+"content.1.id") != "toolu_a" ||
		mustJSON(t, path(second, asst+"content.1.input")) != `{"query":"deploy region"}` {
		t.Errorf("assistant turn echoed: %v", path(second, strings.TrimSuffix(asst, ".")))
	}
	if str(second, user+"role") != "user" || str(second, user+"content.0.type") != "tool_result" ||
		str(second, user+"content.0.tool_use_id") != "toolu_a" || path(second, user+"content.0.is_error") != false ||
		str(second, user+"content.0.content.0.text") != tc.Result.Content {
		t.Errorf("tool result: %v", path(second, strings.TrimSuffix(user, ".")))
	}
}

func TestParallelToolCalls(t *testing.T) {
	fx := adaptertest.New(t)
	fx.Remember(t, "deploy region", "The API runs in eu-west-1.")
	f := newFake(t,
		toolUse(10, 1, "",
			call{"toolu_1", memorytools.SearchMemory, `{"query":"region"}`},
			call{"toolu_2", memorytools.ReadMemory, `{"id":"no-such-memory"}`},
			call{"toolu_3", memorytools.RememberProjectMemory, `{"kind":"fact","key":"db","content":"Postgres 16."}`}),
		answer("Noted the database; the region is eu-west-1.", 10, 1))

	res, err := newAdapter(t, f, 4).RunTurn(context.Background(), mkanthropic.Turn{
		Session: fx.Session(t, true), Messages: userTurn("several at once"), RunRef: "turn-3",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 3 || res.Steps != 2 || res.Rejected {
		t.Fatalf("result: %+v", res)
	}
	for i, name := range []string{memorytools.SearchMemory, memorytools.ReadMemory, memorytools.RememberProjectMemory} {
		if res.ToolCalls[i].Name != name || res.ToolCalls[i].ID != fmt.Sprintf("toolu_%d", i+1) {
			t.Errorf("call %d: %+v", i, res.ToolCalls[i])
		}
	}
	second := f.requests()[1]
	last := fmt.Sprintf("messages.%d.", count(second, "messages")-1)
	// All three results travel in one user message, in order, each with
	// its error flag.
	if count(second, last+"content") != 3 {
		t.Fatalf("tool results: %v", path(second, strings.TrimSuffix(last, ".")))
	}
	for i, wantErr := range []bool{false, true, false} {
		p := fmt.Sprintf("%scontent.%d.", last, i)
		if str(second, p+"tool_use_id") != fmt.Sprintf("toolu_%d", i+1) || path(second, p+"is_error") != wantErr ||
			res.ToolCalls[i].Result.IsError != wantErr || str(second, p+"content.0.text") != res.ToolCalls[i].Result.Content {
			t.Errorf("tool result %d: %v", i, path(second, strings.TrimSuffix(p, ".")))
		}
	}
}

func TestFailedRememberThenSuccessClaimIsRejected(t *testing.T) {
	fx := adaptertest.New(t)
	f := newFake(t,
		toolUse(10, 1, "", call{"toolu_w", memorytools.RememberProjectMemory,
			`{"kind":"fact","key":"token","content":"` + adaptertest.RejectMarker + ` the value"}`}),
		answer("Done: I saved that to project memory.", 10, 1))
	s := fx.Session(t, true)

	res, err := newAdapter(t, f, 4).RunTurn(context.Background(), mkanthropic.Turn{
		Session: s, Messages: userTurn("remember this"), RunRef: "turn-4",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Rejected || res.Text != "项目记忆未保存" {
		t.Errorf("rejected %v, text %q", res.Rejected, res.Text)
	}
	if res.Extraction != (extractworker.EnqueueResult{}) {
		t.Errorf("a rejected turn was handed to extraction: %+v", res.Extraction)
	}
	if !s.WriteFailed() || len(res.ToolCalls) != 1 || !res.ToolCalls[0].Result.IsError {
		t.Errorf("tool call: %+v", res.ToolCalls)
	}
	second := f.requests()[1]
	last := fmt.Sprintf("messages.%d.content.0.", count(second, "messages")-1)
	if path(second, last+"is_error") != true || str(second, last+"content.0.text") != memorytools.NotSavedText {
		t.Errorf("the model saw %v", path(second, strings.TrimSuffix(last, ".")))
	}
}

func TestToolLoopStopsAtBound(t *testing.T) {
	fx := adaptertest.New(t)
	f := newFake(t, toolUse(5, 1, "", call{"toolu_x", memorytools.SearchMemory, `{"query":"again"}`}))

	res, err := newAdapter(t, f, 3).RunTurn(context.Background(), mkanthropic.Turn{
		Session: fx.Session(t, false), Messages: userTurn("loop"), RunRef: "turn-5",
	})
	var me *memorykit.Error
	if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrUnavailable) || me.Reason != "step_limit" {
		t.Fatalf("err = %v", err)
	}
	if got := len(f.requests()); got != 3 || res.Steps != 3 || len(res.ToolCalls) != 3 {
		t.Errorf("requests %d, steps %d, calls %d; want 3 each", got, res.Steps, len(res.ToolCalls))
	}
	if res.Usage.TotalTokens != 18 || res.Extraction != (extractworker.EnqueueResult{}) {
		t.Errorf("usage %+v, extraction %+v", res.Usage, res.Extraction)
	}
}

func TestProviderErrorIsTypedAndContentFree(t *testing.T) {
	for _, c := range []struct {
		status int
		kind   string
		reason string
		retry  bool
	}{
		{http.StatusUnauthorized, "authentication_error", "provider_status_401", false},
		{http.StatusBadRequest, "invalid_request_error", "provider_status_400", false},
		{http.StatusTooManyRequests, "rate_limit_error", "provider_status_429", true},
		{529, "overloaded_error", "provider_status_529", true},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			fx := adaptertest.New(t)
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("request-id", "req_"+canary)
				w.WriteHeader(c.status)
				fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":"rejected: %s"},"request_id":"req_%s"}`, c.kind, canary, canary)
			})
			_, err := newAdapter(t, f, 2).RunTurn(context.Background(), mkanthropic.Turn{
				Session: fx.Session(t, false), Messages: userTurn("secret question " + canary), RunRef: "turn-6",
			})
			var me *memorykit.Error
			if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrUnavailable) || me.Reason != c.reason || me.Retry != c.retry {
				t.Fatalf("err = %v", err)
			}
			var apiErr *ant.Error
			if errors.As(err, &apiErr) {
				t.Error("the SDK error (request, key, body) is reachable from the returned error")
			}
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if strings.Contains(s, canary) || strings.Contains(s, testKey) || strings.Contains(s, "secret question") {
					t.Errorf("error leaks content: %s", s)
				}
			}
		})
	}
}

func TestProviderUnreachable(t *testing.T) {
	fx := adaptertest.New(t)
	f := newFake(t, answer("unused", 1, 1))
	client := f.client(t)
	f.srv.Close()
	a, err := mkanthropic.New(mkanthropic.Config{Client: client, Model: "m", MaxSteps: 1, MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.RunTurn(context.Background(), mkanthropic.Turn{Session: fx.Session(t, false), Messages: userTurn("hi"), RunRef: "turn-7"})
	var me *memorykit.Error
	if !errors.As(err, &me) || me.Reason != "provider_unreachable" || !me.Retry || strings.Contains(err.Error(), f.srv.URL) {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	fx := adaptertest.New(t)
	arrived := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // hold the request until the client gives up
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-arrived
		cancel()
	}()
	res, err := newAdapter(t, f, 2).RunTurn(ctx, mkanthropic.Turn{Session: fx.Session(t, false), Messages: userTurn("slow"), RunRef: "turn-8"})
	var me *memorykit.Error
	if !errors.As(err, &me) || me.Reason != "context_done" || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if res.Extraction != (extractworker.EnqueueResult{}) || res.Steps != 1 {
		t.Errorf("result after cancel: %+v", res)
	}
}

// TestTracesCarryNoContent: even when the environment asks the SDK to put
// request and response content in its OpenTelemetry spans, the adapter's
// calls record metadata only.
func TestTracesCarryNoContent(t *testing.T) {
	t.Setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
	fx := adaptertest.New(t)
	fx.Remember(t, "canary fact", "The canary memory is "+canary+".")
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	f := newFake(t, answer("The answer mentions "+canary, 3, 3))

	_, err := newAdapter(t, f, 1, option.WithTracerProvider(tp)).RunTurn(context.Background(), mkanthropic.Turn{
		Session: fx.Session(t, false), Messages: userTurn("what is the canary memory " + canary + "?"), RunRef: "turn-9",
	})
	if err != nil {
		t.Fatal(err)
	}
	ended := spans.Ended()
	if len(ended) == 0 {
		t.Fatal("no span recorded; the test would prove nothing")
	}
	for _, s := range ended {
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.String(), canary) {
				t.Errorf("span %s attribute %s carries content", s.Name(), a.Key)
			}
		}
	}
}

func TestInvalidConfigAndTurn(t *testing.T) {
	f := newFake(t)
	client := f.client(t)
	for name, cfg := range map[string]mkanthropic.Config{
		"client":     {Model: "m", MaxSteps: 1, MaxTokens: 1},
		"model":      {Client: client, MaxSteps: 1, MaxTokens: 1},
		"max_steps":  {Client: client, Model: "m", MaxTokens: 1},
		"max_tokens": {Client: client, Model: "m", MaxSteps: 1},
	} {
		if _, err := mkanthropic.New(cfg); !errors.Is(err, memorykit.ErrInvalidConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	fx := adaptertest.New(t)
	a := newAdapter(t, f, 1)
	for name, turn := range map[string]mkanthropic.Turn{
		"session":       {Messages: userTurn("x"), RunRef: "r"},
		"run_ref":       {Session: fx.Session(t, false), Messages: userTurn("x")},
		"messages.role": {Session: fx.Session(t, false), Messages: []projector.Message{{Role: projector.RoleTool, Content: "x", ToolCallID: "c"}}, RunRef: "r"},
	} {
		if _, err := a.RunTurn(context.Background(), turn); !errors.Is(err, memorykit.ErrInvalidInput) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("invalid turns reached the provider %d times", n)
	}
}
