// Package embedder holds memorykit's embedders: [Local], a deterministic
// feature-hashing embedder that needs no network and is the embedded default,
// and HTTP adapters for providers Hosts already run: [OpenAI] (any
// OpenAI-compatible /v1/embeddings endpoint) and [Ollama] (/api/embed).
//
// Every embedder implements [memorykit.Embedder]. Failures are typed
// *memorykit.Error values:
//
//   - rate limits (429), request timeouts (408), server errors (5xx),
//     per-request timeouts, connection failures and a cancelled context are
//     ErrUnavailable and recoverable, so recall drops only its vector channel
//     and embedding workers back off and retry;
//   - any other 4xx is ErrInvalidInput and not recoverable;
//   - a response that is malformed, has the wrong number of vectors, the
//     wrong dimension, non-finite or all-zero values is ErrIntegrity and not
//     recoverable;
//   - a bad configuration is ErrInvalidConfig at construction time; there are
//     no defaults for required fields.
//
// Error strings carry only the operation, kind, field and a reason code such
// as "status_429" or "dimension_mismatch". API keys, request and response
// bodies and the texts being embedded never appear in them, and the adapters
// do not log.
package embedder
