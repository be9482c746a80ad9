//go:build sdk

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/internal/testsupport/adaptertest"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
)

// TestHostChatOnOpenAIPostgres runs chat turns through the OpenAI adapter
// against a fake Chat Completions server, on PostgreSQL + pgvector.
func TestHostChatOnOpenAIPostgres(t *testing.T) { testChatOnOpenAI(t, postgresBackend(t)) }

// TestHostChatOnOpenAIEmbedded is the same on the embedded store.
func TestHostChatOnOpenAIEmbedded(t *testing.T) { testChatOnOpenAI(t, memoryBackend) }

func testChatOnOpenAI(t *testing.T, b backend) {
	fake := adaptertest.NewChatServer(t, modelKey,
		adaptertest.ChatToolCalls(40, 5, adaptertest.Call{ID: "call_1", Name: memorytools.SearchMemory, Args: `{"query":"deploy region"}`}),
		adaptertest.ChatAnswer("The API runs in eu-west-1.", 60, 8),
		func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"message":"upstream failed: %s","type":"server_error","param":null,"code":null}}`, modelCanary)
		})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	getenv := func(k string) string {
		if k == envOpenAIKey {
			return modelKey
		}
		return ""
	}
	runner, err := newTurnRunner(modelConfig{kind: modelOpenAI, url: fake.Server.URL, name: "test-model"}, getenv, &http.Client{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, b, nil, func(o *Options) { o.Model, o.Runner = nil, runner })
	id := e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in eu-west-1.")

	r := e.must(http.StatusOK, aliceToken, "POST", apollo+"/chat", `{"message":"Where does the API run?","turn_id":"turn-1"}`)
	if r.str("reply") != "The API runs in eu-west-1." || r.str("extraction") != "queued" || r.get("output_rejected") != false {
		t.Errorf("chat: %s", r.raw)
	}
	if r.str("tool_calls.0.name") != memorytools.SearchMemory || !strings.Contains(r.str("tool_calls.0.result"), id) {
		t.Errorf("tool calls: %s", r.raw)
	}
	if r.get("usage.total_tokens") != float64(113) || !strings.Contains(r.str("memory_view"), `id="`+id+`"`) {
		t.Errorf("usage or view: %s", r.raw)
	}

	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	first := reqs[0]
	msgs, _ := adaptertest.JSONPath(first, "messages").([]any)
	if len(msgs) != 3 || adaptertest.JSONPath(first, "model") != "test-model" {
		t.Fatalf("first request: %v", first)
	}
	// The Host's system prompt, the memory view as its own named user
	// message, then the user's message; alice may write, so three tools.
	if adaptertest.JSONPath(first, "messages.0.role") != "system" ||
		adaptertest.JSONPath(first, "messages.1.name") != projector.ViewName ||
		adaptertest.JSONPath(first, "messages.2.content") != "Where does the API run?" {
		t.Errorf("messages: %v", msgs)
	}
	if tools, _ := adaptertest.JSONPath(first, "tools").([]any); len(tools) != 3 {
		t.Errorf("tools: %v", tools)
	}

	// A provider failure is a 502 with a reason code, and neither the
	// response nor the logs carry the provider's body or the key.
	r = e.must(http.StatusBadGateway, aliceToken, "POST", apollo+"/chat", `{"message":"and again?"}`)
	if r.str("error") != "model_unavailable" || r.str("reason") != "provider_status_500" || strings.Contains(r.raw, modelCanary) {
		t.Errorf("provider failure: %s", r.raw)
	}
	e.assertLogsFree(modelKey, modelCanary, "eu-west-1", "Where does the API run")
}

func TestNewTurnRunnerKinds(t *testing.T) {
	env := func(k string) string {
		if k == envAnthropicKey || k == envOpenAIKey {
			return modelKey
		}
		return ""
	}
	for _, c := range []struct {
		cfg  modelConfig
		want string
	}{
		{modelConfig{}, "<nil>"},
		{modelConfig{kind: modelScripted}, "<nil>"},
		{modelConfig{kind: modelOpenAI, name: "llama3.2", url: "http://127.0.0.1:11434/v1/"}, "*openai.Adapter"},
		{modelConfig{kind: modelAnthropic, name: "m"}, "*anthropic.Adapter"},
	} {
		r, err := newTurnRunner(c.cfg, env, nil)
		got := fmt.Sprintf("%T", r)
		if ar, ok := r.(adapterRunner); ok {
			got = fmt.Sprintf("%T", ar.a) // the SDK adapter it runs on
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: runner %s, err %v; want %s", c.cfg, got, err, c.want)
		}
	}
	// Ollama needs no key: an OpenAI runner without one is fine.
	if _, err := newTurnRunner(modelConfig{kind: modelOpenAI, name: "m"}, func(string) string { return "" }, nil); err != nil {
		t.Errorf("openai without a key: %v", err)
	}
}

// TestNewExtractionModelKinds: -model openai|anthropic builds the
// extraction.Model on the same kind of client as the turns, and the
// scripted model has none.
func TestNewExtractionModelKinds(t *testing.T) {
	env := func(k string) string {
		if k == envAnthropicKey || k == envOpenAIKey {
			return modelKey
		}
		return ""
	}
	for _, c := range []struct {
		cfg  modelConfig
		want string
	}{
		{modelConfig{}, "<nil>"},
		{modelConfig{kind: modelScripted}, "<nil>"},
		{modelConfig{kind: modelOpenAI, name: "llama3.2", url: "http://127.0.0.1:11434/v1/"}, "*openai.ExtractionModel"},
		{modelConfig{kind: modelAnthropic, name: "m"}, "*anthropic.ExtractionModel"},
	} {
		m, err := newExtractionModel(c.cfg, env, nil)
		if got := fmt.Sprintf("%T", m); err != nil || got != c.want {
			t.Errorf("%+v: model %s, err %v; want %s", c.cfg, got, err, c.want)
		}
	}
	for _, cfg := range []modelConfig{{kind: "gpt-magic", name: "m"}, {kind: modelOpenAI}, {kind: modelAnthropic, name: "m"}, {url: "http://x/"}} {
		if m, err := newExtractionModel(cfg, func(string) string { return "" }, nil); err == nil || m != nil {
			t.Errorf("%+v: model %T, err %v", cfg, m, err)
		}
	}
}

// TestExtractionModelUsesTheTurnsServer: the extraction model calls the
// -model-url server with the model name and key the turns use.
func TestExtractionModelUsesTheTurnsServer(t *testing.T) {
	req := extraction.Request{
		Instructions: "Propose memories.", Input: "user: we deploy to eu-west-1", SchemaName: "propose_memories",
		Schema: json.RawMessage(`{"type":"object","properties":{"memories":{"type":"array"}},"required":["memories"],"additionalProperties":false}`), MaxOutputTokens: 200,
	}
	t.Run("openai", func(t *testing.T) {
		fake := adaptertest.NewChatServer(t, modelKey, adaptertest.ChatAnswer(`{"memories":[]}`, 5, 6))
		getenv := func(k string) string {
			if k == envOpenAIKey {
				return modelKey
			}
			return ""
		}
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		m, err := newExtractionModel(modelConfig{kind: modelOpenAI, url: fake.Server.URL, name: "test-model"}, getenv, &http.Client{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		res, err := generateBounded(t, m, req)
		if err != nil || string(res.JSON) != `{"memories":[]}` {
			t.Fatalf("res %s, err %v", res.JSON, err)
		}
		reqs := fake.Requests()
		if len(reqs) != 1 || adaptertest.JSONPath(reqs[0], "model") != "test-model" || adaptertest.JSONPath(reqs[0], "response_format.json_schema.strict") != true {
			t.Errorf("requests: %v", reqs)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		var mu sync.Mutex
		var got []map[string]any
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/messages" {
				http.Error(w, "unexpected endpoint", http.StatusNotFound)
				return
			}
			if r.Header.Get("x-api-key") != modelKey && r.Header.Get("Authorization") != "Bearer "+modelKey {
				http.Error(w, "bad key", http.StatusUnauthorized)
				return
			}
			var body map[string]any
			raw, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(raw, &body)
			mu.Lock()
			got = append(got, body)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"test-model","content":[`+
				`{"type":"tool_use","id":"toolu_1","name":"propose_memories","input":{"memories":[]}}],`+
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":6}}`)
		}))
		t.Cleanup(srv.Close)
		getenv := func(k string) string {
			if k == envAnthropicKey {
				return modelKey
			}
			return ""
		}
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		m, err := newExtractionModel(modelConfig{kind: modelAnthropic, url: srv.URL, name: "test-model"}, getenv, &http.Client{Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		res, err := generateBounded(t, m, req)
		if err != nil || string(res.JSON) != `{"memories":[]}` {
			t.Fatalf("res %s, err %v", res.JSON, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || adaptertest.JSONPath(got[0], "model") != "test-model" || adaptertest.JSONPath(got[0], "tool_choice.name") != "propose_memories" {
			t.Errorf("requests: %v", got)
		}
	})
}

func generateBounded(t *testing.T, m extraction.Model, req extraction.Request) (extraction.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard, not the subject
	defer cancel()
	return m.Generate(ctx, req)
}
