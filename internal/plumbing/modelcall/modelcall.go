// Package modelcall holds what both SDK adapters (adapters/openai,
// adapters/anthropic) share when they implement extraction.Model: the
// checks on a Request before anything is sent, the bound on a provider's
// response body, and the mapping of a failed call to a content-free
// *memorykit.Error with the provider's Retry-After.
//
// It lives under internal/ in the core module so that both adapter modules
// use one copy without the core depending on any SDK.
package modelcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/turn"
)

// DefaultSchemaName is the schema (tool) name used when a Request names
// none.
const DefaultSchemaName = "propose_memories"

// Reason codes of a Model's errors, besides turn.ProviderError's.
const (
	// ReasonBadResponse: the provider answered, but not with a usable JSON
	// object (refusal, no content, truncated, not JSON, no tool call).
	ReasonBadResponse = "provider_bad_response"
	// ReasonTooLarge: the response body passed the adapter's byte bound.
	ReasonTooLarge = "provider_response_too_large"
	// ReasonContextDone: the caller's context ended during the call.
	ReasonContextDone = "context_done"
)

// schemaName is what both providers accept as a json_schema or tool name.
var schemaName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckRequest checks req before anything is sent and returns the schema
// name to send. A bad Request is an ErrInvalidInput error naming the
// field; it is final, since sending it again cannot succeed.
func CheckRequest(op string, req extraction.Request) (string, error) {
	for _, f := range []struct{ name, v string }{{"instructions", req.Instructions}, {"input", req.Input}} {
		switch {
		case f.v == "":
			return "", memorykit.FieldError(op, f.name, "missing")
		case !utf8.ValidString(f.v):
			return "", memorykit.FieldError(op, f.name, "invalid_utf8")
		case strings.IndexByte(f.v, 0) >= 0:
			return "", memorykit.FieldError(op, f.name, "contains_nul")
		}
	}
	name := req.SchemaName
	if name == "" {
		name = DefaultSchemaName
	}
	if !schemaName.MatchString(name) {
		return "", memorykit.FieldError(op, "schema_name", "invalid")
	}
	if !IsObject(req.Schema) {
		return "", memorykit.FieldError(op, "schema", "not_json_object")
	}
	if req.MaxOutputTokens <= 0 {
		return "", memorykit.FieldError(op, "max_output_tokens", "must_be_positive")
	}
	return name, nil
}

// IsObject reports whether b is one valid JSON object (surrounding
// whitespace allowed).
func IsObject(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// BadResponse is the recoverable error of a provider answer that cannot be
// used; part names which part of the answer was wrong ("refusal",
// "content", "finish_reason", "stop_reason", "body"), never its text.
func BadResponse(op, part string) error {
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Field: part, Reason: ReasonBadResponse, Retry: true}
}

// ErrTooLarge is what reading a bounded response body returns past its
// bound.
var ErrTooLarge = errors.New("response body over its bound")

// LimitBody bounds res's body to limit bytes: reading past it fails with
// ErrTooLarge, so a provider (or anything posing as one) cannot make the
// SDK buffer an unbounded body. Both SDKs read the whole body, error
// bodies included, before they decode it.
func LimitBody(res *http.Response, limit int64) {
	if res == nil || res.Body == nil {
		return
	}
	res.Body = &limitedBody{rc: res.Body, left: limit}
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte tells a body of exactly the bound from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// Failure maps a failed SDK call to a Model's content-free error. res is
// the HTTP response the call got (nil when none arrived). The SDK's error
// is never wrapped: it keeps the request (with its key) and the response
// body.
//
//   - A context that ended wins: ErrUnavailable "context_done", wrapping
//     the context's error for errors.Is, recoverable (the call did not
//     fail on its merits; the job may run again).
//   - A body over the bound is "provider_response_too_large", recoverable.
//   - An error status is turn.ProviderError's (recoverable for 408, 409,
//     429 and 5xx), with RetryAfter read from the headers by
//     turn.RetryAfter when recoverable, measured from now and at most
//     retryLimit. This holds for error bodies of any shape, a proxy's
//     HTML page included.
//   - Any other failure after a response arrived (a body that is not the
//     expected JSON, cut short or of another content type) is
//     "provider_bad_response" with Field "body", recoverable.
//   - No response (refused or reset connection, a transport time-out) is
//     "provider_unreachable", recoverable.
func Failure(ctx context.Context, op string, err error, res *http.Response, now time.Time, retryLimit time.Duration) error {
	switch {
	case ctx.Err() != nil:
		return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: ReasonContextDone, Err: ctx.Err(), Retry: true}
	case errors.Is(err, ErrTooLarge):
		return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: ReasonTooLarge, Retry: true}
	case res == nil:
		return turn.ProviderError(ctx, op, 0)
	case res.StatusCode >= 400:
		e := &memorykit.Error{}
		if !errors.As(turn.ProviderError(ctx, op, res.StatusCode), &e) {
			panic("modelcall: turn.ProviderError returned another type")
		}
		if e.Retry {
			e.RetryAfter = turn.RetryAfter(res.Header, now, retryLimit)
		}
		return e
	}
	return BadResponse(op, "body")
}

// Options are the settings both adapters' extraction models share.
type Options struct {
	// ResponseLimit bounds a response body in bytes.
	ResponseLimit int64
	// RetryAfterLimit bounds the wait read from a provider's Retry-After.
	RetryAfterLimit time.Duration
}

// Defaults of Options.
const (
	DefaultResponseLimit   = 8 << 20
	DefaultRetryAfterLimit = 10 * time.Minute
)

// Check validates o.
func (o Options) Check(op string) error {
	switch {
	case o.ResponseLimit <= 0:
		return memorykit.ConfigError(op, "response_limit", "must_be_positive")
	case o.RetryAfterLimit <= 0:
		return memorykit.ConfigError(op, "retry_after_limit", "must_be_positive")
	}
	return nil
}
