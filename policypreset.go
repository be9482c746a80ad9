package memorykit

import "time"

// Local embedding profiles the recall preset knows. They name the
// deterministic hashing embedders of package embedder (which this package
// cannot import).
const (
	profileHashV1 = "memorykit/hash-v1"
	profileHashV2 = "memorykit/hash-v2"
)

// RecallPolicyV1 returns memorykit's recall preset, version 1, for an
// embedder with the given profile and dimension. Every field is set here
// explicitly; a Host may copy it and change what it needs, and the result
// still has to pass Validate (an empty profile or a non-positive dimension
// does not).
//
// The numbers were chosen on the development sets in package bench
// (NewQualitySet and NewDialogSet; see docs/benchmarks.md) with
// storekit.TermsVersion 2, so that fused recall is at least as good as its best
// single channel at 5 and at 10 results on every set, and at least as good
// as a plain BM25 baseline over the same records:
//
//   - With a local hashing embedder (memorykit/hash-v1, memorykit/hash-v2)
//     the vector channel measures word overlap, much as full text does but
//     noisier: it is kept, at a lower weight than full text and exact keys
//     and behind a similarity floor, to fill in when full text finds too
//     little (stemmed and misspelt words, records below the full-text
//     threshold).
//   - With any other profile (a semantic model) the three channels weigh
//     alike and no floor is set: pick one for the model at hand.
//
// Changing any number here changes recall results: it needs a new preset
// version, not an edit of this one.
func RecallPolicyV1(profile string, dim int) RecallPolicy {
	p := RecallPolicy{
		Version:             1,
		ExactLimit:          10,
		FullTextLimit:       30,
		VectorLimit:         30,
		RRFK:                60,
		ExactWeight:         1,
		FullTextWeight:      1,
		VectorWeight:        1,
		MinVectorSimilarity: 0,
		MaxItems:            10,
		MaxTokens:           2000,
		MaxEntryRunes:       600,
		MaxQueryRunes:       2000,
		MaxQueryTerms:       48,
		Deadline:            500 * time.Millisecond,
		EmbeddingProfile:    profile,
		EmbeddingDimension:  dim,
	}
	switch profile {
	case profileHashV1, profileHashV2:
		p.RRFK = localRRFK
		p.VectorWeight = localVectorWeight
		p.MinVectorSimilarity = localVectorFloor
	}
	return p
}

// RecallPolicyLexicalV1 returns memorykit's lexical-only recall preset,
// version 1: the exact-key and full-text settings of RecallPolicyV1 with
// the vector channel switched off (see RecallPolicy.LexicalOnly). It is
// the choice for a Host without an embedding model: recall needs no
// Embedder and a Runtime built with it starts no embedding worker. Records
// are still found by their keys and words; what is lost is recall of
// records that share no word with the query. Changing any number here
// needs a new preset version.
func RecallPolicyLexicalV1() RecallPolicy {
	p := RecallPolicyV1("", 0)
	p.VectorLimit = 0
	p.VectorWeight = 0
	p.MinVectorSimilarity = 0
	return p
}

// The local embedders' fusion settings (see RecallPolicyV1 and
// docs/benchmarks.md for the sweep they come from). At weight 0.3 and
// k = 20 a record only the vector channel ranks first scores 0.3/21, below
// a full-text rank of about 50: full text leads, the vector channel
// reorders records both channels found and fills the list when full text
// kept fewer than MaxItems. The floor drops vector hits that share almost
// nothing with the query, so a query about nothing stored recalls nothing
// rather than ten unrelated memories.
const (
	localRRFK         = 20
	localVectorWeight = 0.3
	localVectorFloor  = 0.1
)
