// Package turn holds what every model adapter shares: the turn to run, the
// result it produces, and the steps before and after a provider's tool
// loop. The adapters (adapters/openai, adapters/anthropic) own only the
// mapping to their SDK; the rules of a turn live here once:
//
//   - [Begin] checks the turn and projects its conversation (recall inserts
//     the memory view);
//   - [Result.Call] runs one tool call through the Session and records it;
//   - [Finish] puts the answer through Session.ValidateOutput and hands only
//     an accepted answer to extraction with Session.FinishTurn.
//
// A Host that writes an adapter for another provider uses the same three
// steps and keeps the same guarantees.
package turn

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// Turn is one turn to run.
type Turn struct {
	// Session is the request's memorykit Session, opened by the Host from
	// trusted metadata.
	Session *mkruntime.Session
	// Messages is the conversation, oldest first, ending with the current
	// user message. Roles system, user and assistant only: a tool message
	// from an earlier turn has no tool call to answer in this one.
	Messages []projector.Message
	// RunRef identifies the turn for extraction (FinishTurn); retrying a
	// turn with the same RunRef does not enqueue it twice. Required.
	RunRef string
}

// ToolCall is one tool call the model made, with the result it got.
type ToolCall struct {
	// ID is the provider's ID of the call.
	ID string
	// Name is the tool the model asked for.
	Name string
	// Arguments are the model's arguments as it sent them; nil when they
	// were missing or not valid JSON (the tool then answered with an error
	// result).
	Arguments json.RawMessage
	// Result is what the tool answered; Result.IsError marks a failure.
	Result memorytools.Result
}

// Usage adds up the tokens the provider reported over all model calls of
// a turn.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	TotalTokens  int64
}

// Add counts one model call's tokens.
func (u *Usage) Add(input, output, total int64) {
	u.InputTokens += input
	u.OutputTokens += output
	u.TotalTokens += total
}

// Result is what a turn produced.
type Result struct {
	// Text is the answer the Host may show and persist. When Rejected it
	// is the fixed memorytools.NotSavedText, never the model's claim.
	Text string
	// Rejected reports that ValidateOutput refused the model's answer: it
	// claimed a memory was saved after a write failed. A rejected turn is
	// not handed to extraction.
	Rejected bool
	// ToolCalls are the tool calls of the turn, in the order they ran.
	ToolCalls []ToolCall
	// Usage is the provider's token count for the turn.
	Usage Usage
	// Steps is the number of model calls made.
	Steps int
	// Projection is the projector's output: whether a memory view was
	// inserted (and where), and whether recall degraded.
	Projection projector.Projection
	// Extraction is FinishTurn's result; zero when Rejected.
	Extraction extractworker.EnqueueResult
}

// Begin checks t and projects its conversation through the Session. op
// names the adapter's operation in errors. The projection is also kept in
// res.
func Begin(ctx context.Context, op string, t Turn, res *Result) error {
	if t.Session == nil {
		return memorykit.FieldError(op, "session", "missing")
	}
	if t.RunRef == "" {
		return memorykit.FieldError(op, "run_ref", "missing")
	}
	for _, m := range t.Messages {
		if m.Role == projector.RoleTool {
			return RoleError(op)
		}
	}
	proj, err := t.Session.Project(ctx, t.Messages)
	if err != nil {
		return err
	}
	res.Projection = proj
	return nil
}

// RoleError is the error for a message role an adapter cannot send (a tool
// message from an earlier turn).
func RoleError(op string) error {
	return memorykit.FieldError(op, "messages.role", "tool_not_supported")
}

// Call runs the model's tool call id through the Session and records it in
// r. name is the tool the model named, recorded as it is; callAs is the
// name the Session is asked for (the adapter passes "" for a kind of call
// it never offered, which the Session answers as an unknown tool). An
// error means the turn must stop: authorization, Scope or integrity
// failures come back as memorykit made them.
func (r *Result) Call(ctx context.Context, s *mkruntime.Session, id, name, callAs string, args json.RawMessage) (memorytools.Result, error) {
	call := ToolCall{ID: id, Name: name}
	if json.Valid(args) {
		call.Arguments = args
	}
	out, err := s.CallTool(ctx, callAs, args)
	if err != nil {
		return out, err
	}
	call.Result = out
	r.ToolCalls = append(r.ToolCalls, call)
	return out, nil
}

// Finish ends a turn whose model answered final: the answer goes through
// Session.ValidateOutputContext under ctx, and only an accepted answer is handed to
// extraction. A refused claim of success sets res.Rejected and
// res.Text to memorytools.NotSavedText and is not an error.
func Finish(ctx context.Context, t Turn, final string, res *Result) error {
	if err := t.Session.ValidateOutputContext(ctx, final); err != nil {
		if !errors.Is(err, memorytools.ErrNotSaved) {
			return err
		}
		res.Text, res.Rejected = memorytools.NotSavedText, true
		return nil
	}
	res.Text = final
	res.Extraction = t.Session.FinishTurn(ctx, mkruntime.Turn{RunRef: t.RunRef, Transcript: Transcript(res.Projection.Messages, final)})
	return nil
}

// Transcript is a finished turn as extraction receives it: the current
// user message and the accepted answer. The memory view is never part of
// it.
func Transcript(msgs []projector.Message, final string) string {
	user := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == projector.RoleUser && msgs[i].Name != projector.ViewName {
			user = msgs[i].Content
			break
		}
	}
	return "user: " + user + "\nassistant: " + final
}

// StepLimitError is the error of a turn whose model still asked for tools
// at its last allowed step.
func StepLimitError(op string) error {
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "step_limit"}
}

// BadResponseError is the error of a provider response an adapter cannot
// use (no choice, no content).
func BadResponseError(op string) error {
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "provider_bad_response"}
}

// ProviderError is the content-free error of a failed provider call. SDK
// errors keep the request (with its key) and the response body, so the
// adapter passes only the HTTP status it read from them: status is 0 when
// the provider was not reached. A cancelled or expired ctx wins, as reason
// "context_done" wrapping the context's error. Statuses 408, 409, 429 and
// 5xx, and an unreachable provider, are recoverable.
func ProviderError(ctx context.Context, op string, status int) error {
	if ctx.Err() != nil {
		return memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", ctx.Err())
	}
	if status == 0 {
		return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "provider_unreachable", Retry: true}
	}
	return &memorykit.Error{
		Op: op, Kind: memorykit.ErrUnavailable, Reason: "provider_status_" + strconv.Itoa(status),
		Retry: status == 408 || status == 409 || status == 429 || status >= 500,
	}
}
