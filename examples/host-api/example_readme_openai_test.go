package main

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/goagents/memorykit"
	mkopenai "github.com/goagents/memorykit/adapters/openai"
	"github.com/goagents/memorykit/internal/testsupport/adaptertest"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// openAITurn is the README's "Plugging in a real model" on the OpenAI Go
// SDK, shown there verbatim.
func openAITurn(ctx context.Context, baseURL string, rt *mkruntime.Runtime, caller memorykit.Principal, scope memorykit.Scope,
	modelID string, canWrite bool, conversation []projector.Message, turnID string) (mkopenai.Result, error) {
	client := openai.NewClient( // github.com/openai/openai-go/v3
		option.WithBaseURL(baseURL),                    // http://127.0.0.1:11434/v1/ for Ollama; omit for api.openai.com
		option.WithAPIKey(os.Getenv("OPENAI_API_KEY")), // never a flag, never logged
		option.WithMaxRetries(0),                       // retries follow the Host's clock
	)
	chat, err := mkopenai.New(mkopenai.Config{Client: &client, Model: "llama3.2", MaxSteps: 4})
	if err != nil {
		return mkopenai.Result{}, err
	}
	// per request, after authentication:
	s, err := rt.Session(ctx, mkruntime.Request{Caller: caller, Scope: scope, ModelID: modelID, WriteIntent: canWrite})
	if err != nil {
		return mkopenai.Result{}, err
	}
	res, err := chat.RunTurn(ctx, mkopenai.Turn{Session: s, Messages: conversation, RunRef: "turn-" + turnID})
	// res.Text, res.Rejected, res.ToolCalls, res.Usage, res.Projection, res.Extraction
	return res, err
}

// TestReadmeOpenAITurn runs the README's OpenAI block against a fake
// Chat Completions server.
func TestReadmeOpenAITurn(t *testing.T) {
	const key = "sk-readme-test-key"
	t.Setenv("OPENAI_API_KEY", key)
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	fake := adaptertest.NewChatServer(t, key, adaptertest.ChatAnswer("It runs in eu-west-1.", 30, 6))
	f := adaptertest.New(t)
	f.Remember(t, "deploy region", "The API runs in eu-west-1.")
	res, err := openAITurn(context.Background(), fake.Server.URL, f.Runtime, f.User, f.Scope, adaptertest.ModelID, false,
		[]projector.Message{{Role: projector.RoleUser, Content: "Where does the API run?"}}, "1")
	if err != nil || res.Text != "It runs in eu-west-1." || res.Rejected || !res.Projection.Injected {
		t.Fatalf("RunTurn = %+v, %v", res, err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}
