package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goagents/memorykit/memorytools"
	mkruntime "github.com/goagents/memorykit/runtime"
)

type alwaysClaims struct{}

func (alwaysClaims) ClaimsMemoryWrite(string) bool { return true }

type ctxKey struct{}

// ctxClaims claims only when the context carries its key: it proves the
// Session handed the caller's context on.
type ctxClaims struct{}

func (ctxClaims) ClaimsMemoryWrite(string) bool { return false }

func (ctxClaims) ClaimsMemoryWriteContext(ctx context.Context, _ string) bool {
	return ctx.Value(ctxKey{}) != nil
}

// The Host's ClaimDetector in Config reaches every Session's validator;
// without one the built-in applies.
func TestSessionUsesTheHostClaimDetector(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		claims memorytools.ClaimDetector
		want   error
	}{
		{"built-in", nil, nil},
		{"host", alwaysClaims{}, memorytools.ErrNotSaved},
		{"host with context", ctxClaims{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, b := config(t)
			cfg.Claims = c.claims
			b = start(t, cfg, b)
			if err := b.rt.Start(ctx); err != nil {
				t.Fatal(err)
			}
			s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1", WriteIntent: true})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := s.CallTool(ctx, memorytools.RememberProjectMemory, []byte(`{}`)); err != nil || !res.IsError {
				t.Fatalf("bad write = %+v, %v", res, err)
			}
			if err := s.ValidateOutput("The weather is fine."); !errors.Is(err, c.want) {
				t.Fatalf("ValidateOutput = %v; want %v", err, c.want)
			}
			if err := s.ValidateOutput("Memory updated ✅"); c.name != "host with context" && !errors.Is(err, memorytools.ErrNotSaved) {
				t.Fatalf("a claim passed: %v", err)
			}
			withKey := context.WithValue(ctx, ctxKey{}, true)
			if err := s.ValidateOutputContext(withKey, "The weather is fine."); c.name == "host with context" && !errors.Is(err, memorytools.ErrNotSaved) {
				t.Fatalf("ValidateOutputContext = %v; the detector did not get the caller's context", err)
			}
		})
	}
}
