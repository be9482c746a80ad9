package extraction_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/internal/testsupport/extracttest"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
)

// TestCanaryNeverLeaves: a canary in the transcript, the related memories,
// kept and dropped proposals, and model errors never reaches an event or an
// error string of the engine or of Explicit. The first check proves the
// canary does reach the model, so the test is not vacuous.
func TestCanaryNeverLeaves(t *testing.T) {
	const canary = "CANARY-extraction-5c1"
	b := setup(t)
	b.in.Payload = "user: remember that the canary is " + canary + "\nassistant: " + canary
	b.in.Related = []memorykit.RelatedMemory{{Kind: memorykit.KindFact, Key: "canary " + canary, Content: canary}}
	answers := [][]byte{
		extracttest.Answer(
			extracttest.Memory{Kind: "fact", Key: "kept " + canary, Content: "kept " + canary},
			extracttest.Memory{Kind: "fact", Key: "rejected", Content: testkit.RejectMarker + canary},
			extracttest.Memory{Kind: canary, Key: "k", Content: canary},
			extracttest.Memory{Kind: "fact", Key: "", Content: canary},
		),
		[]byte(`{"memories":[{"kind":"fact","key":"k","content":"c","sources":null,"` + canary + `":"` + canary + `"}]}`),
		[]byte(`{"memories":[{"kind":"fact","key":"` + canary + `","content":5}]}`),
		[]byte(canary + " is not JSON"),
		[]byte(`{"memories":[],"` + canary + `":1}`),
		[]byte(`{"memories":"` + strings.Repeat(canary, 5000) + `"}`),
	}
	var errs []error
	for _, a := range answers {
		b.answer(a)
		_, err := b.engine.Extract(context.Background(), b.in)
		errs = append(errs, err)
	}
	b.model.Answer = func(context.Context, extraction.Request) (extraction.Response, error) {
		return extraction.Response{}, errors.New("provider said " + canary)
	}
	_, err := b.engine.Extract(context.Background(), b.in)
	errs = append(errs, err)
	b.model.Answer = func(context.Context, extraction.Request) (extraction.Response, error) {
		return extraction.Response{}, &memorykit.Error{Op: "p", Kind: memorykit.ErrUnavailable, Reason: "bad reason " + canary, Err: errors.New(canary)}
	}
	_, err = b.engine.Extract(context.Background(), b.in)
	errs = append(errs, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = extraction.Explicit{}.Extract(ctx, b.in)
	errs = append(errs, err)
	_, err = extraction.Explicit{}.Extract(context.Background(), b.in)
	errs = append(errs, err)

	if reqs := b.model.Requests(); len(reqs) == 0 || !strings.Contains(reqs[0].Input, canary) {
		t.Fatal("the canary never reached the model: the test would prove nothing")
	}
	if len(b.sink.OfKind(memorykit.EventExtractionDropped)) == 0 {
		t.Fatal("no drop events: the test would prove nothing about them")
	}
	for i, err := range errs {
		if err != nil && strings.Contains(err.Error(), canary) {
			t.Errorf("error %d quotes the canary: %v", i, err)
		}
	}
	b.sink.AssertNoCanary(t, canary)
}
