package memorytools_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/goagents/memorykit/memorytools"
)

type ctxKey struct{}

// ctxDetector records how it was asked and answers claim.
type ctxDetector struct {
	claim    bool
	withCtx  atomic.Int32
	without  atomic.Int32
	sawValue atomic.Value
}

func (d *ctxDetector) ClaimsMemoryWrite(string) bool { d.without.Add(1); return d.claim }

func (d *ctxDetector) ClaimsMemoryWriteContext(ctx context.Context, _ string) bool {
	d.withCtx.Add(1)
	if v, ok := ctx.Value(ctxKey{}).(string); ok {
		d.sawValue.Store(v)
	}
	return d.claim
}

// AnyClaim rejects when either detector reads a claim, asks in order and
// stops at the first claim, and hands the caller's context on.
func TestAnyClaim(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "request-7")
	rules := memorytools.DefaultClaimDetector()

	model := &ctxDetector{claim: false}
	d := memorytools.AnyClaim(rules, model)
	if !d.ClaimsMemoryWriteContext(ctx, "Done! The deploy region has been recorded.") {
		t.Fatal("a claim the rules catch passed")
	}
	if n := model.withCtx.Load() + model.without.Load(); n != 0 {
		t.Fatalf("the model was asked %d times about a claim the rules already caught", n)
	}
	if d.ClaimsMemoryWriteContext(ctx, "The API runs in us-east-1.") {
		t.Fatal("neither detector claims, yet AnyClaim did")
	}
	if model.withCtx.Load() != 1 || model.sawValue.Load() != "request-7" {
		t.Fatalf("model asked with ctx %d times, saw %v; want once with the caller's context", model.withCtx.Load(), model.sawValue.Load())
	}

	yes := &ctxDetector{claim: true}
	if !memorytools.AnyClaim(rules, yes).ClaimsMemoryWrite("The API runs in us-east-1.") {
		t.Fatal("the second detector's claim was ignored")
	}
	if yes.withCtx.Load() != 1 {
		t.Fatal("ClaimsMemoryWrite did not reach the context-aware detector")
	}

	for name, d := range map[string]memorytools.ClaimDetector{
		"empty":  memorytools.AnyClaim(),
		"nil":    memorytools.AnyClaim(rules, nil),
		"panics": memorytools.AnyClaim(panickyDetector{}),
	} {
		if !d.ClaimsMemoryWrite("The API runs in us-east-1.") {
			t.Errorf("%s: AnyClaim let text through; want a claim (fail safe)", name)
		}
	}
}

// The Provider prefers a ContextClaimDetector's context form and passes it
// the caller's context; ValidateOutput without one still works.
func TestProviderPassesContextToDetector(t *testing.T) {
	b := setup(t, memoryBackend())
	model := &ctxDetector{claim: true}
	cfg := b.config(true)
	cfg.Claims = memorytools.AnyClaim(memorytools.DefaultClaimDetector(), model)
	p, err := memorytools.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ctxKey{}, "request-9")
	if err := p.ValidateOutputContext(ctx, "The API runs in us-east-1."); err != nil {
		t.Fatalf("before a failed write: %v", err)
	}
	if model.withCtx.Load() != 0 {
		t.Fatal("a detector ran before any write failed")
	}
	call(t, p, memorytools.RememberProjectMemory, `{}`)
	if err := p.ValidateOutputContext(ctx, "The API runs in us-east-1."); !errors.Is(err, memorytools.ErrNotSaved) {
		t.Fatalf("ValidateOutputContext = %v; want ErrNotSaved", err)
	}
	if model.sawValue.Load() != "request-9" {
		t.Fatalf("detector saw %v; want the caller's context", model.sawValue.Load())
	}
	if err := p.ValidateOutput("The API runs in us-east-1."); !errors.Is(err, memorytools.ErrNotSaved) {
		t.Fatalf("ValidateOutput = %v; want ErrNotSaved", err)
	}
}
