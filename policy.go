package memorykit

import (
	"time"

	"github.com/goagents/memorykit/internal/plumbing/textrule"
)

// RecallPolicy configures recall. It is versioned, and every field must be
// set: a zero or partial policy is ErrInvalidPolicy, never a default.
type RecallPolicy struct {
	Version int
	// ExactLimit, FullTextLimit and VectorLimit bound each channel's hits.
	ExactLimit    int
	FullTextLimit int
	VectorLimit   int
	// RRFK is the Reciprocal Rank Fusion constant k (commonly 60).
	RRFK int
	// Channel weights for fusion. Each must be in (0, 100], except that
	// VectorWeight 0 switches the vector channel off (see LexicalOnly).
	ExactWeight    float64
	FullTextWeight float64
	VectorWeight   float64
	// MinVectorSimilarity drops vector hits whose cosine similarity is below
	// it, so an unrelated memory is not recalled just because it has an
	// embedding. It must be in [0, 1); 0 keeps every vector hit. The right
	// floor depends on the embedding profile (about 0.1 suits
	// memorykit/hash-v1).
	MinVectorSimilarity float64
	// MaxItems bounds the fused result; MaxTokens bounds its estimated tokens.
	MaxItems  int
	MaxTokens int
	// MaxEntryRunes bounds one memory's content in a view or tool result;
	// longer content is cut and marked truncated.
	MaxEntryRunes int
	// MaxQueryRunes: only the last MaxQueryRunes runes of a query are used.
	MaxQueryRunes int
	// MaxQueryTerms bounds the full-text terms taken from a query.
	MaxQueryTerms int
	// Deadline bounds one whole recall, measured on the injected clock.
	Deadline time.Duration
	// EmbeddingProfile and EmbeddingDimension must match the Embedder.
	EmbeddingProfile   string
	EmbeddingDimension int
}

// LexicalOnly reports whether p switches the vector channel off: recall
// uses only exact keys and full text, needs no Embedder, and a Runtime
// with such a policy starts no embedding worker. It is the policy for a
// Host without an embedding model (see RecallPolicyLexicalV1). The switch
// is VectorWeight 0, and Validate accepts it only when every other vector
// field is zero too (VectorLimit, MinVectorSimilarity, EmbeddingDimension,
// and EmbeddingProfile empty), so a half-configured vector channel is
// still refused.
func (p RecallPolicy) LexicalOnly() bool {
	return p.VectorWeight == 0 && p.VectorLimit == 0 && p.MinVectorSimilarity == 0 &&
		p.EmbeddingProfile == "" && p.EmbeddingDimension == 0
}

// Bounds on values a Host sets.
const (
	// MaxPolicyBudget bounds every count in a RecallPolicy.
	MaxPolicyBudget = 10000
	// MinTombstoneSecretBytes is the shortest secret NewTombstoneKeyer
	// accepts.
	MinTombstoneSecretBytes = 32
)

// Validate reports ErrInvalidPolicy for any missing or out-of-range field.
// A LexicalOnly policy is valid; a VectorWeight of 0 with any other vector
// field set is not (field vector_weight, reason out_of_range).
func (p RecallPolicy) Validate() error {
	lexical := p.LexicalOnly()
	bad := func(field, reason string) error {
		return &Error{Op: "recallpolicy.validate", Kind: ErrInvalidPolicy, Field: field, Reason: reason}
	}
	counts := []struct {
		name string
		v    int
	}{
		{"version", p.Version},
		{"exact_limit", p.ExactLimit},
		{"full_text_limit", p.FullTextLimit},
		{"vector_limit", p.VectorLimit},
		{"rrf_k", p.RRFK},
		{"max_items", p.MaxItems},
		{"max_tokens", p.MaxTokens},
		{"max_entry_runes", p.MaxEntryRunes},
		{"max_query_runes", p.MaxQueryRunes},
		{"max_query_terms", p.MaxQueryTerms},
		{"embedding_dimension", p.EmbeddingDimension},
	}
	for _, c := range counts {
		if lexical && (c.name == "vector_limit" || c.name == "embedding_dimension") {
			continue
		}
		if c.v <= 0 {
			return bad(c.name, "must_be_positive")
		}
		if c.v > MaxPolicyBudget && c.name != "version" {
			return bad(c.name, "too_large")
		}
	}
	weights := []struct {
		name string
		v    float64
	}{
		{"exact_weight", p.ExactWeight},
		{"full_text_weight", p.FullTextWeight},
		{"vector_weight", p.VectorWeight},
	}
	for _, w := range weights {
		if lexical && w.name == "vector_weight" {
			continue
		}
		if !(w.v > 0 && w.v <= 100) { // also rejects NaN
			return bad(w.name, "out_of_range")
		}
	}
	if !(p.MinVectorSimilarity >= 0 && p.MinVectorSimilarity < 1) { // also rejects NaN
		return bad("min_vector_similarity", "out_of_range")
	}
	if p.Deadline <= 0 {
		return bad("deadline", "must_be_positive")
	}
	if lexical {
		return nil
	}
	if p.EmbeddingProfile == "" || len(p.EmbeddingProfile) > textrule.MaxIDBytes {
		return bad("embedding_profile", "bad_length")
	}
	if textrule.ProfileProblem(p.EmbeddingProfile) != "" {
		return bad("embedding_profile", "bad_character")
	}
	return nil
}

// Channel names a recall channel.
type Channel string

const (
	// ChannelExact matches record keys.
	ChannelExact Channel = "exact"
	// ChannelFullText matches search terms.
	ChannelFullText Channel = "full_text"
	// ChannelVector ranks by cosine similarity of embeddings.
	ChannelVector Channel = "vector"
)
