package embedder

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
)

// OpenAIConfig configures an [OpenAI] embedder. Every field without
// "optional" is required; there are no defaults.
type OpenAIConfig struct {
	// BaseURL is the server's root, such as "https://api.openai.com". The
	// adapter posts to BaseURL + "/v1/embeddings", so BaseURL must not
	// itself end in "/v1". It may carry a path prefix for a proxy.
	BaseURL string
	// APIKey is sent as a bearer token. Optional: leave it empty for a
	// local OpenAI-compatible server that needs no key. It must be visible
	// ASCII.
	APIKey string
	// Model is the provider's model name, such as "text-embedding-3-small".
	Model string
	// Profile is the memorykit embedding profile these vectors belong to,
	// such as "openai/text-embedding-3-small@1536". It must match the
	// RecallPolicy's EmbeddingProfile and change whenever the model or
	// dimension does.
	Profile string
	// Dimension is the length every returned vector must have.
	Dimension int
	// SendDimensions adds "dimensions": Dimension to each request, for
	// models that can shorten their vectors. Optional.
	SendDimensions bool
	// MaxBatch is the most texts sent in one request; longer inputs are
	// split into several sequential requests. At most [MaxBatchLimit].
	MaxBatch int
	// Timeout bounds each HTTP request, measured on Clock.
	Timeout time.Duration
	// HTTPClient sends the requests. Optional: when nil, a dedicated client
	// that never follows redirects is used.
	HTTPClient *http.Client
	// Clock measures Timeout.
	Clock clock.Clock
}

// OpenAI is a [memorykit.Embedder] for an OpenAI-compatible embeddings
// endpoint (POST /v1/embeddings). It is safe for concurrent use.
type OpenAI struct {
	core           *httpCore
	model          string
	sendDimensions bool
}

var _ memorykit.Embedder = (*OpenAI)(nil)

// NewOpenAI validates cfg and returns the embedder. A missing or invalid
// field is ErrInvalidConfig naming the field; the API key is never printed.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	core, err := newHTTPCore("embedder.openai.new", "embedder.openai.embed", commonConfig{
		baseURL:    cfg.BaseURL,
		apiRoot:    "/v1",
		path:       "/embeddings",
		apiKey:     cfg.APIKey,
		model:      cfg.Model,
		profile:    cfg.Profile,
		dimension:  cfg.Dimension,
		maxBatch:   cfg.MaxBatch,
		timeout:    cfg.Timeout,
		httpClient: cfg.HTTPClient,
		clock:      cfg.Clock,
	})
	if err != nil {
		return nil, err
	}
	return &OpenAI{core: core, model: cfg.Model, sendDimensions: cfg.SendDimensions}, nil
}

// Profile returns the configured profile.
func (e *OpenAI) Profile() string { return e.core.profile }

// Dimension returns the configured dimension.
func (e *OpenAI) Dimension() int { return e.core.dim }

// CloseIdleConnections closes the HTTP client's idle connections. Call it
// at shutdown, after the last Embed.
func (e *OpenAI) CloseIdleConnections() { e.core.closeIdle() }

type openAIRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type openAIResponse struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one vector per text, in order, sending at most MaxBatch
// texts per request. Results are placed by their "index" field; a missing,
// duplicated or out-of-range index, a wrong count or dimension, or a
// non-finite or all-zero vector is ErrIntegrity. See the package
// documentation for how HTTP failures are classified. On any error no
// vectors are returned. An empty texts slice sends nothing.
func (e *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	err := e.core.batches(texts, func(batch []string) error {
		req := openAIRequest{Model: e.model, Input: batch}
		if e.sendDimensions {
			req.Dimensions = e.core.dim
		}
		vs, err := e.embedBatch(ctx, req)
		if err != nil {
			return err
		}
		out = append(out, vs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (e *OpenAI) embedBatch(ctx context.Context, req openAIRequest) ([][]float32, error) {
	op := e.core.op
	body, err := json.Marshal(req)
	if err != nil {
		return nil, memorykit.FieldError(op, "texts", "unencodable")
	}
	n := len(req.Input)
	data, err := e.core.post(ctx, body, n)
	if err != nil {
		return nil, err
	}
	var resp openAIResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		// The decoder's message may quote the body, so it is dropped.
		return nil, integrity(op, "malformed_json")
	}
	if len(resp.Data) != n {
		return nil, integrity(op, "count_mismatch")
	}
	out := make([][]float32, n)
	for _, item := range resp.Data {
		if item.Index == nil {
			return nil, integrity(op, "missing_index")
		}
		i := *item.Index
		if i < 0 || i >= n {
			return nil, integrity(op, "index_out_of_range")
		}
		if out[i] != nil {
			return nil, integrity(op, "duplicate_index")
		}
		v, err := toVector(op, item.Embedding, e.core.dim)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
