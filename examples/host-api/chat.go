package main

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
)

// chatRequest is one chat turn.
type chatRequest struct {
	// Message is the current user message.
	Message string `json:"message"`
	// History holds earlier messages of the conversation, oldest first;
	// roles "user" and "assistant" only.
	History []chatMessage `json:"history"`
	// TurnID optionally names the turn, so that retrying the request does
	// not enqueue its extraction twice.
	TurnID string `json:"turn_id"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// toolCallJSON reports one tool call of the turn.
type toolCallJSON struct {
	Name    string `json:"name"`
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
}

// chatResponse is what a chat turn returns.
type chatResponse struct {
	Reply string `json:"reply"`
	// MemoryView is the memory message inserted before the user message,
	// shown so the example can be followed; a production Host would not
	// echo it.
	MemoryView string         `json:"memory_view,omitempty"`
	Degraded   bool           `json:"recall_degraded"`
	ToolCalls  []toolCallJSON `json:"tool_calls"`
	// WriteFailed is the request's failure flag: a memory write failed.
	WriteFailed bool `json:"write_failed"`
	// OutputRejected reports that the model claimed a save after a failed
	// write; Reply is then the fixed text 项目记忆未保存.
	OutputRejected bool `json:"output_rejected"`
	// Extraction says what happened to the turn's extraction job.
	Extraction string `json:"extraction"`
}

// chat runs one turn:
//
//  1. open a memorykit Session for the caller, the route's Scope and the
//     tenant's model (the Session authorizes the caller for read); the
//     remember tool is registered only when the caller's membership grants
//     write and model_write (trusted Host data), which the tool checks
//     again on every call;
//  2. project: recall for the user message, insert the memory view;
//  3. call the model, run the tools it asks for, until it answers;
//  4. validate the answer: after a failed write, a claim of success is
//     replaced by 项目记忆未保存;
//  5. hand the finished turn to extraction (never fails the turn).
func (h *Host) chat(w http.ResponseWriter, r *http.Request, c call) {
	ctx := r.Context()
	var req chatRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	msgs, ok := conversation(w, req)
	if !ok {
		return
	}
	turnID := req.TurnID
	if turnID == "" {
		turnID = newTurnID()
	} else if storekit.ValidateID("host.chat", "turn_id", turnID) != nil {
		writeError(w, http.StatusUnprocessableEntity, "invalid_input", "bad_id", "turn_id")
		return
	}
	areq, err := h.agentRequest(c.caller, c.project)
	if err != nil {
		writeErr(w, err)
		return
	}
	s, err := h.rt.Session(ctx, areq)
	if err != nil {
		writeErr(w, err)
		return
	}
	if h.runner != nil { // a real model, through an adapter: model_sdk.go
		h.chatOnModel(ctx, w, s, msgs, turnID)
		return
	}
	proj, err := h.proj.Project(ctx, projector.Turn{Principal: c.caller.principal, Scope: c.scope, Messages: msgs})
	if err != nil {
		writeErr(w, err)
		return
	}
	resp := chatResponse{Degraded: proj.Degraded, ToolCalls: []toolCallJSON{}}
	markDegraded(w, proj.Degraded, proj.Trace.Reason)
	if proj.Injected {
		resp.MemoryView = proj.Messages[proj.Index].Content
	}

	mreq := ModelRequest{Messages: proj.Messages, Tools: s.Tools()}
	final, answered := "", false
	for step := 0; step < maxModelSteps; step++ {
		reply, err := h.model.Complete(ctx, mreq)
		if err != nil {
			h.log.Warn("model call failed", zap.String("reason", memorykit.ReasonCode(err)))
			writeError(w, http.StatusBadGateway, "model_unavailable", "", "")
			return
		}
		if len(reply.ToolCalls) == 0 {
			final, answered = reply.Text, true
			break
		}
		for _, tc := range reply.ToolCalls {
			res, err := s.CallTool(ctx, tc.Name, tc.Arguments)
			if err != nil { // the tool failed closed (authorization, Scope, integrity)
				writeErr(w, err)
				return
			}
			mreq.Exchanges = append(mreq.Exchanges, ToolExchange{Call: tc, Result: res})
			resp.ToolCalls = append(resp.ToolCalls, toolCallJSON{Name: tc.Name, IsError: res.IsError, Result: res.Content})
		}
	}
	if !answered {
		writeError(w, http.StatusBadGateway, "model_unavailable", "too_many_steps", "")
		return
	}

	resp.WriteFailed = s.WriteFailed()
	if err := s.ValidateOutput(final); err != nil {
		// Not persisted, not extracted: the user sees the fixed text.
		resp.Reply, resp.OutputRejected = memorytools.NotSavedText, true
		resp.Extraction = "skipped"
		writeJSON(w, http.StatusOK, resp)
		return
	}
	resp.Reply = final
	transcript := "user: " + req.Message + "\nassistant: " + final
	res := s.FinishTurn(ctx, mkruntime.Turn{RunRef: "turn-" + turnID, Transcript: transcript})
	resp.Extraction = string(res.Status)
	if res.Reason != "" {
		resp.Extraction += ":" + res.Reason
	}
	writeJSON(w, http.StatusOK, resp)
}

// conversation turns the request into projector messages. Only user and
// assistant roles may come from a caller: a caller-supplied system prompt,
// tool result or memory view would be a way around the Host.
func conversation(w http.ResponseWriter, req chatRequest) ([]projector.Message, bool) {
	if req.Message == "" {
		writeError(w, http.StatusUnprocessableEntity, "invalid_input", "empty", "message")
		return nil, false
	}
	if blank(req.Message) {
		writeError(w, http.StatusUnprocessableEntity, "invalid_input", "blank", "message")
		return nil, false
	}
	if len(req.History) > maxHistoryMessages {
		writeError(w, http.StatusUnprocessableEntity, "invalid_input", "too_many", "history")
		return nil, false
	}
	msgs := make([]projector.Message, 0, len(req.History)+1)
	for _, m := range req.History {
		role := projector.Role(m.Role)
		if role != projector.RoleUser && role != projector.RoleAssistant {
			writeError(w, http.StatusUnprocessableEntity, "invalid_input", "role_not_allowed", "history.role")
			return nil, false
		}
		if blank(m.Content) {
			writeError(w, http.StatusUnprocessableEntity, "invalid_input", "blank", "history.content")
			return nil, false
		}
		msgs = append(msgs, projector.Message{Role: role, Content: m.Content})
	}
	return append(msgs, projector.Message{Role: projector.RoleUser, Content: req.Message}), true
}

// newTurnID returns a random turn identifier.
func newTurnID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
