// Package openai runs memorykit turns on the official openai-go SDK
// (github.com/openai/openai-go/v3), through the Chat Completions API: the
// API that OpenAI and OpenAI-compatible servers (Ollama, vLLM, llama.cpp)
// all speak.
//
// [Adapter.RunTurn] runs one whole turn: it projects the conversation
// (recall inserts the memory view), calls the model with the Session's
// memory tools, runs every tool call the model makes (several in one
// response included) through Session.CallTool, calls the model again with
// the results, and repeats until the model answers with text or the step
// bound is reached. The answer then goes through Session.ValidateOutput,
// and only an accepted answer is handed to extraction with
// Session.FinishTurn.
//
// [ExtractionModel] is the adapter's [extraction.Model]: the one
// structured-output call of memorykit's extraction engine, sent as a Chat
// Completions request with a strict json_schema response format (see its
// documentation for the request, the answers it refuses and its errors).
// [NewExtractor] hands one to the engine.
//
// # Mapping
//
// System, user and assistant messages map to the same Chat Completions
// roles. The memory view stays what the projector made it: a separate user
// message, named [projector.ViewName], right before the current user
// message; its nonce-tagged delimiters carry the "untrusted data" framing.
// Each memory tool becomes a function tool with its name, description and
// JSON schema. Chat Completions has no error flag on a tool message, so an
// error result (memorytools.Result.IsError) is sent as the JSON object
// {"is_error":true,"error":"<text>"}; a successful result is sent as the
// tool's own text.
//
// # Errors
//
// Every error is a *memorykit.Error whose message holds only an operation,
// a kind and a reason code: never the provider's response body, the
// request, the API key or any message text. Provider failures are
// ErrUnavailable with reason "provider_status_<HTTP status>" (recoverable
// for 408, 409, 429 and 5xx), "provider_unreachable" or
// "provider_bad_response"; a cancelled or expired context is
// ErrUnavailable with reason "context_done" and wraps the context's error
// for errors.Is. Errors from the memory tools (authorization, Scope,
// integrity) are returned as memorykit made them.
//
// The SDK retries failed requests itself, sleeping on the wall clock; Hosts
// that want every retry to follow their injected clock build the client
// with option.WithMaxRetries(0) and retry turns themselves.
// [ExtractionModel] makes one attempt per call whatever the client says,
// and reports a provider's Retry-After in memorykit.Error.RetryAfter for
// the extraction worker's own retry.
//
// # Compatible servers
//
// Extraction needs a server that honours response_format json_schema:
// OpenAI does (strict mode), and so do current Ollama and vLLM releases,
// which constrain decoding to the schema. A server that ignores it answers
// free text, which ExtractionModel refuses as provider_bad_response. A
// server that reads only max_tokens needs
// [WithExtractionMaxTokensField].
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/turn"
)

// Config configures an Adapter. Client, Model and MaxSteps are required.
type Config struct {
	// Client is the SDK client, built by the Host with its base URL, key
	// and HTTP client.
	Client *oai.Client
	// Model is the model name sent with every request.
	Model string
	// MaxSteps bounds the model calls of one turn, tool rounds included.
	// A model still asking for tools at the last step fails the turn.
	MaxSteps int
	// MaxCompletionTokens bounds each response; zero leaves it to the
	// server.
	MaxCompletionTokens int64
}

// Adapter runs turns on one model. It is safe for concurrent use.
type Adapter struct {
	cfg Config
}

// New validates cfg and returns an Adapter.
func New(cfg Config) (*Adapter, error) {
	const op = "openai.new"
	switch {
	case cfg.Client == nil:
		return nil, memorykit.ConfigError(op, "client", "missing")
	case cfg.Model == "":
		return nil, memorykit.ConfigError(op, "model", "missing")
	case cfg.MaxSteps <= 0:
		return nil, memorykit.ConfigError(op, "max_steps", "must_be_positive")
	case cfg.MaxCompletionTokens < 0:
		return nil, memorykit.ConfigError(op, "max_completion_tokens", "negative")
	}
	return &Adapter{cfg: cfg}, nil
}

// Turn is one turn to run (see [turn.Turn]).
type Turn = turn.Turn

// ToolCall is one tool call the model made, with the result it got (see
// [turn.ToolCall]).
type ToolCall = turn.ToolCall

// Usage adds up the tokens the provider reported over all model calls of
// a turn (see [turn.Usage]).
type Usage = turn.Usage

// Result is what a turn produced (see [turn.Result]).
type Result = turn.Result

// errorResult is how a tool error result reaches the model.
type errorResult struct {
	IsError bool   `json:"is_error"`
	Error   string `json:"error"`
}

// RunTurn runs one turn; see the package documentation. On an error the
// returned Result still holds the tool calls, usage and steps so far, and
// FinishTurn has not been called.
func (a *Adapter) RunTurn(ctx context.Context, t Turn) (Result, error) {
	const op = "openai.run_turn"
	var res Result
	if err := turn.Begin(ctx, op, t, &res); err != nil {
		return res, err
	}
	msgs, err := messages(op, res.Projection.Messages)
	if err != nil {
		return res, err
	}
	params := oai.ChatCompletionNewParams{Model: shared.ChatModel(a.cfg.Model), Messages: msgs, Tools: tools(t.Session.Tools())}
	if a.cfg.MaxCompletionTokens > 0 {
		params.MaxCompletionTokens = oai.Int(a.cfg.MaxCompletionTokens)
	}

	final, answered := "", false
	for res.Steps < a.cfg.MaxSteps {
		res.Steps++
		completion, err := a.cfg.Client.Chat.Completions.New(ctx, params)
		if err != nil {
			return res, providerError(ctx, op, err)
		}
		res.Usage.Add(completion.Usage.PromptTokens, completion.Usage.CompletionTokens, completion.Usage.TotalTokens)
		if len(completion.Choices) == 0 {
			return res, turn.BadResponseError(op)
		}
		msg := completion.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			final, answered = msg.Content, true
			if final == "" {
				final = msg.Refusal // a refusal is the model's answer too
			}
			break
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			// Some compatible servers leave "type" out of a function call.
			// A custom tool is never offered, so the Session answers it as
			// an unknown tool.
			name, args := tc.Function.Name, json.RawMessage(tc.Function.Arguments)
			custom := tc.Type == "custom"
			if custom {
				name, args = tc.Custom.Name, json.RawMessage(tc.Custom.Input)
			}
			callAs := name
			if custom {
				callAs = ""
			}
			out, err := res.Call(ctx, t.Session, tc.ID, name, callAs, args)
			if err != nil {
				return res, err
			}
			params.Messages = append(params.Messages, oai.ToolMessage(toolContent(out), tc.ID))
		}
	}
	if !answered {
		return res, turn.StepLimitError(op)
	}
	return res, turn.Finish(ctx, t, final, &res)
}

// messages maps projected messages to Chat Completions messages.
func messages(op string, in []projector.Message) ([]oai.ChatCompletionMessageParamUnion, error) {
	out := make([]oai.ChatCompletionMessageParamUnion, 0, len(in))
	for _, m := range in {
		switch m.Role {
		case projector.RoleSystem:
			out = append(out, oai.SystemMessage(m.Content))
		case projector.RoleUser:
			u := oai.ChatCompletionUserMessageParam{}
			u.Content.OfString = oai.String(m.Content)
			if m.Name != "" {
				u.Name = oai.String(m.Name)
			}
			out = append(out, oai.ChatCompletionMessageParamUnion{OfUser: &u})
		case projector.RoleAssistant:
			out = append(out, oai.AssistantMessage(m.Content))
		default:
			return nil, turn.RoleError(op)
		}
	}
	return out, nil
}

// tools maps memory tools to function tools.
func tools(in []memorytools.Tool) []oai.ChatCompletionToolUnionParam {
	out := make([]oai.ChatCompletionToolUnionParam, 0, len(in))
	for _, t := range in {
		var schema shared.FunctionParameters
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			// memorytools renders its schemas with encoding/json.
			panic("openai adapter: tool schema is not a JSON object")
		}
		out = append(out, oai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: oai.String(t.Description), Parameters: schema,
		}))
	}
	return out
}

// toolContent is a tool result as the model reads it.
func toolContent(r memorytools.Result) string {
	if !r.IsError {
		return r.Content
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(errorResult{IsError: true, Error: r.Content}); err != nil {
		panic("openai adapter: error result does not marshal")
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// providerError turns an SDK failure into a content-free error. The SDK's
// error keeps the request (with its key) and the response body, so it is
// never wrapped.
func providerError(ctx context.Context, op string, err error) error {
	status := 0
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		status = apiErr.StatusCode
	}
	return turn.ProviderError(ctx, op, status)
}
