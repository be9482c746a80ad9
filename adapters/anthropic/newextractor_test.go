package anthropic_test

import (
	"context"
	"errors"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	mkanthropic "github.com/goagents/memorykit/adapters/anthropic"
	"github.com/goagents/memorykit/extraction"
)

type acceptContent struct{}

func (acceptContent) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

type countEvents struct{ usage int }

func (c *countEvents) Emit(e memorykit.Event) {
	if e.Kind == memorykit.EventExtractionUsage {
		c.usage++
	}
}

// TestNewExtractorRunsTheEngineOnTheProvider: the extractor NewExtractor
// returns is memorykit's engine, and its model calls reach the provider.
func TestNewExtractorRunsTheEngineOnTheProvider(t *testing.T) {
	f := newFake(t, proposal(extraction.SchemaName, `{"memories":[{"kind":"decision","key":"database engine","content":"The project uses PostgreSQL 16.","sources":null}]}`, "tool_use"))
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), acceptContent{})
	if err != nil {
		t.Fatal(err)
	}
	events := &countEvents{}
	cfg := extraction.Config{Prompt: extraction.PromptV1, Limits: extraction.LimitsV1(), Guard: guard, Events: events, Clock: clock.NewMock()}
	x, err := mkanthropic.NewExtractor(f.client(t), "test-model", cfg)
	if err != nil {
		t.Fatalf("NewExtractor: %v", err)
	}
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	props, err := x.Extract(context.Background(), memorykit.ExtractionInput{
		JobID: "job_1", Scope: scope, RunRef: "run-1/turn-1", Attempt: 1,
		Payload: "user: we decided to use PostgreSQL 16\nassistant: noted",
	})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if len(props) != 1 || props[0].Key != "database engine" || props[0].Kind != memorykit.KindDecision {
		t.Fatalf("proposals = %+v", props)
	}
	if events.usage != 1 {
		t.Errorf("usage events = %d, want 1", events.usage)
	}
	cfg.Model = extraction.Model(nil)
	if _, err := mkanthropic.NewExtractor(nil, "test-model", cfg); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := mkanthropic.NewExtractor(f.client(t), "test-model", extraction.Config{}); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Errorf("empty engine config: %v", err)
	}
}
