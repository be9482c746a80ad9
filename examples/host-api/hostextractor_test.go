package main

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
)

type oneDecision struct{ calls int }

func (m *oneDecision) Generate(context.Context, extraction.Request) (extraction.Response, error) {
	m.calls++
	return extraction.Response{
		JSON:  []byte(`{"memories":[{"kind":"decision","key":"database engine","content":"The project uses PostgreSQL 16.","sources":null}]}`),
		Usage: extraction.Usage{InputTokens: 10, OutputTokens: 5},
	}, nil
}

// TestHostExtractorChoosesTheEngineForAModel: with a model (-model
// openai|anthropic) the Host extracts with memorykit's engine on it; with
// none, with extraction.Explicit; a given Extractor wins.
func TestHostExtractorChoosesTheEngineForAModel(t *testing.T) {
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), secretPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	events := logEvents{log: zap.NewNop()}
	m := &oneDecision{}
	x, err := hostExtractor(Options{ExtractionModel: m, Clock: clock.NewMock()}, guard, events)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := x.(*extraction.Engine); !ok {
		t.Fatalf("with a model: %T, want *extraction.Engine", x)
	}
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	props, err := x.Extract(context.Background(), memorykit.ExtractionInput{JobID: "job_1", Scope: scope, RunRef: "r-1", Attempt: 1, Payload: "user: we moved to PostgreSQL 16"})
	if err != nil || len(props) != 1 || m.calls != 1 {
		t.Fatalf("engine on the model: %+v, %v, %d calls", props, err, m.calls)
	}
	x, err = hostExtractor(Options{}, guard, events)
	if _, ok := x.(extraction.Explicit); !ok || err != nil {
		t.Fatalf("without a model: %T, %v", x, err)
	}
	given := extraction.Explicit{}
	if x, _ := hostExtractor(Options{Extractor: given, ExtractionModel: m}, guard, events); x != memorykit.Extractor(given) {
		t.Fatalf("a given extractor: %T", x)
	}
}
