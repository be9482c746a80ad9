package embedder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"

	"github.com/goagents/memorykit"
)

const (
	testDim = 4
	// testTimeout is far longer than any test runs, so only the mock clock
	// can make a request time out.
	testTimeout = 24 * time.Hour
	testKey     = "sk-test-key-0123"
)

// provider abstracts over the two HTTP adapters so one test runs against both.
type provider struct {
	name string
	path string
	// indexed reports whether results carry an index (OpenAI) or are
	// positional (Ollama).
	indexed bool
	build   func(base string, hc *http.Client, clk clock.Clock, key string, maxBatch int) (httpEmbedder, error)
	// body renders a success response for the given vectors; order lists
	// which input position each entry belongs to (ignored when positional).
	body func(vecs [][]float64, order []int) []byte
}

// httpEmbedder is what both adapters offer.
type httpEmbedder interface {
	memorykit.Embedder
	CloseIdleConnections()
}

var providers = []provider{
	{
		name:    "openai",
		path:    "/v1/embeddings",
		indexed: true,
		build: func(base string, hc *http.Client, clk clock.Clock, key string, maxBatch int) (httpEmbedder, error) {
			return NewOpenAI(OpenAIConfig{
				BaseURL: base, APIKey: key, Model: "text-embedding-test", Profile: "openai/test@4",
				Dimension: testDim, MaxBatch: maxBatch, Timeout: testTimeout, HTTPClient: hc, Clock: clk,
			})
		},
		body: func(vecs [][]float64, order []int) []byte {
			type item struct {
				Object    string    `json:"object"`
				Index     int       `json:"index"`
				Embedding []float64 `json:"embedding"`
			}
			items := make([]item, 0, len(vecs))
			for _, i := range order {
				items = append(items, item{"embedding", i, vecs[i]})
			}
			b, _ := json.Marshal(map[string]any{"object": "list", "data": items, "model": "text-embedding-test"})
			return b
		},
	},
	{
		name: "ollama",
		path: "/api/embed",
		build: func(base string, hc *http.Client, clk clock.Clock, _ string, maxBatch int) (httpEmbedder, error) {
			return NewOllama(OllamaConfig{
				BaseURL: base, Model: "nomic-embed-test", Profile: "ollama/test@4",
				Dimension: testDim, MaxBatch: maxBatch, Timeout: testTimeout, HTTPClient: hc, Clock: clk,
			})
		},
		body: func(vecs [][]float64, _ []int) []byte {
			b, _ := json.Marshal(map[string]any{"model": "nomic-embed-test", "embeddings": vecs})
			return b
		},
	},
}

// fakeVector is the vector the fake server returns for a text.
func fakeVector(text string) []float64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	x := h.Sum64()
	v := make([]float64, testDim)
	for j := range v {
		v[j] = float64(int64(x>>(8*j))&0xff-128)/64 + 0.25
	}
	return v
}

func fakeVectors(texts []string) [][]float64 {
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = fakeVector(t)
	}
	return out
}

func want32(texts []string) [][]float32 {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := fakeVector(t)
		out[i] = make([]float32, len(v))
		for j, x := range v {
			out[i][j] = float32(x)
		}
	}
	return out
}

// recorded is one request the fake server saw.
type recorded struct {
	method, path, auth, contentType string
	body                            map[string]any
	input                           []string
}

// fake is an httptest server whose handler each test sets.
type fake struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []recorded
	handle func(w http.ResponseWriter, r *http.Request, input []string)
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, input []string)) *fake {
	t.Helper()
	f := &fake{handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		var input []string
		if in, ok := body["input"].([]any); ok {
			for _, x := range in {
				s, _ := x.(string)
				input = append(input, s)
			}
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body, input})
		f.mu.Unlock()
		f.handle(w, r, input)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// succeed answers every request with the fake vectors, in order.
func succeed(p provider) func(w http.ResponseWriter, r *http.Request, input []string) {
	return func(w http.ResponseWriter, _ *http.Request, input []string) {
		order := make([]int, len(input))
		for i := range order {
			order[i] = i
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(p.body(fakeVectors(input), order))
	}
}

func build(t *testing.T, p provider, f *fake, clk clock.Clock, maxBatch int) httpEmbedder {
	t.Helper()
	e, err := p.build(f.srv.URL, f.srv.Client(), clk, testKey, maxBatch)
	if err != nil {
		t.Fatalf("build %s: %v", p.name, err)
	}
	return e
}

// wantError checks err is a *memorykit.Error of the kind, recoverability and
// reason given.
func wantError(t *testing.T, err error, kind error, retry bool, reason string) {
	t.Helper()
	var me *memorykit.Error
	if !errors.As(err, &me) {
		t.Fatalf("err = %v (%T), want *memorykit.Error", err, err)
	}
	if !errors.Is(err, kind) || me.Reason != reason || memorykit.IsRecoverable(err) != retry {
		t.Fatalf("err = %v; want kind %v, reason %q, recoverable %v", err, kind, reason, retry)
	}
}

func TestHTTPSuccess(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, succeed(p))
			e := build(t, p, f, clock.NewMock(), 16)
			texts := []string{"first text", "second", "项目记忆"}
			got, err := e.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want32(texts), got); diff != "" {
				t.Fatalf("vectors (-want +got):\n%s", diff)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.method != http.MethodPost || r.path != p.path || r.contentType != "application/json" {
				t.Fatalf("request %s %s (%s)", r.method, r.path, r.contentType)
			}
			if diff := cmp.Diff(texts, r.input); diff != "" {
				t.Fatalf("input (-want +got):\n%s", diff)
			}
			if r.body["model"] == "" || r.body["model"] == nil {
				t.Fatal("request has no model")
			}
			if _, ok := r.body["dimensions"]; ok {
				t.Fatal("dimensions sent without SendDimensions")
			}
			wantAuth := ""
			if p.name == "openai" {
				wantAuth = "Bearer " + testKey
			}
			if r.auth != wantAuth {
				t.Fatalf("Authorization %q, want %q", r.auth, wantAuth)
			}
			if e.Dimension() != testDim || e.Profile() == "" {
				t.Fatalf("profile %q dimension %d", e.Profile(), e.Dimension())
			}
		})
	}
}

func TestOpenAISendsDimensionsAndOmitsEmptyKey(t *testing.T) {
	t.Parallel()
	p := providers[0]
	f := newFake(t, succeed(p))
	e, err := NewOpenAI(OpenAIConfig{
		BaseURL: f.srv.URL + "/proxy/", Model: "m", Profile: "openai/m@4", Dimension: testDim,
		SendDimensions: true, MaxBatch: 8, Timeout: testTimeout, HTTPClient: f.srv.Client(), Clock: clock.NewMock(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	r := f.requests()[0]
	if r.path != "/proxy/v1/embeddings" {
		t.Fatalf("path %q, want the base path prefix kept", r.path)
	}
	if d, ok := r.body["dimensions"].(float64); !ok || d != testDim {
		t.Fatalf("dimensions = %v, want %d", r.body["dimensions"], testDim)
	}
	if r.auth != "" {
		t.Fatalf("Authorization %q sent without a key", r.auth)
	}
}

func TestHTTPBatching(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, succeed(p))
			e := build(t, p, f, clock.NewMock(), 2)
			texts := []string{"a", "b", "c", "d", "e"}
			got, err := e.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want32(texts), got); diff != "" {
				t.Fatalf("vectors (-want +got):\n%s", diff)
			}
			var sent [][]string
			for _, r := range f.requests() {
				sent = append(sent, r.input)
			}
			if diff := cmp.Diff([][]string{{"a", "b"}, {"c", "d"}, {"e"}}, sent); diff != "" {
				t.Fatalf("batches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPEmptyInputSendsNothing(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		f := newFake(t, succeed(p))
		e := build(t, p, f, clock.NewMock(), 2)
		got, err := e.Embed(context.Background(), nil)
		if err != nil || len(got) != 0 || len(f.requests()) != 0 {
			t.Fatalf("%s: %d vectors, %v, %d requests", p.name, len(got), err, len(f.requests()))
		}
	}
}

func TestOpenAIOrdersByIndex(t *testing.T) {
	t.Parallel()
	p := providers[0]
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, input []string) {
		order := make([]int, len(input))
		for i := range order {
			order[i] = len(input) - 1 - i
		}
		_, _ = w.Write(p.body(fakeVectors(input), order))
	})
	e := build(t, p, f, clock.NewMock(), 3)
	texts := []string{"one", "two", "three", "four"}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want32(texts), got); diff != "" {
		t.Fatalf("vectors (-want +got):\n%s", diff)
	}
}

func TestOpenAIBadIndexes(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		body   string
		reason string
	}{
		"duplicate":    {`{"data":[{"index":0,"embedding":[1,2,3,4]},{"index":0,"embedding":[1,2,3,4]}]}`, "duplicate_index"},
		"out of range": {`{"data":[{"index":0,"embedding":[1,2,3,4]},{"index":2,"embedding":[1,2,3,4]}]}`, "index_out_of_range"},
		"negative":     {`{"data":[{"index":-1,"embedding":[1,2,3,4]},{"index":0,"embedding":[1,2,3,4]}]}`, "index_out_of_range"},
		"missing":      {`{"data":[{"embedding":[1,2,3,4]},{"index":1,"embedding":[1,2,3,4]}]}`, "missing_index"},
	}
	for name, c := range cases {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []string) { _, _ = io.WriteString(w, c.body) })
		e := build(t, providers[0], f, clock.NewMock(), 8)
		got, err := e.Embed(context.Background(), []string{"a", "b"})
		if got != nil {
			t.Fatalf("%s: returned vectors with an error", name)
		}
		wantError(t, err, memorykit.ErrIntegrity, false, c.reason)
	}
}

func TestHTTPStatusClassification(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		kind   error
		retry  bool
	}{
		{http.StatusTooManyRequests, memorykit.ErrUnavailable, true},
		{http.StatusInternalServerError, memorykit.ErrUnavailable, true},
		{http.StatusBadGateway, memorykit.ErrUnavailable, true},
		{http.StatusServiceUnavailable, memorykit.ErrUnavailable, true},
		{http.StatusRequestTimeout, memorykit.ErrUnavailable, true},
		{http.StatusBadRequest, memorykit.ErrInvalidInput, false},
		{http.StatusUnauthorized, memorykit.ErrInvalidInput, false},
		{http.StatusForbidden, memorykit.ErrInvalidInput, false},
		{http.StatusNotFound, memorykit.ErrInvalidInput, false},
		{http.StatusRequestEntityTooLarge, memorykit.ErrInvalidInput, false},
		{http.StatusNoContent, memorykit.ErrIntegrity, false},
		{http.StatusTemporaryRedirect, memorykit.ErrIntegrity, false},
	}
	for _, p := range providers {
		for _, c := range cases {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []string) {
				if c.status == http.StatusTemporaryRedirect {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(c.status)
				if c.status != http.StatusNoContent {
					_, _ = io.WriteString(w, `{"error":{"message":"nope"}}`)
				}
			})
			// The adapter's own client (nil HTTPClient) must not follow
			// the redirect.
			e, err := p.build(f.srv.URL, nil, clock.NewMock(), testKey, 8)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Embed(context.Background(), []string{"a"})
			e.CloseIdleConnections()
			if got != nil {
				t.Fatalf("%s %d: vectors with an error", p.name, c.status)
			}
			wantError(t, err, c.kind, c.retry, fmt.Sprintf("status_%d", c.status))
			if n := len(f.requests()); n != 1 {
				t.Fatalf("%s %d: %d requests, want 1 (no redirect, no retry)", p.name, c.status, n)
			}
		}
	}
}

func TestHTTPBadResponses(t *testing.T) {
	t.Parallel()
	// Bodies for two inputs, per provider.
	type bodies struct{ openai, ollama string }
	cases := []struct {
		name   string
		b      bodies
		reason string
	}{
		{"malformed", bodies{`{"data": [oops]}`, `{"embeddings": [oops]}`}, "malformed_json"},
		{"not json", bodies{`<html>bad gateway</html>`, `<html>bad gateway</html>`}, "malformed_json"},
		{"truncated", bodies{`{"data":[{"index":0,"embedding":[1,2,3,4]},{"index":1,"embedding":[1,2`, `{"embeddings":[[1,2,3,4],[1,2`}, "malformed_json"},
		{"trailing garbage", bodies{`{"data":[{"index":0,"embedding":[1,2,3,4]},{"index":1,"embedding":[1,2,3,4]}]} x`, `{"embeddings":[[1,2,3,4],[1,2,3,4]]} x`}, "malformed_json"},
		{"NaN literal", bodies{`{"data":[{"index":0,"embedding":[NaN,2,3,4]},{"index":1,"embedding":[1,2,3,4]}]}`, `{"embeddings":[[NaN,2,3,4],[1,2,3,4]]}`}, "malformed_json"},
		{"string vector", bodies{`{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]}`, `{"embeddings":["AAAA","AAAA"]}`}, "malformed_json"},
		{"float32 overflow", bodies{`{"data":[{"index":0,"embedding":[1e39,2,3,4]},{"index":1,"embedding":[1,2,3,4]}]}`, `{"embeddings":[[1e39,2,3,4],[1,2,3,4]]}`}, "non_finite"},
		{"too few", bodies{`{"data":[{"index":0,"embedding":[1,2,3,4]}]}`, `{"embeddings":[[1,2,3,4]]}`}, "count_mismatch"},
		{"too many", bodies{`{"data":[{"index":0,"embedding":[1,2,3,4]},{"index":1,"embedding":[1,2,3,4]},{"index":2,"embedding":[1,2,3,4]}]}`, `{"embeddings":[[1,2,3,4],[1,2,3,4],[1,2,3,4]]}`}, "count_mismatch"},
		{"empty object", bodies{`{}`, `{}`}, "count_mismatch"},
		{"short vector", bodies{`{"data":[{"index":0,"embedding":[1,2,3]},{"index":1,"embedding":[1,2,3,4]}]}`, `{"embeddings":[[1,2,3],[1,2,3,4]]}`}, "dimension_mismatch"},
		{"long vector", bodies{`{"data":[{"index":0,"embedding":[1,2,3,4]},{"index":1,"embedding":[1,2,3,4,5]}]}`, `{"embeddings":[[1,2,3,4],[1,2,3,4,5]]}`}, "dimension_mismatch"},
		{"null vector", bodies{`{"data":[{"index":0,"embedding":null},{"index":1,"embedding":[1,2,3,4]}]}`, `{"embeddings":[null,[1,2,3,4]]}`}, "dimension_mismatch"},
		{"zero vector", bodies{`{"data":[{"index":0,"embedding":[0,0,0,0]},{"index":1,"embedding":[1,2,3,4]}]}`, `{"embeddings":[[0,0,0,0],[1,2,3,4]]}`}, "zero_vector"},
	}
	for _, p := range providers {
		for _, c := range cases {
			body := c.b.openai
			if p.name == "ollama" {
				body = c.b.ollama
			}
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []string) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, body)
			})
			e := build(t, p, f, clock.NewMock(), 8)
			got, err := e.Embed(context.Background(), []string{"a", "b"})
			if got != nil {
				t.Fatalf("%s %s: vectors with an error", p.name, c.name)
			}
			var me *memorykit.Error
			if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrIntegrity) || me.Reason != c.reason || memorykit.IsRecoverable(err) {
				t.Errorf("%s %s: err %v, want non-recoverable ErrIntegrity %s", p.name, c.name, err, c.reason)
			}
		}
	}
}

// A failure in a later batch returns no vectors at all.
func TestHTTPLaterBatchFailureReturnsNothing(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		var calls int
		var mu sync.Mutex
		ok := succeed(p)
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, input []string) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 2 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			ok(w, r, input)
		})
		e := build(t, p, f, clock.NewMock(), 1)
		got, err := e.Embed(context.Background(), []string{"a", "b", "c"})
		if got != nil {
			t.Fatalf("%s: partial vectors returned", p.name)
		}
		wantError(t, err, memorykit.ErrUnavailable, true, "status_503")
		if n := len(f.requests()); n != 2 {
			t.Fatalf("%s: %d requests, want 2 (stop at the failure)", p.name, n)
		}
	}
}

func TestHTTPTruncatedTransportBody(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []string) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"data\":[{\"index\":0,")
			_ = buf.Flush()
			_ = conn.Close()
		})
		e := build(t, p, f, clock.NewMock(), 8)
		_, err := e.Embed(context.Background(), []string{"a"})
		wantError(t, err, memorykit.ErrUnavailable, true, "read_body")
	}
}

func TestHTTPConnectionRefused(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		e, err := p.build(url, nil, clock.NewMock(), testKey, 8)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Embed(context.Background(), []string{"a"})
		e.CloseIdleConnections()
		wantError(t, err, memorykit.ErrUnavailable, true, "connect")
	}
}

// blockingFake is a server whose handler reports each arrival and then waits
// for the client to go away or the test to release it.
func blockingFake(t *testing.T, p provider) (f *fake, arrived <-chan struct{}, release func()) {
	t.Helper()
	arr := make(chan struct{}, 8)
	rel := make(chan struct{})
	var once sync.Once
	ok := succeed(p)
	f = newFake(t, func(w http.ResponseWriter, r *http.Request, input []string) {
		arr <- struct{}{}
		select {
		case <-r.Context().Done():
			return
		case <-rel:
		}
		ok(w, r, input)
	})
	release = func() { once.Do(func() { close(rel) }) }
	t.Cleanup(release) // runs before the server closes
	return f, arr, release
}

type result struct {
	vs  [][]float32
	err error
}

func embedAsync(e memorykit.Embedder, ctx context.Context, texts []string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		vs, err := e.Embed(ctx, texts)
		ch <- result{vs, err}
	}()
	return ch
}

func TestHTTPTimeoutOnInjectedClock(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewMock()
			f, arrived, _ := blockingFake(t, p)
			e := build(t, p, f, clk, 8)
			done := embedAsync(e, context.Background(), []string{"slow"})
			<-arrived
			clk.Add(testTimeout)
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute): // watchdog only; the mock clock drives the timeout
				t.Fatal("the request did not time out on the injected clock")
			}
			if r.vs != nil {
				t.Fatal("vectors with a timeout")
			}
			wantError(t, r.err, memorykit.ErrUnavailable, true, "timeout")
			if !errors.Is(r.err, context.DeadlineExceeded) {
				t.Fatalf("err %v does not wrap context.DeadlineExceeded", r.err)
			}
		})
	}
}

func TestHTTPNoTimeoutBeforeDeadline(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewMock()
			f, arrived, release := blockingFake(t, p)
			e := build(t, p, f, clk, 1)
			texts := []string{"first", "second"}
			done := embedAsync(e, context.Background(), texts)
			// Each request gets its own full timeout: spend almost all of
			// it on the first and again on the second.
			<-arrived
			clk.Add(testTimeout - time.Millisecond)
			release()
			<-arrived
			clk.Add(testTimeout - time.Millisecond)
			r := <-done
			if r.err != nil {
				t.Fatalf("timed out before the deadline: %v", r.err)
			}
			if diff := cmp.Diff(want32(texts), r.vs); diff != "" {
				t.Fatalf("vectors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPContextCancel(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			f, arrived, _ := blockingFake(t, p)
			e := build(t, p, f, clock.NewMock(), 8)
			ctx, cancel := context.WithCancel(context.Background())
			done := embedAsync(e, ctx, []string{"x"})
			<-arrived
			cancel()
			r := <-done
			wantError(t, r.err, memorykit.ErrUnavailable, true, "canceled")
			if !errors.Is(r.err, context.Canceled) {
				t.Fatalf("err %v does not wrap context.Canceled", r.err)
			}

			// An already-cancelled context sends nothing.
			before := len(f.requests())
			_, err := e.Embed(ctx, []string{"y"})
			wantError(t, err, memorykit.ErrUnavailable, true, "canceled")
			if len(f.requests()) != before {
				t.Fatal("a request was sent with a done context")
			}
		})
	}
}

// errorStrings returns the message of err and of every error in its tree.
func errorStrings(err error) []string {
	if err == nil {
		return nil
	}
	out := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, errorStrings(e)...)
		}
	case interface{ Unwrap() error }:
		out = append(out, errorStrings(u.Unwrap())...)
	}
	return out
}

func TestHTTPErrorsNeverLeakSecrets(t *testing.T) {
	t.Parallel()
	const (
		keyCanary  = "sk-CANARYKEY-5e1f"
		textCanary = "CANARYTEXT-a91c"
		bodyCanary = "CANARYBODY-77d0"
		// A number the decoder would quote if its error were kept.
		numberCanary = "314159265358979323846"
	)
	texts := []string{"remember that " + textCanary, "second"}
	// Every response echoes the request body and the Authorization header
	// next to its own canary.
	responses := []struct {
		name   string
		status int
		body   func(echo string) string
	}{
		{"400", 400, func(e string) string { return `{"error":"` + bodyCanary + `"}` + e }},
		{"401", 401, func(e string) string { return bodyCanary + e }},
		{"429", 429, func(e string) string { return bodyCanary + e }},
		{"500", 500, func(e string) string { return bodyCanary + e }},
		{"malformed 200", 200, func(e string) string { return `{"data":"` + bodyCanary + e }},
		{"dimension 200", 200, func(string) string {
			return `{"` + bodyCanary + `":1,"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1]}],"embeddings":[[1],[1]]}`
		}},
		{"overflow 200", 200, func(string) string {
			return `{"data":[{"index":0,"embedding":[` + numberCanary + `e400,1,1,1]}],"embeddings":[[` + numberCanary + `e400,1,1,1]]}`
		}},
	}
	for _, p := range providers {
		for _, resp := range responses {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []string) {
				echo, _ := json.Marshal(map[string]any{"auth": r.Header.Get("Authorization")})
				w.WriteHeader(resp.status)
				_, _ = io.WriteString(w, resp.body(string(echo)+textCanary))
			})
			e, err := p.build(f.srv.URL, f.srv.Client(), clock.NewMock(), keyCanary, 8)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(context.Background(), texts)
			if err == nil {
				t.Fatalf("%s %s: no error", p.name, resp.name)
			}
			if p.name == "openai" && !strings.Contains(f.requests()[0].auth, keyCanary) {
				t.Fatal("the key was not sent, so the test proves nothing")
			}
			for _, s := range errorStrings(err) {
				for _, c := range []string{keyCanary, textCanary, bodyCanary, numberCanary} {
					if strings.Contains(s, c) {
						t.Errorf("%s %s: error text contains canary %s: %s", p.name, resp.name, c, s)
					}
				}
			}
		}
	}
	// Construction errors do not print a bad key either.
	_, err := NewOpenAI(OpenAIConfig{BaseURL: "http://x", APIKey: keyCanary + "\n", Model: "m", Profile: "p",
		Dimension: 4, MaxBatch: 1, Timeout: time.Second, Clock: clock.NewMock()})
	wantConfigError(t, err, "api_key")
	for _, s := range errorStrings(err) {
		if strings.Contains(s, keyCanary) {
			t.Errorf("config error contains the key: %s", s)
		}
	}
}

func TestHTTPResponseTooLarge(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request, input []string) {
			// Valid JSON, padded far beyond what one small vector needs.
			_, _ = io.WriteString(w, strings.Repeat(" ", 1<<20))
			_, _ = w.Write(p.body(fakeVectors(input), []int{0}))
		})
		e := build(t, p, f, clock.NewMock(), 8)
		_, err := e.Embed(context.Background(), []string{"a"})
		wantError(t, err, memorykit.ErrIntegrity, false, "response_too_large")
	}
}

func TestHTTPConcurrentEmbed(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		f := newFake(t, succeed(p))
		e := build(t, p, f, clock.NewMock(), 2)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				texts := []string{fmt.Sprint("t", i), "shared", fmt.Sprint("u", i)}
				got, err := e.Embed(context.Background(), texts)
				if err == nil && !cmp.Equal(want32(texts), got) {
					err = errors.New("wrong vectors")
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
		}
	}
}
