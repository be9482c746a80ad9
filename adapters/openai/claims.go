package openai

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/turn"
)

// ClaimDetectorConfig configures a model-judged claim detector. Every
// field is required.
type ClaimDetectorConfig struct {
	// Client is the SDK client, built by the Host (base URL, key, HTTP
	// client; option.WithMaxRetries(0) keeps every wait on Clock).
	Client *oai.Client
	// Model is the model asked. It must support structured outputs
	// (response_format json_schema with strict).
	Model string
	// Timeout bounds each model call, measured on Clock.
	Timeout time.Duration
	// MaxTextBytes bounds the answer sent to the model; a longer answer is
	// treated as a claim without asking.
	MaxTextBytes int
	// Clock measures Timeout.
	Clock clock.Clock
	// Events receives turn.EventClaimCheckFailed, content-free.
	Events memorykit.EventSink
}

// NewClaimDetector returns a model-judged claim detector on the Chat
// Completions API: it asks the model, with response_format json_schema in
// strict mode, whether an answer claims a memory was saved. The answer is
// sent as untrusted data between nonce-tagged markers. Any error, timeout,
// cancellation, refusal or malformed verdict reports a claim (fail safe)
// and emits turn.EventClaimCheckFailed with a reason code.
//
// Combine it after the built-in rules, so either one rejects:
//
//	claims := memorytools.AnyClaim(memorytools.DefaultClaimDetector(), detector)
//
// and give claims to runtime.Config.Claims (or memorytools.Config.Claims).
func NewClaimDetector(cfg ClaimDetectorConfig) (*turn.ClaimJudge, error) {
	const op = "openai.claim_detector"
	switch {
	case cfg.Client == nil:
		return nil, memorykit.ConfigError(op, "client", "missing")
	case cfg.Model == "":
		return nil, memorykit.ConfigError(op, "model", "missing")
	}
	client, model := cfg.Client, cfg.Model
	ask := func(ctx context.Context, q turn.ClaimQuestion) ([]byte, error) {
		params := oai.ChatCompletionNewParams{
			Model: shared.ChatModel(model),
			Messages: []oai.ChatCompletionMessageParamUnion{
				oai.SystemMessage(q.System),
				oai.UserMessage(q.User),
			},
			ResponseFormat: oai.ChatCompletionNewParamsResponseFormatUnion{
				OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
					JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
						Name:   turn.ClaimVerdictName,
						Strict: oai.Bool(true),
						Schema: turn.ClaimSchema(),
					},
				},
			},
		}
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return nil, providerError(ctx, op, err)
		}
		if len(resp.Choices) == 0 {
			return nil, turn.ProviderError(ctx, op, 0)
		}
		msg := resp.Choices[0].Message
		if msg.Refusal != "" {
			return nil, turn.ErrModelRefused
		}
		return []byte(msg.Content), nil
	}
	return turn.NewClaimJudge(op, turn.ClaimJudgeConfig{
		Timeout: cfg.Timeout, MaxTextBytes: cfg.MaxTextBytes, Clock: cfg.Clock, Events: cfg.Events,
	}, ask)
}
