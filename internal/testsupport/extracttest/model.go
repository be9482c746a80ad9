// Package extracttest holds test doubles of extraction.Model.
package extracttest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/goagents/memorykit/extraction"
)

// Model is a scripted extraction.Model: Answer decides each call's
// response. It records every Request. Safe for concurrent use.
type Model struct {
	// Answer returns the response for one request; nil answers
	// {"memories":[]}.
	Answer func(ctx context.Context, req extraction.Request) (extraction.Response, error)

	mu       sync.Mutex
	requests []extraction.Request
}

// Generate implements extraction.Model.
func (m *Model) Generate(ctx context.Context, req extraction.Request) (extraction.Response, error) {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	if m.Answer == nil {
		return extraction.Response{JSON: []byte(`{"memories":[]}`)}, nil
	}
	return m.Answer(ctx, req)
}

// Requests returns a copy of the requests so far.
func (m *Model) Requests() []extraction.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]extraction.Request(nil), m.requests...)
}

// Memory is one proposal as the schema spells it.
type Memory struct {
	Kind    string   `json:"kind"`
	Key     string   `json:"key"`
	Content string   `json:"content"`
	Sources []string `json:"sources"`
}

// Answer returns the JSON answer holding ms.
func Answer(ms ...Memory) []byte {
	if ms == nil {
		ms = []Memory{}
	}
	b, err := json.Marshal(map[string]any{"memories": ms})
	if err != nil {
		panic(err)
	}
	return b
}

// Fixed returns an Answer func that always answers ms with the given usage.
func Fixed(usage extraction.Usage, ms ...Memory) func(context.Context, extraction.Request) (extraction.Response, error) {
	b := Answer(ms...)
	return func(context.Context, extraction.Request) (extraction.Response, error) {
		return extraction.Response{JSON: b, Usage: usage}, nil
	}
}
