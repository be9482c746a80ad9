// Package extraction is memorykit's extraction engine: it turns a finished
// turn into proposed candidate memories with a language model, and checks
// every proposal before the extraction worker stores it as a candidate.
//
// The package imports no model SDK. A provider adapter implements the one
// call in [Model]; the engine owns the prompt, the output schema, the
// untrusted-data framing of the transcript and of related memories, and the
// validation of what comes back.
package extraction

import (
	"context"
	"encoding/json"
)

// Model is one structured-output call to a language model: the only thing
// a provider adapter implements. Generate must honour ctx. Its errors are
// content-free *memorykit.Error values: Retry set for a failure worth
// trying again (408, 409, 429, 5xx, time-outs, resets, a malformed or
// refused answer), RetryAfter set from a provider's Retry-After, and Retry
// unset for a final failure (400, 401, 403).
type Model interface {
	Generate(ctx context.Context, req Request) (Response, error)
}

// Request is one extraction call.
type Request struct {
	// Instructions are the system instructions (the versioned prompt).
	Instructions string
	// Input is the user-role content: the related memories and the turn's
	// transcript, each delimited and tagged as untrusted data.
	Input string
	// SchemaName names the output schema, for providers that want a name
	// (OpenAI's json_schema name, Anthropic's tool name).
	SchemaName string
	// Schema is the JSON Schema the answer must match. Adapters pass it
	// unchanged: OpenAI as response_format json_schema with strict true,
	// Anthropic as the forced tool's input_schema.
	Schema json.RawMessage
	// MaxOutputTokens bounds the answer.
	MaxOutputTokens int
}

// Response is a model's answer to a Request.
type Response struct {
	// JSON is the answer object (for a forced tool call, its input) as the
	// provider returned it. The engine parses and validates it; an adapter
	// does not.
	JSON []byte
	// Usage is the provider's token count for the call.
	Usage Usage
}

// Usage is a provider's token count for one call.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}
