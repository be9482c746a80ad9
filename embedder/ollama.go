package embedder

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
)

// OllamaConfig configures an [Ollama] embedder. Every field without
// "optional" is required; there are no defaults.
type OllamaConfig struct {
	// BaseURL is the Ollama server's root, such as "http://localhost:11434".
	// The adapter posts to BaseURL + "/api/embed", so BaseURL must not
	// itself end in "/api".
	BaseURL string
	// Model is the Ollama model name, such as "nomic-embed-text".
	Model string
	// Profile is the memorykit embedding profile these vectors belong to,
	// such as "ollama/nomic-embed-text@768". It must match the
	// RecallPolicy's EmbeddingProfile and change whenever the model does.
	Profile string
	// Dimension is the length every returned vector must have.
	Dimension int
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

// Ollama is a [memorykit.Embedder] for Ollama's batch embedding endpoint
// (POST /api/embed). It is safe for concurrent use.
type Ollama struct {
	core  *httpCore
	model string
}

var _ memorykit.Embedder = (*Ollama)(nil)

// NewOllama validates cfg and returns the embedder. A missing or invalid
// field is ErrInvalidConfig naming the field.
func NewOllama(cfg OllamaConfig) (*Ollama, error) {
	core, err := newHTTPCore("embedder.ollama.new", "embedder.ollama.embed", commonConfig{
		baseURL:    cfg.BaseURL,
		apiRoot:    "/api",
		path:       "/embed",
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
	return &Ollama{core: core, model: cfg.Model}, nil
}

// Profile returns the configured profile.
func (e *Ollama) Profile() string { return e.core.profile }

// Dimension returns the configured dimension.
func (e *Ollama) Dimension() int { return e.core.dim }

// CloseIdleConnections closes the HTTP client's idle connections. Call it
// at shutdown, after the last Embed.
func (e *Ollama) CloseIdleConnections() { e.core.closeIdle() }

type ollamaRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type ollamaResponse struct {
	Embeddings [][]float64 `json:"embeddings"`
}

// Embed returns one vector per text, in order, sending at most MaxBatch
// texts per request. Ollama returns vectors in input order; a wrong count or
// dimension, or a non-finite or all-zero vector is ErrIntegrity. See the
// package documentation for how HTTP failures are classified. On any error
// no vectors are returned. An empty texts slice sends nothing.
func (e *Ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	err := e.core.batches(texts, func(batch []string) error {
		vs, err := e.embedBatch(ctx, batch)
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

func (e *Ollama) embedBatch(ctx context.Context, batch []string) ([][]float32, error) {
	op := e.core.op
	body, err := json.Marshal(ollamaRequest{Model: e.model, Input: batch})
	if err != nil {
		return nil, memorykit.FieldError(op, "texts", "unencodable")
	}
	data, err := e.core.post(ctx, body, len(batch))
	if err != nil {
		return nil, err
	}
	var resp ollamaResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		// The decoder's message may quote the body, so it is dropped.
		return nil, integrity(op, "malformed_json")
	}
	if len(resp.Embeddings) != len(batch) {
		return nil, integrity(op, "count_mismatch")
	}
	out := make([][]float32, len(batch))
	for i, raw := range resp.Embeddings {
		v, err := toVector(op, raw, e.core.dim)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
