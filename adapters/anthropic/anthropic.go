// Package anthropic runs memorykit turns on the official Anthropic SDK
// (github.com/anthropics/anthropic-sdk-go/v2), through the Messages API
// with tool_use and tool_result blocks.
//
// [Adapter.RunTurn] runs one whole turn: it projects the conversation
// (recall inserts the memory view), calls the model with the Session's
// memory tools, runs every tool_use block of a response (several in one
// response included) through Session.CallTool, sends all their results
// back in one user message, and repeats until the model answers without
// tool use or the step bound is reached. The answer then goes through
// Session.ValidateOutput, and only an accepted answer is handed to
// extraction with Session.FinishTurn.
//
// [ExtractionModel] is the adapter's [extraction.Model]: the one
// structured-output call of memorykit's extraction engine, sent as a
// Messages request whose only tool (the engine's schema as its
// input_schema) is forced with tool_choice (see its documentation for the
// request, the answers it refuses and its errors). [NewExtractor] hands
// one to the engine.
//
// # Mapping
//
// System messages become the request's top-level system text blocks, in
// order. User and assistant messages become user and assistant messages
// with one text block. The memory view stays what the projector made it: a
// separate user message right before the current user message (the
// Messages API has no speaker names; the view's nonce-tagged delimiters
// carry the "untrusted data" framing). Each memory tool becomes a custom
// tool with its name, description and JSON schema. A tool result becomes
// a tool_result block whose is_error mirrors memorytools.Result.IsError.
//
// The SDK can record request and response content in OpenTelemetry spans
// when its environment asks for it; the adapter pins every call to the
// metadata-only mode, so memory never reaches a trace.
//
// # Errors
//
// Every error is a *memorykit.Error whose message holds only an operation,
// a kind and a reason code: never the provider's response body, the
// request, the API key or any message text. Provider failures are
// ErrUnavailable with reason "provider_status_<HTTP status>" (recoverable
// for 408, 409, 429 and 5xx, 529 "overloaded" included) or
// "provider_unreachable"; a cancelled or expired context is ErrUnavailable
// with reason "context_done" and wraps the context's error for errors.Is. Errors from the memory tools
// (authorization, Scope, integrity) are returned as memorykit made them.
//
// The SDK retries failed requests itself, sleeping on the wall clock; Hosts
// that want every retry to follow their injected clock build the client
// with option.WithMaxRetries(0) and retry turns themselves.
// [ExtractionModel] makes one attempt per call whatever the client says,
// and reports a provider's Retry-After in memorykit.Error.RetryAfter for
// the extraction worker's own retry.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	ant "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/turn"
)

// Config configures an Adapter. Every field is required.
type Config struct {
	// Client is the SDK client, built by the Host with its base URL, key
	// and HTTP client.
	Client *ant.Client
	// Model is the model name sent with every request.
	Model string
	// MaxSteps bounds the model calls of one turn, tool rounds included.
	// A model still using tools at the last step fails the turn.
	MaxSteps int
	// MaxTokens bounds each response (the API requires it).
	MaxTokens int64
}

// Adapter runs turns on one model. It is safe for concurrent use.
type Adapter struct {
	cfg Config
}

// New validates cfg and returns an Adapter.
func New(cfg Config) (*Adapter, error) {
	const op = "anthropic.new"
	switch {
	case cfg.Client == nil:
		return nil, memorykit.ConfigError(op, "client", "missing")
	case cfg.Model == "":
		return nil, memorykit.ConfigError(op, "model", "missing")
	case cfg.MaxSteps <= 0:
		return nil, memorykit.ConfigError(op, "max_steps", "must_be_positive")
	case cfg.MaxTokens <= 0:
		return nil, memorykit.ConfigError(op, "max_tokens", "must_be_positive")
	}
	return &Adapter{cfg: cfg}, nil
}

// Turn is one turn to run (see [turn.Turn]).
type Turn = turn.Turn

// ToolCall is one tool call the model made, with the result it got (see
// [turn.ToolCall]).
type ToolCall = turn.ToolCall

// Usage adds up the tokens the provider reported over all model calls of
// a turn (see [turn.Usage]). InputTokens includes cache writes and reads.
type Usage = turn.Usage

// Result is what a turn produced (see [turn.Result]). Its Text is the
// final response's text blocks, joined.
type Result = turn.Result

// RunTurn runs one turn; see the package documentation. On an error the
// returned Result still holds the tool calls, usage and steps so far, and
// FinishTurn has not been called.
func (a *Adapter) RunTurn(ctx context.Context, t Turn) (Result, error) {
	const op = "anthropic.run_turn"
	var res Result
	if err := turn.Begin(ctx, op, t, &res); err != nil {
		return res, err
	}
	params := ant.MessageNewParams{Model: ant.Model(a.cfg.Model), MaxTokens: a.cfg.MaxTokens, Tools: tools(t.Session.Tools())}
	for _, m := range res.Projection.Messages {
		switch m.Role {
		case projector.RoleSystem:
			params.System = append(params.System, ant.TextBlockParam{Text: m.Content})
		case projector.RoleUser:
			params.Messages = append(params.Messages, ant.NewUserMessage(ant.NewTextBlock(m.Content)))
		case projector.RoleAssistant:
			params.Messages = append(params.Messages, ant.NewAssistantMessage(ant.NewTextBlock(m.Content)))
		default:
			return res, turn.RoleError(op)
		}
	}

	final, answered := "", false
	for res.Steps < a.cfg.MaxSteps {
		res.Steps++
		msg, err := a.cfg.Client.Messages.New(ctx, params,
			option.WithOpenTelemetryTracesContentMode(option.OpenTelemetryContentModeMetadataOnly))
		if err != nil {
			return res, providerError(ctx, op, err)
		}
		u := msg.Usage
		in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		res.Usage.Add(in, u.OutputTokens, in+u.OutputTokens)

		var text []string
		var results []ant.ContentBlockParamUnion
		for _, block := range msg.Content {
			switch block.Type {
			case "text":
				text = append(text, block.Text)
			case "tool_use":
				out, err := res.Call(ctx, t.Session, block.ID, block.Name, block.Name, block.Input)
				if err != nil {
					return res, err
				}
				results = append(results, ant.NewToolResultBlock(block.ID, out.Content, out.IsError))
			}
		}
		if len(results) == 0 {
			final, answered = strings.Join(text, ""), true
			break
		}
		params.Messages = append(params.Messages, msg.ToParam(), ant.NewUserMessage(results...))
	}
	if !answered {
		return res, turn.StepLimitError(op)
	}
	return res, turn.Finish(ctx, t, final, &res)
}

// tools maps memory tools to custom tools.
func tools(in []memorytools.Tool) []ant.ToolUnionParam {
	out := make([]ant.ToolUnionParam, 0, len(in))
	for _, t := range in {
		var schema map[string]any
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			// memorytools renders its schemas with encoding/json.
			panic("anthropic adapter: tool schema is not a JSON object")
		}
		input := ant.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					input.Required = append(input.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "type" && k != "properties" && k != "required" {
				input.ExtraFields[k] = v
			}
		}
		out = append(out, ant.ToolUnionParam{OfTool: &ant.ToolParam{
			Name: t.Name, Description: ant.String(t.Description), InputSchema: input,
		}})
	}
	return out
}

// providerError turns an SDK failure into a content-free error. The SDK's
// error keeps the request (with its key) and the response body, so it is
// never wrapped.
func providerError(ctx context.Context, op string, err error) error {
	status := 0
	var apiErr *ant.Error
	if errors.As(err, &apiErr) {
		status = apiErr.StatusCode
	}
	return turn.ProviderError(ctx, op, status)
}
