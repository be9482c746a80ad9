package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	mkanthropic "github.com/goagents/memorykit/adapters/anthropic"
	"github.com/goagents/memorykit/internal/testsupport/adaptertest"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// anthropicTurn is the README's "Plugging in a real model" on the
// Anthropic Go SDK, shown there verbatim.
func anthropicTurn(ctx context.Context, baseURL string, s *mkruntime.Session, modelName string, conversation []projector.Message, turnID string) (mkanthropic.Result, error) {
	client := anthropic.NewClient( // github.com/anthropics/anthropic-sdk-go/v2
		option.WithBaseURL(baseURL), // omit for api.anthropic.com
		option.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY")),
		option.WithMaxRetries(0),
	)
	chat, err := mkanthropic.New(mkanthropic.Config{Client: &client, Model: modelName, MaxSteps: 4, MaxTokens: 1024})
	if err != nil {
		return mkanthropic.Result{}, err
	}
	return chat.RunTurn(ctx, mkanthropic.Turn{Session: s, Messages: conversation, RunRef: "turn-" + turnID})
}

// TestReadmeAnthropicTurn runs the README's Anthropic block against a
// fake Messages server that answers with one text block.
func TestReadmeAnthropicTurn(t *testing.T) {
	const key = "sk-ant-readme-test-key"
	t.Setenv("ANTHROPIC_API_KEY", key)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/messages" || (r.Header.Get("X-Api-Key") != key && r.Header.Get("Authorization") != "Bearer "+key) {
			http.Error(w, "unexpected request", http.StatusNotFound)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test",`+
			`"content":[{"type":"text","text":"It runs in eu-west-1."}],"stop_reason":"end_turn","stop_sequence":null,`+
			`"usage":{"input_tokens":30,"output_tokens":6}}`)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	f := adaptertest.New(t)
	f.Remember(t, "deploy region", "The API runs in eu-west-1.")
	res, err := anthropicTurn(context.Background(), srv.URL, f.Session(t, false), "claude-test",
		[]projector.Message{{Role: projector.RoleUser, Content: "Where does the API run?"}}, "1")
	if err != nil || res.Text != "It runs in eu-west-1." || res.Rejected || !res.Projection.Injected {
		t.Fatalf("RunTurn = %+v, %v", res, err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}
