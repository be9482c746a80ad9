package main

import (
	"context"
	"errors"
	"regexp"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
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

// hostExtractor is the Host's memorykit.Extractor: the one given; else,
// with a real model (-model openai|anthropic), memorykit's extraction
// engine on that model (the versioned prompt and bounds, every proposal
// checked by the Host's guard, token usage as extraction.usage events);
// else extraction.Explicit. Explicit needs no model and no network: it
// proposes a candidate for each explicit statement in the user's side of a
// finished turn ("remember that …", "we decided …", "from now on …", 记住…,
// 我们决定…, 今後は…, …と決めました). Every proposal is only a candidate: it
// waits for a reviewer. With the Host's guard (Limits and secretPolicy), a
// statement the policy refuses ("remember that the password is …") is left
// out and the others are still proposed.
func hostExtractor(o Options, guard *memorykit.WriteGuard, events memorykit.EventSink) (memorykit.Extractor, error) {
	switch {
	case o.Extractor != nil:
		return o.Extractor, nil
	case o.ExtractionModel != nil:
		return extraction.New(extraction.Config{
			Model: o.ExtractionModel, Prompt: extraction.PromptV1, Limits: extraction.LimitsV1(),
			Guard: guard, Events: events, Clock: o.Clock,
		})
	}
	return extraction.Explicit{Guard: guard}, nil
}
