package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
)

// Model is the Host's port to a chat model. One chat turn calls Complete
// until the model answers without tool calls (or maxModelSteps is reached).
// An adapter for a real provider translates ModelRequest into the
// provider's chat format (messages, tool definitions, earlier tool calls
// and their results) and the provider's answer back into a ModelReply; see
// the README.
type Model interface {
	Complete(ctx context.Context, req ModelRequest) (ModelReply, error)
}

// ModelRequest is everything the model sees for one step.
type ModelRequest struct {
	// Messages is the conversation with the memory view already inserted
	// before the current user message.
	Messages []projector.Message
	// Tools are the request-scoped memory tools the model may call.
	Tools []memorytools.Tool
	// Exchanges are this turn's tool calls so far, with their results, in
	// order.
	Exchanges []ToolExchange
}

// ToolCall is one tool call the model asks for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolExchange is a tool call and the result the Host gave back.
type ToolExchange struct {
	Call   ToolCall
	Result memorytools.Result
}

// ModelReply is one model step: either tool calls or a final text.
type ModelReply struct {
	Text      string
	ToolCalls []ToolCall
}

// ScriptedModel is a deterministic stand-in for a real model, so the
// example runs offline and its tests are exact. It understands three
// commands in the current user message and otherwise answers from the
// memory view:
//
//	remember <kind> <key>: <content>   calls remember_project_memory
//	search <query>                     calls search_memory
//	read <id>                          calls read_memory
//
// After a remember_project_memory call it always says the memory was
// saved, even when the tool failed. That is on purpose: it plays a model
// that ignores a failed tool result, so the Host's output validator has
// something to catch.
type ScriptedModel struct{}

var rememberCommand = regexp.MustCompile(`(?s)^remember\s+(\S+)\s+([^:]+):\s*(.+)$`)

// Complete implements Model.
func (ScriptedModel) Complete(_ context.Context, req ModelRequest) (ModelReply, error) {
	if n := len(req.Exchanges); n > 0 {
		return ModelReply{Text: afterTool(req.Exchanges[n-1])}, nil
	}
	current := currentUserMessage(req.Messages)
	switch {
	case rememberCommand.MatchString(current):
		if !offered(req.Tools, memorytools.RememberProjectMemory) {
			return ModelReply{Text: "I cannot save project memory in this conversation."}, nil
		}
		m := rememberCommand.FindStringSubmatch(current)
		return toolCall(memorytools.RememberProjectMemory, map[string]string{
			"kind": m[1], "key": strings.TrimSpace(m[2]), "content": strings.TrimSpace(m[3]),
		}), nil
	case strings.HasPrefix(current, "search "):
		return toolCall(memorytools.SearchMemory, map[string]string{"query": strings.TrimPrefix(current, "search ")}), nil
	case strings.HasPrefix(current, "read "):
		return toolCall(memorytools.ReadMemory, map[string]string{"id": strings.TrimSpace(strings.TrimPrefix(current, "read "))}), nil
	}
	entries := viewEntries(req.Messages)
	if len(entries) == 0 {
		return ModelReply{Text: "I found nothing in project memory about that."}, nil
	}
	return ModelReply{Text: "From project memory: " + strings.Join(entries, "; ")}, nil
}

func toolCall(name string, args map[string]string) ModelReply {
	raw, err := json.Marshal(args)
	if err != nil {
		panic("scripted model: arguments do not marshal: " + err.Error())
	}
	return ModelReply{ToolCalls: []ToolCall{{ID: "call-1", Name: name, Arguments: raw}}}
}

func offered(tools []memorytools.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// afterTool is the scripted answer once a tool has answered.
func afterTool(x ToolExchange) string {
	switch x.Call.Name {
	case memorytools.RememberProjectMemory:
		var out struct{ Status string }
		if !x.Result.IsError && json.Unmarshal([]byte(x.Result.Content), &out) == nil && out.Status == "pending_review" {
			return "That key already holds a memory, so my version waits for a reviewer."
		}
		return "Done: I saved that to project memory." // even after a failure; see ScriptedModel
	case memorytools.SearchMemory, memorytools.ReadMemory:
		if x.Result.IsError {
			return "The memory tool answered: " + x.Result.Content
		}
		var out struct {
			Memories []struct{ Key, Content string }
			Memory   *struct{ Key, Content string }
		}
		if err := json.Unmarshal([]byte(x.Result.Content), &out); err != nil {
			return "The memory tool answered something I could not read."
		}
		if out.Memory != nil {
			out.Memories = append(out.Memories, *out.Memory)
		}
		if len(out.Memories) == 0 {
			return "The memory tool found nothing."
		}
		parts := make([]string, len(out.Memories))
		for i, m := range out.Memories {
			parts[i] = m.Key + " = " + m.Content
		}
		return fmt.Sprintf("The memory tool found %d: %s", len(parts), strings.Join(parts, "; "))
	}
	return "I do not know that tool."
}

// currentUserMessage is the last user message that is not a memory view.
func currentUserMessage(msgs []projector.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == projector.RoleUser && msgs[i].Name != projector.ViewName {
			return strings.TrimSpace(msgs[i].Content)
		}
	}
	return ""
}

var viewEntry = regexp.MustCompile(`(?s)<entry id="[^"]*" kind="[^"]*" key="([^"]*)" truncated="[^"]*">\n(.*?)\n</entry>`)

// viewEntries reads "key = content" pairs out of the memory view.
func viewEntries(msgs []projector.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role != projector.RoleUser || m.Name != projector.ViewName {
			continue
		}
		for _, e := range viewEntry.FindAllStringSubmatch(m.Content, -1) {
			out = append(out, e[1]+" = "+e[2])
		}
	}
	return out
}
