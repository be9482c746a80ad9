package adaptertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// ChatServer is an httptest server speaking the OpenAI Chat Completions
// wire format (what OpenAI-compatible servers such as Ollama speak too):
// POST <base>/chat/completions with a bearer key and a JSON body, answered
// by the next scripted reply; the last reply repeats. It records every
// request body it accepted.
type ChatServer struct {
	// Server is the running server; its URL is the SDK's base URL.
	Server  *httptest.Server
	key     string
	mu      sync.Mutex
	replies []http.HandlerFunc
	bodies  []map[string]any
}

// NewChatServer starts a ChatServer that accepts only the given key; the
// test's cleanup closes it.
func NewChatServer(t testing.TB, key string, replies ...http.HandlerFunc) *ChatServer {
	c := &ChatServer{key: key, replies: replies}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Server.Close)
	return c
}

func (c *ChatServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/chat/completions" {
		http.Error(w, "unexpected endpoint", http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+c.key {
		http.Error(w, "bad key", http.StatusUnauthorized)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	n := len(c.bodies)
	c.bodies = append(c.bodies, body)
	var reply http.HandlerFunc
	if n < len(c.replies) {
		reply = c.replies[n]
	} else if len(c.replies) > 0 {
		reply = c.replies[len(c.replies)-1]
	}
	c.mu.Unlock()
	if reply == nil {
		http.Error(w, "no reply scripted", http.StatusInternalServerError)
		return
	}
	reply(w, r)
}

// Requests returns the request bodies so far, decoded.
func (c *ChatServer) Requests() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.bodies...)
}

// Completion answers with a chat.completion object holding one choice with
// the given message JSON and finish reason, and the given usage.
func Completion(message, finish string, prompt, output int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-test","object":"chat.completion","created":1767225600,"model":"test-model",`+
			`"choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d},"system_fingerprint":null}`,
			message, finish, prompt, output, prompt+output)
	}
}

// ChatAnswer answers with an assistant text message (finish_reason stop).
func ChatAnswer(text string, prompt, output int) http.HandlerFunc {
	content, _ := json.Marshal(text)
	return Completion(`{"role":"assistant","content":`+string(content)+`,"refusal":null,"annotations":[]}`, "stop", prompt, output)
}

// Call is one function tool call in a scripted response.
type Call struct{ ID, Name, Args string }

// ChatToolCalls answers with an assistant message carrying the given
// function tool calls (finish_reason tool_calls).
func ChatToolCalls(prompt, output int, calls ...Call) http.HandlerFunc {
	parts := make([]string, len(calls))
	for i, c := range calls {
		args, _ := json.Marshal(c.Args)
		parts[i] = fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}`, c.ID, c.Name, args)
	}
	return Completion(`{"role":"assistant","content":null,"refusal":null,"tool_calls":[`+strings.Join(parts, ",")+`]}`, "tool_calls", prompt, output)
}

// JSONPath reads a value out of decoded JSON by a dotted path of keys and
// indexes, such as "messages.1.content"; nil when absent.
func JSONPath(v any, p string) any {
	for _, part := range strings.Split(p, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []any:
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
