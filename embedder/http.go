package embedder

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

const (
	// MaxDimension bounds the Dimension of an HTTP embedder; it is the
	// largest vector pgvector stores.
	MaxDimension = 16000
	// MaxBatchLimit bounds MaxBatch, the texts sent in one HTTP request.
	MaxBatchLimit = 2048
	// MaxModelBytes bounds the length of a model name.
	MaxModelBytes = 256

	// drainBytes is how much of an unwanted body is read so the connection
	// can be reused.
	drainBytes = 64 << 10
)

// httpCore is what the provider adapters share: the endpoint, the client,
// the per-request timeout on the injected clock, and the error mapping.
type httpCore struct {
	op       string // operation name for Embed errors
	endpoint string
	apiKey   string
	client   *http.Client
	clock    clock.Clock
	timeout  time.Duration
	dim      int
	profile  string
	maxBatch int
}

// commonConfig is the part of every adapter's configuration that is
// validated the same way.
type commonConfig struct {
	baseURL    string
	apiRoot    string // first path segment of the API, such as "/v1"
	path       string // rest of the endpoint path, such as "/embeddings"
	apiKey     string
	model      string
	profile    string
	dimension  int
	maxBatch   int
	timeout    time.Duration
	httpClient *http.Client
	clock      clock.Clock
}

// newHTTPCore validates c and builds the shared core. newOp names the
// constructor in errors; embedOp names Embed.
func newHTTPCore(newOp, embedOp string, c commonConfig) (*httpCore, error) {
	if c.clock == nil {
		return nil, configError(newOp, "clock", "missing")
	}
	if c.timeout <= 0 {
		return nil, configError(newOp, "timeout", "must_be_positive")
	}
	if err := storekit.ValidateProfile(newOp, c.profile); err != nil {
		var me *memorykit.Error
		reason := "invalid"
		if errors.As(err, &me) {
			reason = me.Reason
		}
		return nil, configError(newOp, "profile", reason)
	}
	if c.dimension <= 0 {
		return nil, configError(newOp, "dimension", "must_be_positive")
	}
	if c.dimension > MaxDimension {
		return nil, configError(newOp, "dimension", "too_large")
	}
	if c.maxBatch <= 0 {
		return nil, configError(newOp, "max_batch", "must_be_positive")
	}
	if c.maxBatch > MaxBatchLimit {
		return nil, configError(newOp, "max_batch", "too_large")
	}
	if strings.TrimSpace(c.model) == "" {
		return nil, configError(newOp, "model", "missing")
	}
	if len(c.model) > MaxModelBytes {
		return nil, configError(newOp, "model", "too_long")
	}
	for _, r := range c.model {
		if r < 0x20 || r == 0x7f {
			return nil, configError(newOp, "model", "bad_character")
		}
	}
	for i := 0; i < len(c.apiKey); i++ {
		if b := c.apiKey[i]; b <= 0x20 || b >= 0x7f {
			return nil, configError(newOp, "api_key", "bad_character")
		}
	}
	endpoint, err := joinEndpoint(newOp, c.baseURL, c.apiRoot, c.path)
	if err != nil {
		return nil, err
	}
	client := c.httpClient
	if client == nil {
		client = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// Never follow a redirect: it could carry the API key to a
			// host the Host did not configure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &httpCore{
		op:       embedOp,
		endpoint: endpoint,
		apiKey:   c.apiKey,
		client:   client,
		clock:    c.clock,
		timeout:  c.timeout,
		dim:      c.dimension,
		profile:  c.profile,
		maxBatch: c.maxBatch,
	}, nil
}

// joinEndpoint checks base (an absolute http or https URL without
// credentials, query or fragment) and appends apiRoot and path to its path.
// A base that already ends in apiRoot (such as "/v1") is rejected, because
// the request would go to ".../v1/v1/embeddings".
func joinEndpoint(op, base, apiRoot, path string) (string, error) {
	if base == "" {
		return "", configError(op, "base_url", "missing")
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", configError(op, "base_url", "unparsable")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", configError(op, "base_url", "scheme_not_http")
	case u.Host == "":
		return "", configError(op, "base_url", "missing_host")
	case u.User != nil:
		return "", configError(op, "base_url", "has_credentials")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", configError(op, "base_url", "has_query_or_fragment")
	}
	prefix := strings.TrimRight(u.Path, "/")
	if strings.HasSuffix(prefix, apiRoot) {
		return "", configError(op, "base_url", "includes_api_path")
	}
	u.Path = prefix + apiRoot + path
	u.RawPath = ""
	return u.String(), nil
}

// batches calls fn for consecutive slices of texts of at most maxBatch.
func (c *httpCore) batches(texts []string, fn func(batch []string) error) error {
	for start := 0; start < len(texts); start += c.maxBatch {
		end := min(start+c.maxBatch, len(texts))
		if err := fn(texts[start:end]); err != nil {
			return err
		}
	}
	return nil
}

// maxResponseBytes bounds the body of a response carrying n vectors: a
// generous 48 bytes per number, 1 KiB per item and 64 KiB of envelope.
func (c *httpCore) maxResponseBytes(n int) int64 {
	return int64(n)*(int64(c.dim)*48+1024) + 64<<10
}

// post sends one JSON request and returns the body of a 200 response. The
// request is bounded by the per-request timeout on the injected clock. The
// returned errors never include the request, the response or the key.
func (c *httpCore) post(ctx context.Context, body []byte, n int) ([]byte, error) {
	if ctx.Err() != nil {
		return nil, contextError(c.op, ctx)
	}
	rctx, cancel := c.clock.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, memorykit.ConfigError(c.op, "base_url", "bad_request_url")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, rctx, "connect", err)
	}
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
		_ = resp.Body.Close()
	}()
	if err := statusError(c.op, resp.StatusCode); err != nil {
		return nil, err
	}
	limit := c.maxResponseBytes(n)
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, c.transportError(ctx, rctx, "read_body", err)
	}
	if int64(len(data)) > limit {
		return nil, integrity(c.op, "response_too_large")
	}
	return data, nil
}

// transportError classifies a failure to send or read: the caller's context
// ending, the per-request timeout, or a connection problem. All are
// recoverable. The cause is kept for errors.Is but never printed; it names
// at most the endpoint, never the key or a body.
func (c *httpCore) transportError(parent, rctx context.Context, reason string, cause error) error {
	switch {
	case parent.Err() != nil:
		return contextError(c.op, parent)
	case rctx.Err() != nil:
		return unavailable(c.op, "timeout", context.DeadlineExceeded)
	}
	return unavailable(c.op, reason, cause)
}

// statusError maps a non-200 status to a typed error, or returns nil for 200.
func statusError(op string, code int) error {
	reason := "status_" + strconv.Itoa(code)
	switch {
	case code == http.StatusOK:
		return nil
	case code == http.StatusTooManyRequests, code == http.StatusRequestTimeout, code >= 500 && code <= 599:
		return unavailable(op, reason, nil)
	case code >= 400 && code <= 499:
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidInput, Reason: reason}
	}
	return integrity(op, reason)
}

// toVector checks one provider vector and converts it to float32: it must
// have exactly dim components, each finite as a float32, not all zero.
func toVector(op string, v []float64, dim int) ([]float32, error) {
	if len(v) != dim {
		return nil, integrity(op, "dimension_mismatch")
	}
	out := make([]float32, dim)
	nonZero := false
	for i, x := range v {
		f := float32(x)
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, integrity(op, "non_finite")
		}
		if f != 0 {
			nonZero = true
		}
		out[i] = f
	}
	if !nonZero {
		return nil, integrity(op, "zero_vector")
	}
	return out, nil
}

// closeIdle closes the client's idle connections.
func (c *httpCore) closeIdle() { c.client.CloseIdleConnections() }
