package openai

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/benbjohnson/clock"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/internal/plumbing/modelcall"
)

// ExtractionModel is an [extraction.Model] on the Chat Completions API:
// one structured-output call per Generate. It is safe for concurrent use.
//
// The request has exactly two messages, the system message holding
// Request.Instructions and the user message holding Request.Input
// unchanged, and response_format {"type":"json_schema","json_schema":
// {"name":<Request.SchemaName>,"strict":true,"schema":<Request.Schema>}},
// with max_completion_tokens set to Request.MaxOutputTokens (max_tokens
// with [WithExtractionMaxTokensField]). OpenAI enforces the schema; an
// OpenAI-compatible server (Ollama, vLLM, llama.cpp) constrains its output
// to the schema as far as it supports json_schema, and the extraction
// engine validates every answer either way. An empty SchemaName is sent as
// "propose_memories".
//
// Generate returns the message content unchanged as Response.JSON, once it
// is one JSON object, with the provider's prompt and completion token
// counts. A refusal, an empty content, a finish_reason of "length" or
// "content_filter", content that is not a JSON object, or a body that is
// not a chat completion is a recoverable "provider_bad_response" error
// whose Field names the part ("refusal", "content", "finish_reason",
// "body"). Other failures are as in the package documentation, plus:
// RetryAfter is set from retry-after-ms or Retry-After on a recoverable
// status; a cancelled or expired context is a recoverable "context_done"
// (the call did not fail on its merits); a response body over the bound
// ([WithExtractionResponseLimit]) is a recoverable
// "provider_response_too_large"; a bad Request is ErrInvalidInput naming
// the field, and nothing is sent.
//
// Every call makes exactly one HTTP attempt, whatever retries the client
// was built with: the extraction worker retries failed jobs itself, on the
// injected clock and within its attempt bound, so SDK retries would only
// multiply attempts and sleep on the wall clock.
type ExtractionModel struct {
	client *oai.Client
	model  string
	opts   extractionOptions
}

type extractionOptions struct {
	modelcall.Options
	clock     clock.Clock
	maxTokens bool
}

// ExtractionOption changes one setting of an ExtractionModel.
type ExtractionOption func(*extractionOptions)

// WithExtractionClock sets the clock an HTTP-date Retry-After is measured
// against (default: the wall clock). The clock sets no timer: the call's
// deadline is its context's.
func WithExtractionClock(c clock.Clock) ExtractionOption {
	return func(o *extractionOptions) { o.clock = c }
}

// WithExtractionResponseLimit bounds a response body, in bytes (default 8
// MiB). The SDK buffers the whole body before decoding it; a body over the
// bound fails the call instead.
func WithExtractionResponseLimit(n int64) ExtractionOption {
	return func(o *extractionOptions) { o.ResponseLimit = n }
}

// WithExtractionRetryAfterLimit bounds the wait a provider's Retry-After
// can ask for (default 10 minutes); a longer one is cut to it.
func WithExtractionRetryAfterLimit(d time.Duration) ExtractionOption {
	return func(o *extractionOptions) { o.RetryAfterLimit = d }
}

// WithExtractionMaxTokensField sends the output bound as max_tokens rather
// than max_completion_tokens, for OpenAI-compatible servers that read only
// the older field. OpenAI's newer models refuse max_tokens.
func WithExtractionMaxTokensField() ExtractionOption {
	return func(o *extractionOptions) { o.maxTokens = true }
}

// NewExtractionModel returns an ExtractionModel calling model through
// client. Both are required.
func NewExtractionModel(client *oai.Client, model string, opts ...ExtractionOption) (*ExtractionModel, error) {
	const op = "openai.new_extraction_model"
	o := extractionOptions{
		Options: modelcall.Options{ResponseLimit: modelcall.DefaultResponseLimit, RetryAfterLimit: modelcall.DefaultRetryAfterLimit},
		clock:   clock.New(),
	}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case client == nil:
		return nil, memorykit.ConfigError(op, "client", "missing")
	case model == "":
		return nil, memorykit.ConfigError(op, "model", "missing")
	case o.clock == nil:
		return nil, memorykit.ConfigError(op, "clock", "missing")
	}
	if err := o.Check(op); err != nil {
		return nil, err
	}
	return &ExtractionModel{client: client, model: model, opts: o}, nil
}

var _ extraction.Model = (*ExtractionModel)(nil)

// Generate implements [extraction.Model]; see [ExtractionModel].
func (m *ExtractionModel) Generate(ctx context.Context, req extraction.Request) (extraction.Response, error) {
	const op = "openai.extract"
	name, err := modelcall.CheckRequest(op, req)
	if err != nil {
		return extraction.Response{}, err
	}
	params := oai.ChatCompletionNewParams{
		Model:    shared.ChatModel(m.model),
		Messages: []oai.ChatCompletionMessageParamUnion{oai.SystemMessage(req.Instructions), oai.UserMessage(req.Input)},
		ResponseFormat: oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Strict: oai.Bool(true), Schema: req.Schema},
		}},
	}
	if m.opts.maxTokens {
		params.MaxTokens = oai.Int(int64(req.MaxOutputTokens))
	} else {
		params.MaxCompletionTokens = oai.Int(int64(req.MaxOutputTokens))
	}
	var res *http.Response
	limit := m.opts.ResponseLimit
	completion, err := m.client.Chat.Completions.New(ctx, params,
		option.WithMaxRetries(0),
		option.WithResponseInto(&res),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			resp, err := next(r)
			modelcall.LimitBody(resp, limit)
			return resp, err
		}))
	if err != nil {
		var apiErr *oai.Error
		if res == nil && errors.As(err, &apiErr) {
			res = apiErr.Response
		}
		return extraction.Response{}, modelcall.Failure(ctx, op, err, res, m.opts.clock.Now(), m.opts.RetryAfterLimit)
	}
	if ctx.Err() != nil { // an answer that arrives after the caller gave up is not used
		return extraction.Response{}, modelcall.Failure(ctx, op, nil, nil, m.opts.clock.Now(), m.opts.RetryAfterLimit)
	}
	if len(completion.Choices) == 0 {
		return extraction.Response{}, modelcall.BadResponse(op, "choices")
	}
	choice := completion.Choices[0]
	switch {
	case choice.Message.Refusal != "":
		return extraction.Response{}, modelcall.BadResponse(op, "refusal")
	case choice.Message.Content == "":
		return extraction.Response{}, modelcall.BadResponse(op, "content")
	case choice.FinishReason == "length" || choice.FinishReason == "content_filter":
		return extraction.Response{}, modelcall.BadResponse(op, "finish_reason")
	case !modelcall.IsObject([]byte(choice.Message.Content)):
		return extraction.Response{}, modelcall.BadResponse(op, "content")
	}
	return extraction.Response{
		JSON:  []byte(choice.Message.Content),
		Usage: extraction.Usage{InputTokens: completion.Usage.PromptTokens, OutputTokens: completion.Usage.CompletionTokens},
	}, nil
}

// NewExtractor returns memorykit's extraction engine (extraction.New)
// with its model calls going through client: engine is the engine's
// configuration (prompt, limits, guard, events, clock) and its Model field
// is set to the ExtractionModel built from client, model and opts, so it
// must be left nil.
//
//	x, err := NewExtractor(client, "model-name", extraction.Config{
//		Prompt: extraction.PromptV1, Limits: extraction.LimitsV1(),
//		Guard: guard, Events: events, Clock: clk,
//	})
func NewExtractor(client *oai.Client, model string, engine extraction.Config, opts ...ExtractionOption) (*extraction.Engine, error) {
	if engine.Model != nil {
		return nil, memorykit.ConfigError("openai.new_extractor", "engine.model", "set")
	}
	m, err := NewExtractionModel(client, model, opts...)
	if err != nil {
		return nil, err
	}
	engine.Model = m
	return extraction.New(engine)
}
