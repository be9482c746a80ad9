package main

import (
	"context"
	"errors"
	"regexp"

	"github.com/goagents/memorykit"
)

// secretPolicy is the Host's content policy (memorykit.ContentValidator):
// memory must never hold credentials. It looks for the shapes of common
// secrets in every content-bearing field: keys, content, metadata keys and
// values, source kinds and references, and the free-text reasons of writes
// and lifecycle actions. A real Host
// would add its own rules (PII, customer data, allow-lists).
//
// Its errors say only which rule matched; memorykit reports every
// rejection as ErrInvalidInput "content_rejected" without printing them.
type secretPolicy struct{}

var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`),
	regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),                                    // AWS access key ID
	regexp.MustCompile(`\b(sk|rk)-[A-Za-z0-9_-]{20,}`),                            // provider API keys
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}`),                            // GitHub tokens
	regexp.MustCompile(`(?i)\b(password|passwd|api[_-]?key|secret)\s*[:=]\s*\S+`), // key=value credentials
}

var errLooksLikeSecret = errors.New("looks like a credential")

// ValidateContent implements memorykit.ContentValidator.
func (secretPolicy) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	texts := []string{c.Key, c.Content, c.Reason}
	for k, v := range c.Metadata {
		texts = append(texts, k, v)
	}
	for _, s := range c.Sources {
		texts = append(texts, s.Kind, s.Ref)
	}
	for _, t := range texts {
		for _, p := range secretPatterns {
			if p.MatchString(t) {
				return errLooksLikeSecret
			}
		}
	}
	return nil
}

// quietExtractor is the Host's memorykit.Extractor. Extraction reads a
// finished turn and proposes candidate memories for review; a real Host
// calls its model here (with a prompt asking for durable project facts)
// and returns its proposals. The example proposes nothing, so every
// candidate in the walk-through comes visibly from remember_project_memory.
// The extraction jobs still run: each finished turn is enqueued, leased and
// completed, which is the pipeline a real extractor plugs into.
type quietExtractor struct{}

// Extract implements memorykit.Extractor.
func (quietExtractor) Extract(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	return nil, nil
}
