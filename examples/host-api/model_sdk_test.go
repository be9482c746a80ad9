package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/goagents/memorykit/internal/adaptertest"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
)

const (
	modelKey    = "sk-host-test-KEYCANARY"
	modelCanary = "PROVIDERCANARY-51d0"
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

func TestModelFlags(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"unknown model", []string{"-model", "gpt-magic", "-model-name", "m"}, nil},
		{"no model name", []string{"-model", "openai"}, nil},
		{"anthropic without key", []string{"-model", "anthropic", "-model-name", "m"}, nil},
		{"scripted with a server", []string{"-model-url", "http://127.0.0.1:1/v1/"}, nil},
		{"no key flag exists", []string{"-model", "openai", "-model-name", "m", "-model-key", modelKey}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			if code := run(context.Background(), c.args, &out, &errOut); code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errOut.String())
			}
			if strings.Contains(errOut.String()+out.String(), modelKey) {
				t.Error("the key was printed")
			}
		})
	}
	// A key in the environment is never printed, not even by -help.
	t.Setenv(envOpenAIKey, modelKey)
	var out, errOut bytes.Buffer
	run(context.Background(), []string{"-help"}, &out, &errOut)
	if strings.Contains(errOut.String()+out.String(), modelKey) {
		t.Error("-help printed the key")
	}
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
