package memorykit_test

import (
	"testing"

	"github.com/goagents/memorykit"
)

func TestRecallPolicyV1(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"memorykit/hash-v1", "memorykit/hash-v2", "openai/text-embedding-3-small"} {
		p := memorykit.RecallPolicyV1(profile, 384)
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		if p.Version != 1 || p.EmbeddingProfile != profile || p.EmbeddingDimension != 384 || p.MaxItems != 10 {
			t.Fatalf("%s: %+v", profile, p)
		}
	}
	// The local hashing embedders: full text leads, the vector channel
	// fills in behind a floor.
	local := memorykit.RecallPolicyV1("memorykit/hash-v2", 384)
	if local.RRFK != 20 || local.VectorWeight != 0.3 || local.FullTextWeight != 1 || local.ExactWeight != 1 || local.MinVectorSimilarity != 0.1 {
		t.Fatalf("local preset: %+v", local)
	}
	other := memorykit.RecallPolicyV1("openai/text-embedding-3-small", 1536)
	if other.RRFK != 60 || other.VectorWeight != 1 || other.MinVectorSimilarity != 0 {
		t.Fatalf("semantic preset: %+v", other)
	}
	// A preset is still only a policy: no profile or dimension, no policy.
	if memorykit.RecallPolicyV1("", 384).Validate() == nil || memorykit.RecallPolicyV1("memorykit/hash-v2", 0).Validate() == nil {
		t.Fatal("an empty profile or zero dimension passed Validate")
	}
}
