package extraction

import "github.com/goagents/memorykit"

// Limits are the extraction engine's bounds. Every field is required and
// positive; a zero or partial value is an error, never a default. Start
// from [LimitsV1] and change what you need.
type Limits struct {
	// Version names the preset the bounds came from.
	Version int
	// MaxProposals is the most proposals one turn yields; the rest of a
	// longer answer are dropped ("over_max_proposals"). It must not exceed
	// the WriteGuard's Limits.MaxListSize.
	MaxProposals int
	// MaxRelated is the most related memories shown to the model.
	MaxRelated int
	// MaxRelatedRunes bounds each related memory's content in the prompt;
	// longer content is cut and marked.
	MaxRelatedRunes int
	// MaxTranscriptBytes and MaxTranscriptRunes bound the transcript in the
	// prompt; a longer one is cut at a rune boundary and marked truncated.
	MaxTranscriptBytes int
	MaxTranscriptRunes int
	// MaxAnswerBytes is the largest answer the engine parses. A longer one
	// is refused before it is decoded (a recoverable
	// "provider_answer_too_large"), so a runaway answer cannot make the
	// engine's memory grow with it. Adapters should stop reading a
	// response at this size too.
	MaxAnswerBytes int
	// MaxOutputTokens is the Request's answer bound.
	MaxOutputTokens int
}

// LimitsV1 returns the engine's bounds, version 1:
//
//   - up to 8 proposals per turn and 8 related memories of up to 400 runes;
//   - a transcript of up to 64 KiB and 16,000 runes;
//   - answers of up to 64 KiB and 2,048 output tokens.
//
// A Host may copy it and change any bound; the copy must still pass
// Validate. Changing a number here would change what the engine accepts, so
// a different set of bounds needs a new preset version.
func LimitsV1() Limits {
	return Limits{
		Version:            1,
		MaxProposals:       8,
		MaxRelated:         8,
		MaxRelatedRunes:    400,
		MaxTranscriptBytes: 64 << 10,
		MaxTranscriptRunes: 16000,
		MaxAnswerBytes:     64 << 10,
		MaxOutputTokens:    2048,
	}
}

// Validate reports the first field that is not positive as an
// ErrInvalidConfig *memorykit.Error naming it.
func (l Limits) Validate() error {
	const op = "extraction.limits"
	for _, f := range []struct {
		name string
		v    int
	}{
		{"version", l.Version},
		{"max_proposals", l.MaxProposals},
		{"max_related", l.MaxRelated},
		{"max_related_runes", l.MaxRelatedRunes},
		{"max_transcript_bytes", l.MaxTranscriptBytes},
		{"max_transcript_runes", l.MaxTranscriptRunes},
		{"max_answer_bytes", l.MaxAnswerBytes},
		{"max_output_tokens", l.MaxOutputTokens},
	} {
		if f.v <= 0 {
			return memorykit.ConfigError(op, f.name, "must_be_positive")
		}
	}
	return nil
}
