package extraction_test

import (
	"context"
	"fmt"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
)

// answeringModel stands in for a provider adapter: it returns one fixed
// answer in the schema's shape.
type answeringModel struct{}

func (answeringModel) Generate(context.Context, extraction.Request) (extraction.Response, error) {
	return extraction.Response{
		JSON:  []byte(`{"memories":[{"kind":"decision","key":"Database engine","content":"The project uses PostgreSQL 16.","sources":["user"]}]}`),
		Usage: extraction.Usage{InputTokens: 412, OutputTokens: 38},
	}, nil
}

// acceptAll stands in for the Host's content policy.
type acceptAll struct{}

func (acceptAll) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

// printUsage prints the content-free extraction.usage events.
type printUsage struct{}

func (printUsage) Emit(e memorykit.Event) {
	if e.Kind == memorykit.EventExtractionUsage {
		fmt.Printf("usage: %d in, %d out\n", e.InputTokens, e.OutputTokens)
	}
}

// ExampleNew builds the engine on a Model (a provider adapter, or any
// type with Generate) and runs one extraction as the worker does. The
// Host passes the Engine as its runtime's Extractor.
func ExampleNew() {
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), acceptAll{})
	if err != nil {
		panic(err)
	}
	engine, err := extraction.New(extraction.Config{
		Model:  answeringModel{}, // a provider adapter, or any type with Generate
		Prompt: extraction.PromptV1,
		Limits: extraction.LimitsV1(),
		Guard:  guard,        // the WriteGuard the stores use
		Events: printUsage{}, // the Host's EventSink
		Clock:  clock.New(),
	})
	if err != nil {
		panic(err)
	}
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	proposals, err := engine.Extract(context.Background(), memorykit.ExtractionInput{
		JobID: "job_1", Scope: scope, RunRef: "run-7/turn-2", Attempt: 1,
		Payload: "user: we decided to use PostgreSQL 16\nassistant: noted",
	})
	if err != nil {
		panic(err)
	}
	for _, p := range proposals {
		fmt.Printf("%s %q: %s\n", p.Kind, p.Key, p.Content)
	}
	// Output:
	// usage: 412 in, 38 out
	// decision "database engine": The project uses PostgreSQL 16.
}

// ExampleExplicit runs the offline extractor: no model, no network.
func ExampleExplicit() {
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	proposals, _ := extraction.Explicit{}.Extract(context.Background(), memorykit.ExtractionInput{
		JobID: "job_2", Scope: scope, RunRef: "run-7/turn-3",
		Payload: "user: Remember that the release day is Friday. 我们决定使用 PostgreSQL。\nassistant: Noted.",
	})
	for _, p := range proposals {
		fmt.Printf("%s %q: %s\n", p.Kind, p.Key, p.Content)
	}
	// Output:
	// fact "release day": The release day is Friday
	// decision "使用 postgresql": 我们决定使用 PostgreSQL
}
