package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	ant "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/internal/plumbing/modelcall"
)

// ExtractionModel is an [extraction.Model] on the Messages API: one call
// per Generate that must answer through one forced tool. It is safe for
// concurrent use.
//
// The request has Request.Instructions as its only system text block, one
// user message holding Request.Input unchanged as its only text block, one
// custom tool named Request.SchemaName ("propose_memories" when empty)
// whose input_schema is Request.Schema, tool_choice {"type":"tool","name":
// <that name>,"disable_parallel_tool_use":true}, and max_tokens set to
// Request.MaxOutputTokens. The schema's top level must be an object schema
// (the API requires it); its other keywords pass unchanged. The tool is
// not sent with "strict" unless [WithExtractionStrictTool] asks for it,
// since not every model accepts it; the extraction engine validates every
// answer either way.
//
// Generate returns the input of the response's tool_use block for that
// tool, unchanged, as Response.JSON, once it is one JSON object, with the
// token counts (input tokens include cache writes and reads, as in
// RunTurn). A stop_reason of "refusal" or "max_tokens", a response without
// that tool_use block (plain text), more than one such block, an input
// that is not a JSON object, or a body that is not a message is a
// recoverable "provider_bad_response" error whose Field names the part
// ("stop_reason", "content", "body"). Other failures are as in the package
// documentation, plus: RetryAfter is set from retry-after-ms or
// Retry-After on a recoverable status (529 "overloaded" included); a
// cancelled or expired context is a recoverable "context_done" (the call
// did not fail on its merits); a response body over the bound
// ([WithExtractionResponseLimit]) is a recoverable
// "provider_response_too_large"; a bad Request is ErrInvalidInput naming
// the field, and nothing is sent. A MaxOutputTokens the SDK would only
// send as a streaming call (over about 21,000 tokens, or the model's own
// non-streaming bound) is ErrInvalidInput "needs_streaming".
//
// Every call makes exactly one HTTP attempt, whatever retries the client
// was built with: the extraction worker retries failed jobs itself, on the
// injected clock and within its attempt bound, so SDK retries would only
// multiply attempts and sleep on the wall clock. Like RunTurn, every call
// pins the SDK's OpenTelemetry content mode to metadata only.
type ExtractionModel struct {
	client *ant.Client
	model  string
	opts   extractionOptions
}

type extractionOptions struct {
	modelcall.Options
	clock  clock.Clock
	strict bool
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

// WithExtractionStrictTool sends the tool with "strict": true, so that a
// model that supports it guarantees an input matching the schema.
func WithExtractionStrictTool() ExtractionOption {
	return func(o *extractionOptions) { o.strict = true }
}

// NewExtractionModel returns an ExtractionModel calling model through
// client. Both are required.
func NewExtractionModel(client *ant.Client, model string, opts ...ExtractionOption) (*ExtractionModel, error) {
	const op = "anthropic.new_extraction_model"
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
	const op = "anthropic.extract"
	name, err := modelcall.CheckRequest(op, req)
	if err != nil {
		return extraction.Response{}, err
	}
	schema, err := inputSchema(op, req.Schema)
	if err != nil {
		return extraction.Response{}, err
	}
	// The SDK refuses, before sending, a non-streaming call whose bound
	// could take more than ten minutes; say so as the Request's fault
	// rather than as an unreachable provider.
	if _, err := ant.CalculateNonStreamingTimeout(req.MaxOutputTokens, ant.Model(m.model), m.client.Options); err != nil {
		return extraction.Response{}, memorykit.FieldError(op, "max_output_tokens", "needs_streaming")
	}
	tool := ant.ToolParam{Name: name, InputSchema: schema}
	if m.opts.strict {
		tool.Strict = ant.Bool(true)
	}
	choice := ant.ToolChoiceParamOfTool(name)
	choice.OfTool.DisableParallelToolUse = ant.Bool(true)
	params := ant.MessageNewParams{
		Model:      ant.Model(m.model),
		MaxTokens:  int64(req.MaxOutputTokens),
		System:     []ant.TextBlockParam{{Text: req.Instructions}},
		Messages:   []ant.MessageParam{ant.NewUserMessage(ant.NewTextBlock(req.Input))},
		Tools:      []ant.ToolUnionParam{{OfTool: &tool}},
		ToolChoice: choice,
	}
	var res *http.Response
	limit := m.opts.ResponseLimit
	msg, err := m.client.Messages.New(ctx, params,
		option.WithMaxRetries(0),
		option.WithResponseInto(&res),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			resp, err := next(r)
			modelcall.LimitBody(resp, limit)
			return resp, err
		}),
		option.WithOpenTelemetryTracesContentMode(option.OpenTelemetryContentModeMetadataOnly))
	if err != nil {
		var apiErr *ant.Error
		if res == nil && errors.As(err, &apiErr) {
			res = apiErr.Response
		}
		return extraction.Response{}, modelcall.Failure(ctx, op, err, res, m.opts.clock.Now(), m.opts.RetryAfterLimit)
	}
	if ctx.Err() != nil { // an answer that arrives after the caller gave up is not used
		return extraction.Response{}, modelcall.Failure(ctx, op, nil, nil, m.opts.clock.Now(), m.opts.RetryAfterLimit)
	}
	switch msg.StopReason {
	case ant.StopReasonRefusal, ant.StopReasonMaxTokens:
		return extraction.Response{}, modelcall.BadResponse(op, "stop_reason")
	}
	var input json.RawMessage
	found := 0
	for _, block := range msg.Content {
		if block.Type == "tool_use" && block.Name == name {
			input, found = block.Input, found+1
		}
	}
	if found != 1 || !modelcall.IsObject(input) {
		return extraction.Response{}, modelcall.BadResponse(op, "content")
	}
	u := msg.Usage
	return extraction.Response{
		JSON:  bytes.Clone(input),
		Usage: extraction.Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens},
	}, nil
}

// inputSchema maps a JSON Schema object to the tool's input_schema, every
// keyword's value kept byte for byte. The API wants an object schema.
func inputSchema(op string, raw json.RawMessage) (ant.ToolInputSchemaParam, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return ant.ToolInputSchemaParam{}, memorykit.FieldError(op, "schema", "not_json_object")
	}
	out := ant.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range top {
		switch k {
		case "type":
			var typ string
			if json.Unmarshal(v, &typ) != nil || typ != "object" {
				return ant.ToolInputSchemaParam{}, memorykit.FieldError(op, "schema", "not_object_schema")
			}
		case "properties":
			out.Properties = v
		case "required":
			if json.Unmarshal(v, &out.Required) != nil {
				return ant.ToolInputSchemaParam{}, memorykit.FieldError(op, "schema", "invalid_required")
			}
		default:
			out.ExtraFields[k] = v
		}
	}
	return out, nil
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
func NewExtractor(client *ant.Client, model string, engine extraction.Config, opts ...ExtractionOption) (*extraction.Engine, error) {
	if engine.Model != nil {
		return nil, memorykit.ConfigError("anthropic.new_extractor", "engine.model", "set")
	}
	m, err := NewExtractionModel(client, model, opts...)
	if err != nil {
		return nil, err
	}
	engine.Model = m
	return extraction.New(engine)
}
