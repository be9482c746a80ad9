package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	mkopenai "github.com/goagents/memorykit/adapters/openai"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/adaptertest"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testKey = "sk-test-KEYCANARY-0001"
	canary  = "PAYLOADCANARY-7f3a"
)

// fakeChat is the shared Chat Completions fake with a client factory.
type fakeChat struct {
	*adaptertest.ChatServer
	srv *httptest.Server
}

func newFakeChat(t *testing.T, replies ...http.HandlerFunc) *fakeChat {
	c := adaptertest.NewChatServer(t, testKey, replies...)
	return &fakeChat{ChatServer: c, srv: c.Server}
}

func (f *fakeChat) requests() []map[string]any { return f.Requests() }

// client builds an SDK client for the fake server, with no retries and an
// HTTP transport the test closes.
func (f *fakeChat) client(t *testing.T) *oai.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := oai.NewClient(option.WithBaseURL(f.srv.URL), option.WithAPIKey(testKey),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
	return &c
}

var (
	answer    = adaptertest.ChatAnswer
	toolCalls = adaptertest.ChatToolCalls
	path      = adaptertest.JSONPath
)

func call(id, name, args string) adaptertest.Call {
	return adaptertest.Call{ID: id, Name: name, Args: args}
}

func newAdapter(t *testing.T, f *fakeChat, steps int) *mkopenai.Adapter {
	a, err := mkopenai.New(mkopenai.Config{Client: f.client(t), Model: "test-model", MaxSteps: steps})
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

func str(v any, p string) string { s, _ := path(v, p).(string); return s }

func count(v any, p string) int { l, _ := path(v, p).([]any); return len(l) }

func TestPlainAnswerWithMemoryView(t *testing.T) {
	fx := adaptertest.New(t)
	id := fx.Remember(t, "deploy region", "The API runs in eu-west-1.")
	f := newFakeChat(t, answer("The API runs in eu-west-1.", 120, 9))
	s := fx.Session(t, true)

	res, err := newAdapter(t, f, 4).RunTurn(context.Background(), mkopenai.Turn{
		Session: s, Messages: userTurn("Where does the API run?"), RunRef: "turn-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "The API runs in eu-west-1." || res.Rejected || res.Steps != 1 || len(res.ToolCalls) != 0 {
		t.Errorf("result: %+v", res)
	}
	if res.Usage != (mkopenai.Usage{InputTokens: 120, OutputTokens: 9, TotalTokens: 129}) {
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
	if str(req, "model") != "test-model" || count(req, "messages") != 3 {
		t.Fatalf("request: %v", req)
	}
	// system, then the memory view as its own named user message, then the
	// user turn.
	if str(req, "messages.0.role") != "system" {
		t.Errorf("first message: %v", path(req, "messages.0"))
	}
	view := str(req, "messages.1.content")
	if str(req, "messages.1.role") != "user" || str(req, "messages.1.name") != projector.ViewName ||
		!strings.HasPrefix(view, "<memory-view nonce=") || !strings.Contains(view, `id="`+id+`"`) {
		t.Errorf("memory view message: %v", path(req, "messages.1"))
	}
	if str(req, "messages.2.role") != "user" || str(req, "messages.2.content") != "Where does the API run?" || path(req, "messages.2.name") != nil {
		t.Errorf("user message: %v", path(req, "messages.2"))
	}
	// Tools: every memory tool, with its description and exact schema.
	want := s.Tools()
	if count(req, "tools") != len(want) || len(want) != 3 {
		t.Fatalf("tools: %v", path(req, "tools"))
	}
	for i, tool := range want {
		p := fmt.Sprintf("tools.%d.", i)
		if str(req, p+"type") != "function" || str(req, p+"function.name") != tool.Name || str(req, p+"function.description") != tool.Description {
			t.Errorf("tool %d: %v", i, path(req, "tools."+fmt.Sprint(i)))
		}
		var schema any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(path(req, p+"function.parameters")); string(got) != mustJSON(t, schema) {
			t.Errorf("tool %s schema %s, want %s", tool.Name, got, mustJSON(t, schema))
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOneToolCall(t *testing.T) {
	fx := adaptertest.New(t)
	id := fx.Remember(t, "deploy region", "The API runs in eu-west-1.")
	f := newFakeChat(t,
		toolCalls(50, 7, call("call_a", memorytools.SearchMemory, `{"query":"deploy region"}`)),
		answer("It runs in eu-west-1.", 80, 6))

	res, err := newAdapter(t, f, 4).RunTurn(context.Background(), mkopenai.Turn{
		Session: fx.Session(t, false), Messages: userTurn("search please"), RunRef: "turn-2",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "It runs in eu-west-1." || res.Steps != 2 || len(res.ToolCalls) != 1 {
		t.Fatalf("result: %+v", res)
	}
	tc := res.ToolCalls[0]
	if tc.ID != "call_a" || tc.Name != memorytools.SearchMemory || tc.Result.IsError || !strings.Contains(tc.Result.Content, id) {
		t.Errorf("tool call: %+v", tc)
	}
	if res.Usage != (mkopenai.Usage{InputTokens: 130, OutputTokens: 13, TotalTokens: 143}) {
		t.Errorf("usage: %+v", res.Usage)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// Without write intent the remember tool is not offered.
	if count(reqs[0], "tools") != 2 {
		t.Errorf("tools without write intent: %v", path(reqs[0], "tools"))
	}
	second := reqs[1]
	n := count(second, "messages")
	asst, tool := fmt.Sprintf("messages.%d.", n-2), fmt.Sprintf("messages.%d.", n-1)
	if str(second, asst+"role") != "assistant" || str(second, asst+"tool_calls.0.id") != "call_a" ||
		str(second, asst+"tool_calls.0.function.name") != memorytools.SearchMemory ||
		str(second, asst+"tool_calls.0.function.arguments") != `{"query":"deploy region"}` {
		t.Errorf("assistant tool call echoed: %v", path(second, strings.TrimSuffix(asst, ".")))
	}
	if str(second, tool+"role") != "tool" || str(second, tool+"tool_call_id") != "call_a" || str(second, tool+"content") != tc.Result.Content {
		t.Errorf("tool result message: %v", path(second, strings.TrimSuffix(tool, ".")))
	}
}

func TestParallelToolCalls(t *testing.T) {
	fx := adaptertest.New(t)
	fx.Remember(t, "deploy region", "The API runs in eu-west-1.")
	f := newFakeChat(t,
		toolCalls(10, 1,
			call("call_1", memorytools.SearchMemory, `{"query":"region"}`),
			call("call_2", memorytools.ReadMemory, `{"id":"no-such-memory"}`),
			call("call_3", memorytools.RememberProjectMemory, `{"kind":"fact","key":"db","content":"Postgres 16."}`)),
		answer("Noted the database; the region is eu-west-1.", 10, 1))

	res, err := newAdapter(t, f, 4).RunTurn(context.Background(), mkopenai.Turn{
		Session: fx.Session(t, true), Messages: userTurn("several at once"), RunRef: "turn-3",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 3 || res.Steps != 2 || res.Rejected {
		t.Fatalf("result: %+v", res)
	}
	for i, name := range []string{memorytools.SearchMemory, memorytools.ReadMemory, memorytools.RememberProjectMemory} {
		if res.ToolCalls[i].Name != name || res.ToolCalls[i].ID != fmt.Sprintf("call_%d", i+1) {
			t.Errorf("call %d: %+v", i, res.ToolCalls[i])
		}
	}
	if !res.ToolCalls[1].Result.IsError || res.ToolCalls[0].Result.IsError || res.ToolCalls[2].Result.IsError {
		t.Errorf("error flags: %+v", res.ToolCalls)
	}
	second := f.requests()[1]
	n := count(second, "messages")
	if count(second, fmt.Sprintf("messages.%d.tool_calls", n-4)) != 3 {
		t.Fatalf("one assistant message should carry all three calls: %v", path(second, "messages"))
	}
	for i := 0; i < 3; i++ {
		p := fmt.Sprintf("messages.%d.", n-3+i)
		if str(second, p+"role") != "tool" || str(second, p+"tool_call_id") != fmt.Sprintf("call_%d", i+1) {
			t.Errorf("tool message %d: %v", i, path(second, strings.TrimSuffix(p, ".")))
		}
	}
	// The failed read is marked as an error for the model.
	var failed struct {
		IsError bool   `json:"is_error"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal([]byte(str(second, fmt.Sprintf("messages.%d.content", n-2))), &failed); err != nil ||
		!failed.IsError || failed.Error != res.ToolCalls[1].Result.Content {
		t.Errorf("error result content: %q", str(second, fmt.Sprintf("messages.%d.content", n-2)))
	}
}

func TestFailedRememberThenSuccessClaimIsRejected(t *testing.T) {
	fx := adaptertest.New(t)
	f := newFakeChat(t,
		toolCalls(10, 1, call("call_w", memorytools.RememberProjectMemory,
			`{"kind":"fact","key":"token","content":"`+adaptertest.RejectMarker+` the value"}`)),
		answer("Done: I saved that to project memory.", 10, 1))
	s := fx.Session(t, true)

	res, err := newAdapter(t, f, 4).RunTurn(context.Background(), mkopenai.Turn{
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
	if !s.WriteFailed() || len(res.ToolCalls) != 1 || !res.ToolCalls[0].Result.IsError || res.ToolCalls[0].Result.Content != memorytools.NotSavedText {
		t.Errorf("tool call: %+v", res.ToolCalls)
	}
	second := f.requests()[1]
	last := fmt.Sprintf("messages.%d.content", count(second, "messages")-1)
	if got := str(second, last); got != `{"is_error":true,"error":"项目记忆未保存"}` {
		t.Errorf("the model saw %q", got)
	}
}

func TestToolLoopStopsAtBound(t *testing.T) {
	fx := adaptertest.New(t)
	f := newFakeChat(t, toolCalls(5, 1, call("call_x", memorytools.SearchMemory, `{"query":"again"}`)))

	res, err := newAdapter(t, f, 3).RunTurn(context.Background(), mkopenai.Turn{
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
		reason string
		retry  bool
	}{
		{http.StatusUnauthorized, "provider_status_401", false},
		{http.StatusBadRequest, "provider_status_400", false},
		{http.StatusTooManyRequests, "provider_status_429", true},
		{http.StatusInternalServerError, "provider_status_500", true},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			fx := adaptertest.New(t)
			f := newFakeChat(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, canary)
			})
			_, err := newAdapter(t, f, 2).RunTurn(context.Background(), mkopenai.Turn{
				Session: fx.Session(t, false), Messages: userTurn("secret question " + canary), RunRef: "turn-6",
			})
			var me *memorykit.Error
			if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrUnavailable) || me.Reason != c.reason || me.Retry != c.retry {
				t.Fatalf("err = %v", err)
			}
			var apiErr *oai.Error
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
	f := newFakeChat(t, answer("unused", 1, 1))
	client := f.client(t)
	f.srv.Close() // nothing listens any more
	a, err := mkopenai.New(mkopenai.Config{Client: client, Model: "m", MaxSteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.RunTurn(context.Background(), mkopenai.Turn{Session: fx.Session(t, false), Messages: userTurn("hi"), RunRef: "turn-7"})
	var me *memorykit.Error
	if !errors.As(err, &me) || me.Reason != "provider_unreachable" || !me.Retry || strings.Contains(err.Error(), f.srv.URL) {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	fx := adaptertest.New(t)
	arrived := make(chan struct{})
	f := newFakeChat(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // hold the request until the client gives up
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-arrived
		cancel()
	}()
	res, err := newAdapter(t, f, 2).RunTurn(ctx, mkopenai.Turn{Session: fx.Session(t, false), Messages: userTurn("slow"), RunRef: "turn-8"})
	var me *memorykit.Error
	if !errors.As(err, &me) || me.Reason != "context_done" || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if res.Extraction != (extractworker.EnqueueResult{}) || res.Steps != 1 {
		t.Errorf("result after cancel: %+v", res)
	}
}

func TestInvalidConfigAndTurn(t *testing.T) {
	f := newFakeChat(t)
	client := f.client(t)
	for name, cfg := range map[string]mkopenai.Config{
		"client":    {Model: "m", MaxSteps: 1},
		"model":     {Client: client, MaxSteps: 1},
		"max_steps": {Client: client, Model: "m"},
	} {
		if _, err := mkopenai.New(cfg); !errors.Is(err, memorykit.ErrInvalidConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	fx := adaptertest.New(t)
	a := newAdapter(t, f, 1)
	for name, turn := range map[string]mkopenai.Turn{
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

// TestCompatibleServerToolCalls: a call without "type" (as some
// OpenAI-compatible servers send it) still runs as a function call, and
// arguments that are not JSON get the tool's error result and no
// Arguments, so the Result always marshals.
func TestCompatibleServerToolCalls(t *testing.T) {
	fx := adaptertest.New(t)
	id := fx.Remember(t, "deploy region", "The API runs in eu-west-1.")
	f := newFakeChat(t,
		adaptertest.Completion(`{"role":"assistant","content":"","tool_calls":[`+
			`{"id":"call_1","index":0,"function":{"name":"search_memory","arguments":"{\"query\":\"deploy region\"}"}},`+
			`{"id":"call_2","index":1,"type":"function","function":{"name":"read_memory","arguments":"{id: oops"}}]}`, "tool_calls", 1, 1),
		answer("ok", 1, 1))
	res, err := newAdapter(t, f, 2).RunTurn(context.Background(), mkopenai.Turn{
		Session: fx.Session(t, false), Messages: userTurn("compatible"), RunRef: "turn-10",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 2 {
		t.Fatalf("calls: %+v", res.ToolCalls)
	}
	if c := res.ToolCalls[0]; c.Result.IsError || !strings.Contains(c.Result.Content, id) || string(c.Arguments) != `{"query":"deploy region"}` {
		t.Errorf("untyped call: %+v", c)
	}
	if c := res.ToolCalls[1]; !c.Result.IsError || !strings.HasPrefix(c.Result.Content, "invalid arguments") || c.Arguments != nil {
		t.Errorf("bad arguments: %+v", c)
	}
	if _, err := json.Marshal(res.ToolCalls); err != nil {
		t.Errorf("tool calls do not marshal: %v", err)
	}
}

// TestRefusalIsTheAnswer: a refusal (no content) is what the user sees.
func TestRefusalIsTheAnswer(t *testing.T) {
	fx := adaptertest.New(t)
	f := newFakeChat(t, adaptertest.Completion(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`, "stop", 1, 1))
	res, err := newAdapter(t, f, 1).RunTurn(context.Background(), mkopenai.Turn{
		Session: fx.Session(t, false), Messages: userTurn("refuse"), RunRef: "turn-11",
	})
	if err != nil || res.Text != "I can't help with that." {
		t.Fatalf("text %q, err %v", res.Text, err)
	}
}
