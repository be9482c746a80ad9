package main

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// This file holds what the chat handler needs of a real model whether or
// not the SDKs are built in: the TurnRunner port, the -model settings and
// the handler's model path. model_sdk.go (build tag sdk) builds the
// runners on memorykit's adapter modules (adapters/openai,
// adapters/anthropic); model_nosdk.go answers -model openai|anthropic in a
// binary built without them. With -model scripted (the default) none of it
// runs.

// Model kinds for -model.
const (
	modelScripted  = "scripted"
	modelOpenAI    = "openai"
	modelAnthropic = "anthropic"
)

// Environment variables that hold the model server's key. A key is never
// a flag (flags show up in process listings and shell history) and is
// never logged.
const (
	envOpenAIKey    = "OPENAI_API_KEY"
	envAnthropicKey = "ANTHROPIC_API_KEY"
)

// TurnRunner runs a whole chat turn on a real model: project, call the
// model, run its tool calls through the Session, validate the answer and
// hand it to extraction. The adapters implement it.
type TurnRunner interface {
	RunTurn(ctx context.Context, s *mkruntime.Session, msgs []projector.Message, runRef string) (TurnOutcome, error)
}

// TurnOutcome is what a TurnRunner reports back to the chat handler.
type TurnOutcome struct {
	Text       string
	Rejected   bool
	ToolCalls  []toolCallJSON
	Projection projector.Projection
	Extraction extractworker.EnqueueResult
	Usage      usageJSON
}

// usageJSON is the provider's token count for one turn.
type usageJSON struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// modelConfig is what -model, -model-url and -model-name ask for.
type modelConfig struct {
	kind string
	url  string
	name string
}

// modelChatResponse is a chat turn's answer on a real model: the scripted
// model's fields plus the provider's token count.
type modelChatResponse struct {
	chatResponse
	Usage usageJSON `json:"usage"`
}

// chatOnModel finishes a chat turn on the configured real model, after the
// chat handler has validated the request and opened the Session. The
// adapter runs the whole turn; the Host maps its outcome to the same
// response as the scripted path.
func (h *Host) chatOnModel(ctx context.Context, w http.ResponseWriter, s *mkruntime.Session, msgs []projector.Message, turnID string) {
	out, err := h.runner.RunTurn(ctx, s, msgs, "turn-"+turnID)
	if err != nil {
		if isModelFailure(err) {
			h.log.Warn("model call failed", zap.String("reason", memorykit.ReasonCode(err)))
			writeError(w, http.StatusBadGateway, "model_unavailable", memorykit.ReasonCode(err), "")
			return
		}
		writeErr(w, err) // projection or a tool failed closed
		return
	}
	resp := modelChatResponse{Usage: out.Usage}
	resp.Degraded, resp.ToolCalls = out.Projection.Degraded, out.ToolCalls
	if out.Projection.Injected {
		resp.MemoryView = out.Projection.Messages[out.Projection.Index].Content
	}
	resp.WriteFailed = s.WriteFailed()
	resp.Reply, resp.OutputRejected = out.Text, out.Rejected
	if out.Rejected {
		resp.Extraction = "skipped"
	} else {
		resp.Extraction = string(out.Extraction.Status)
		if out.Extraction.Reason != "" {
			resp.Extraction += ":" + out.Extraction.Reason
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// isModelFailure reports an error of the model call itself (provider
// status, unreachable server, step bound, cancelled request), as opposed
// to memorykit failing closed during the turn.
func isModelFailure(err error) bool {
	var me *memorykit.Error
	return errors.As(err, &me) && errors.Is(me.Kind, memorykit.ErrUnavailable) && strings.HasSuffix(me.Op, ".run_turn")
}

// checkModelConfig checks the -model settings that need no SDK and
// reports whether they ask for a real model.
func checkModelConfig(cfg modelConfig, getenv func(string) string) (bool, error) {
	const op = "host.model"
	if cfg.kind == "" || cfg.kind == modelScripted {
		if cfg.url != "" || cfg.name != "" {
			return false, memorykit.ConfigError(op, "model", "scripted_takes_no_server")
		}
		return false, nil
	}
	if cfg.name == "" {
		return false, memorykit.ConfigError(op, "model_name", "missing")
	}
	switch cfg.kind {
	case modelOpenAI:
		return true, nil // Ollama and other local servers need no key
	case modelAnthropic:
		if getenv(envAnthropicKey) == "" {
			return false, memorykit.ConfigError(op, "ANTHROPIC_API_KEY", "missing")
		}
		return true, nil
	}
	return false, memorykit.ConfigError(op, "model", "unknown")
}

// modelUsage is the help text of -model.
func modelUsage() string {
	u := "chat model: scripted (offline), openai (Chat Completions; also Ollama, vLLM, llama.cpp) or anthropic; the key comes from $" + envOpenAIKey + " or $" + envAnthropicKey
	if !builtWithSDKs {
		u += "; openai and anthropic need a build with -tags sdk"
	}
	return u
}
