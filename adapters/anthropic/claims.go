package anthropic

import (
	"context"
	"time"

	ant "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/turn"
)

// ClaimDetectorConfig configures a model-judged claim detector. Every
// field is required.
type ClaimDetectorConfig struct {
	// Client is the SDK client, built by the Host (base URL, key, HTTP
	// client; option.WithMaxRetries(0) keeps every wait on Clock).
	Client *ant.Client
	// Model is the model asked.
	Model string
	// MaxTokens bounds the verdict; the verdict is a few tokens, so a
	// small value (such as 64) suffices.
	MaxTokens int64
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

// NewClaimDetector returns a model-judged claim detector on the Messages
// API: it asks the model whether an answer claims a memory was saved, and
// forces the answer through one strict tool whose input is the verdict.
// The answer is sent as untrusted data between nonce-tagged markers. Any
// error, timeout, cancellation, refusal, missing tool call or malformed
// verdict reports a claim (fail safe) and emits turn.EventClaimCheckFailed
// with a reason code.
//
// Combine it after the built-in rules, so either one rejects:
//
//	claims := memorytools.AnyClaim(memorytools.DefaultClaimDetector(), detector)
//
// and give claims to runtime.Config.Claims (or memorytools.Config.Claims).
func NewClaimDetector(cfg ClaimDetectorConfig) (*turn.ClaimJudge, error) {
	const op = "anthropic.claim_detector"
	switch {
	case cfg.Client == nil:
		return nil, memorykit.ConfigError(op, "client", "missing")
	case cfg.Model == "":
		return nil, memorykit.ConfigError(op, "model", "missing")
	case cfg.MaxTokens <= 0:
		return nil, memorykit.ConfigError(op, "max_tokens", "must_be_positive")
	}
	client, model, maxTokens := cfg.Client, cfg.Model, cfg.MaxTokens
	ask := func(ctx context.Context, q turn.ClaimQuestion) ([]byte, error) {
		schema := turn.ClaimSchema()
		input := ant.ToolInputSchemaParam{
			Properties:  schema["properties"],
			Required:    []string{turn.ClaimVerdictField},
			ExtraFields: map[string]any{"additionalProperties": false},
		}
		params := ant.MessageNewParams{
			Model:     ant.Model(model),
			MaxTokens: maxTokens,
			System:    []ant.TextBlockParam{{Text: q.System}},
			Messages:  []ant.MessageParam{ant.NewUserMessage(ant.NewTextBlock(q.User))},
			Tools: []ant.ToolUnionParam{{OfTool: &ant.ToolParam{
				Name:        turn.ClaimVerdictName,
				Description: ant.String("Report whether the answer claims that something was saved or remembered."),
				InputSchema: input,
				Strict:      ant.Bool(true),
			}}},
			ToolChoice: ant.ToolChoiceUnionParam{OfTool: &ant.ToolChoiceToolParam{
				Name: turn.ClaimVerdictName, DisableParallelToolUse: ant.Bool(true),
			}},
		}
		msg, err := client.Messages.New(ctx, params,
			option.WithOpenTelemetryTracesContentMode(option.OpenTelemetryContentModeMetadataOnly))
		if err != nil {
			return nil, providerError(ctx, op, err)
		}
		if msg.StopReason == ant.StopReasonRefusal {
			return nil, turn.ErrModelRefused
		}
		var verdict []byte
		for _, block := range msg.Content {
			if block.Type == "tool_use" {
				if block.Name != turn.ClaimVerdictName || verdict != nil {
					return nil, turn.ErrBadVerdict
				}
				verdict = block.Input
			}
		}
		if verdict == nil {
			return nil, turn.ErrBadVerdict
		}
		return verdict, nil
	}
	return turn.NewClaimJudge(op, turn.ClaimJudgeConfig{
		Timeout: cfg.Timeout, MaxTextBytes: cfg.MaxTextBytes, Clock: cfg.Clock, Events: cfg.Events,
	}, ask)
}
