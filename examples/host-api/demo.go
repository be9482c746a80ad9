package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// The demo runs the Host on the embedded store and walks through what
// memory does, printing each request and what came back. It talks to the
// same http.Handler that `go -C examples/host-api run .` serves, in process.
//
// Its output is reproducible: the clock is a mock set to a fixed instant,
// the memory view's nonce comes from a fixed sequence, and every record is
// embedded before the next recall. Record IDs stay random (the golden test
// masks them).

// demoEpoch is the demo clock's starting instant.
var demoEpoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// Development tokens from tokens.dev.json.
const (
	aliceToken = "dev-token-alice-acme"
	bobToken   = "dev-token-bob-acme"
	carolToken = "dev-token-carol-globex"
)

type demo struct {
	ctx  context.Context
	out  io.Writer
	clk  *clock.Mock
	host *Host
	step int
}

// runDemo runs the walk-through and writes it to out.
func runDemo(ctx context.Context, out io.Writer) (err error) {
	dir, err := LoadDirectory("")
	if err != nil {
		return err
	}
	clk := clock.NewMock()
	clk.Set(demoEpoch)
	host, err := NewHost(ctx, Options{
		Directory: dir, Clock: clk, Logger: zap.NewNop(), Model: ScriptedModel{},
		WorkerID: "demo-host", ViewNonce: &countingReader{},
		TombstoneSecret: []byte("demo tombstone secret, for the walk-through only"),
	})
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if cerr := host.Close(closeCtx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	d := &demo{ctx: ctx, out: out, clk: clk, host: host}
	return d.run()
}

func (d *demo) run() error {
	const p = "/v1/projects/apollo"
	d.printf("memorykit host-api demo: embedded store, local embedder, scripted model\n")
	d.printf("callers: alice (acme, full rights on apollo), bob (acme, read-only), carol (tenant globex)\n")

	d.section("alice writes two memories: a trusted explicit write is active at once")
	region := d.call(aliceToken, "POST", p+"/memories", `{"kind":"fact","key":"deploy region","content":"The API runs in eu-west-1."}`).
		show("outcome", "memory.id", "memory.status", "memory.version", "memory.created_by").str("memory.id")
	d.call(aliceToken, "POST", p+"/memories", `{"kind":"decision","key":"database","content":"We use PostgreSQL 16 with pgvector for memory."}`).
		show("outcome", "memory.id", "memory.status")
	if err := d.settle(); err != nil {
		return err
	}

	d.section("a chat turn: recall runs first and the memory view goes right before the user message")
	d.call(aliceToken, "POST", p+"/chat", `{"message":"Which region does the API run in?","turn_id":"t1"}`).
		showView().show("reply", "extraction")

	d.section("the model saves memories: a new key is active at once; alice's key gets a candidate")
	d.call(aliceToken, "POST", p+"/chat", `{"message":"remember preference code review: Every change needs one approving review.","turn_id":"t2a"}`).
		show("tool_calls", "reply")
	if err := d.settle(); err != nil {
		return err
	}
	cand := d.call(aliceToken, "POST", p+"/chat", `{"message":"remember fact deploy region: The API moved to us-east-1.","turn_id":"t2b"}`).
		show("tool_calls", "reply").json("tool_calls.0.result").str("id")
	d.call(aliceToken, "POST", p+"/search", `{"query":"deploy region"}`).showHits()

	d.section("review: the candidate is listed, then activated; it supersedes alice's record")
	d.call(aliceToken, "GET", p+"/candidates", "").showList("candidates", "id", "key", "content", "created_by")
	d.call(aliceToken, "POST", p+"/candidates/"+cand+"/activate", `{"reason":"confirmed with ops"}`).
		show("memory.id", "memory.status", "memory.version", "memory.touched_by")
	if err := d.settle(); err != nil {
		return err
	}
	d.call(aliceToken, "POST", p+"/search", `{"query":"deploy region"}`).showHits()
	d.call(aliceToken, "GET", p+"/memories/"+region+"/history", "").showList("revisions", "version", "action", "actor", "status")

	d.section("correction: a new revision with new content; the old embedding stops counting")
	d.call(aliceToken, "POST", p+"/memories/"+cand+"/correct",
		`{"content":"The API runs in us-east-1, with eu-west-1 as failover.","reason":"failover region added"}`).
		show("memory.version", "memory.content", "memory.touched_by")
	if err := d.settle(); err != nil {
		return err
	}
	d.call(aliceToken, "POST", p+"/chat", `{"message":"search deploy region","turn_id":"t3"}`).show("tool_calls", "reply")

	d.section("forget: the memory leaves every recall path at once; its audit stays")
	d.call(aliceToken, "POST", p+"/memories/"+cand+"/forget", `{"reason":"region is now in the runbook"}`).
		show("memory.status", "memory.version")
	d.call(aliceToken, "POST", p+"/search", `{"query":"deploy region"}`).showHits()
	d.call(aliceToken, "GET", p+"/memories/"+cand, "").show("error")
	d.call(aliceToken, "POST", p+"/chat", `{"message":"Which region does the API run in?","turn_id":"t4"}`).show("reply")

	d.section("erase: a tombstone; content and content-bearing snapshots are scrubbed")
	d.call(aliceToken, "POST", p+"/memories/"+cand+"/erase", `{"reason":"customer request"}`).
		show("memory.status", "memory.content", "memory.version")
	d.call(aliceToken, "GET", p+"/memories/"+cand+"/history", "").
		showList("revisions", "version", "action", "actor", "status", "content", "content_hash")

	d.section("a write that fails says so: 项目记忆未保存")
	d.call(aliceToken, "POST", p+"/memories", `{"kind":"note","key":"db login","content":"password=hunter2"}`).
		show("error", "reason", "message")
	d.call(aliceToken, "POST", p+"/chat", `{"message":"remember note db login: password=hunter2","turn_id":"t5"}`).
		show("tool_calls", "write_failed", "output_rejected", "reply")

	d.section("memory that learns: a finished turn's explicit statement becomes a candidate for review")
	d.call(aliceToken, "POST", p+"/chat", `{"message":"Remember that the release day is Friday.","turn_id":"t6"}`).
		show("reply", "extraction")
	if err := d.settleJobs(); err != nil {
		return err
	}
	learned := d.call(aliceToken, "GET", p+"/candidates", "").
		showList("candidates", "id", "kind", "key", "content", "created_by").str("candidates.0.id")
	d.call(aliceToken, "POST", p+"/candidates/"+learned+"/activate", `{"reason":"yes, Fridays"}`).
		show("memory.status", "memory.key", "memory.content")
	if err := d.settle(); err != nil {
		return err
	}
	d.call(aliceToken, "POST", p+"/search", `{"query":"when is the release day"}`).showHits()

	d.section("the trust boundary: tenants, projects, permissions and Scope fields")
	d.call(carolToken, "POST", p+"/search", `{"query":"database"}`).showHits()
	d.call(carolToken, "GET", p+"/memories/"+region, "").show("error")
	d.call(bobToken, "POST", p+"/memories", `{"kind":"note","key":"k","content":"bob may only read"}`).show("error", "reason", "message")
	d.call(aliceToken, "POST", p+"/memories", `{"kind":"note","key":"k","content":"c","tenant_id":"globex"}`).show("error", "field")
	d.call(aliceToken, "POST", p+"/search", `{"query":"database","subject_type":"user"}`).show("error", "field")
	d.call(aliceToken, "GET", "/v1/projects/apollo/candidates?tenant=globex", "").show("error", "field")
	d.call(aliceToken, "GET", "/v1/users/alice/memories", "").show()
	d.call("", "POST", p+"/search", `{"query":"database"}`).show("error")
	return nil
}

// settle lets the Host's embedding worker catch up, so every recall below
// sees the same vectors on every run. The worker waits on the mock clock
// between rounds, so the demo moves the clock one poll interval at a time
// (each Add also yields briefly to the worker) until nothing is pending.
// A Host on a real clock never does this: its worker simply runs.
func (d *demo) settle() error {
	// Records written in one step get distinct creation times, so their
	// IDs (time-prefixed) sort in the order they were written.
	d.clk.Add(time.Second)
	for i := 0; i < 5000; i++ {
		n, err := d.host.store.PendingEmbeddings(d.ctx, embedder.LocalV2Profile)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		d.clk.Add(mkruntime.WorkersV1().EmbedPoll)
	}
	return memorykit.NewError("demo.settle", memorykit.ErrUnavailable, "embeddings_pending")
}

// settleJobs lets the Host's extraction worker finish every queued turn,
// moving the mock clock one poll interval at a time.
func (d *demo) settleJobs() error {
	for i := 0; i < 5000; i++ {
		c, err := d.host.store.CountJobs(d.ctx)
		if err != nil {
			return err
		}
		if c.Queued == 0 && c.Leased == 0 {
			return nil
		}
		d.clk.Add(mkruntime.WorkersV1().ExtractPoll)
	}
	return memorykit.NewError("demo.settle_jobs", memorykit.ErrUnavailable, "jobs_pending")
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

func (d *demo) section(title string) {
	d.step++
	d.printf("\n== %d. %s\n", d.step, title)
}

// call sends one request to the Host's handler and prints it.
func (d *demo) call(token, method, path, body string) reply {
	var rd io.Reader = http.NoBody
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(d.ctx, method, path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	d.host.Handler().ServeHTTP(rec, req)
	who := map[string]string{aliceToken: "alice", bobToken: "bob", carolToken: "carol", "": "nobody"}[token]
	d.printf("%s> %s %s", who, method, path)
	if body != "" {
		d.printf("  %s", body)
	}
	d.printf("\n  < %d\n", rec.Code)
	var v any
	_ = json.Unmarshal(rec.Body.Bytes(), &v)
	return reply{d: d, v: v}
}

// reply is a decoded response body, with printing helpers.
type reply struct {
	d *demo
	v any
}

// get follows a dotted path ("memory.id", "tool_calls.0.result").
func (r reply) get(path string) any {
	cur := r.v
	for _, part := range strings.Split(path, ".") {
		switch t := cur.(type) {
		case map[string]any:
			cur = t[part]
		case []any:
			var i int
			if _, err := fmt.Sscanf(part, "%d", &i); err != nil || i < 0 || i >= len(t) {
				return nil
			}
			cur = t[i]
		default:
			return nil
		}
	}
	return cur
}

func (r reply) str(path string) string {
	s, _ := r.get(path).(string)
	return s
}

// json parses the string at path as JSON (a tool result).
func (r reply) json(path string) reply {
	var v any
	_ = json.Unmarshal([]byte(r.str(path)), &v)
	return reply{d: r.d, v: v}
}

func render(v any) string {
	switch t := v.(type) {
	case string:
		if t == "" {
			return `""`
		}
		return t
	case nil:
		return "-"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// show prints the named fields of the reply.
func (r reply) show(paths ...string) reply {
	for _, p := range paths {
		if p == "tool_calls" {
			calls, _ := r.get(p).([]any)
			for i := range calls {
				q := fmt.Sprintf("tool_calls.%d.", i)
				r.d.printf("    tool %s (error=%v): %s\n", r.str(q+"name"), r.get(q+"is_error"), r.str(q+"result"))
			}
			continue
		}
		r.d.printf("    %s: %s\n", p, render(r.get(p)))
	}
	return r
}

// showView prints the memory view the chat turn inserted.
func (r reply) showView() reply {
	view := r.str("memory_view")
	if view == "" {
		r.d.printf("    memory_view: -\n")
		return r
	}
	r.d.printf("    memory_view:\n")
	for _, line := range strings.Split(view, "\n") {
		r.d.printf("      | %s\n", line)
	}
	return r
}

// showHits prints a search result.
func (r reply) showHits() reply {
	hits, _ := r.get("memories").([]any)
	r.d.printf("    %d memories\n", len(hits))
	for i := range hits {
		q := fmt.Sprintf("memories.%d.", i)
		r.d.printf("    - %s %s %q: %s (channels %s)\n", r.str(q+"id"), r.str(q+"kind"), r.str(q+"key"),
			r.str(q+"content"), render(r.get(q+"channels")))
	}
	return r
}

// showList prints the named fields of every item of a list.
func (r reply) showList(list string, fields ...string) reply {
	items, _ := r.get(list).([]any)
	r.d.printf("    %d %s\n", len(items), list)
	for i := range items {
		parts := make([]string, len(fields))
		for j, f := range fields {
			parts[j] = f + "=" + render(r.get(fmt.Sprintf("%s.%d.%s", list, i, f)))
		}
		r.d.printf("    - %s\n", strings.Join(parts, " "))
	}
	return r
}

// countingReader yields 0, 1, 2, ... as bytes: a fixed nonce sequence, so
// the demo's memory views are reproducible. Never use it outside a demo:
// the nonce is what keeps memory text from closing the view.
type countingReader struct{ n byte }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.n
		c.n++
	}
	return len(p), nil
}
