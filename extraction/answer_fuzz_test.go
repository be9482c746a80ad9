package extraction_test

import (
	"context"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/internal/testsupport/extracttest"
	"github.com/goagents/memorykit/storekit"
)

// FuzzEngineAnswer: whatever a model answers, the engine either returns a
// recoverable error or at most MaxProposals proposals, each of a known
// kind with a canonical non-empty key and non-empty content that the
// guard accepts. Seeds are in testdata/fuzz/FuzzEngineAnswer.
func FuzzEngineAnswer(f *testing.F) {
	f.Add([]byte(extracttest.Answer(extracttest.Memory{Kind: "fact", Key: "k", Content: "c"})))
	f.Add([]byte(`{"memories":[{"kind":"fact","key":"a","content":"b","sources":["user"],"tenant":"x"}]}`))
	f.Fuzz(func(t *testing.T, answer []byte) {
		b := setup(t)
		b.answer(answer)
		ps, err := b.engine.Extract(context.Background(), b.in)
		if err != nil {
			if !memorykit.IsRecoverable(err) {
				t.Fatalf("final error %v for a model answer", err)
			}
			return
		}
		if len(ps) > extraction.LimitsV1().MaxProposals {
			t.Fatalf("%d proposals", len(ps))
		}
		g := b.guardForTest(t)
		for _, p := range ps {
			if !p.Kind.Valid() || p.Key == "" || p.Key != storekit.NormalizeKey(p.Key) || p.Content == "" {
				t.Fatalf("bad proposal %+v", p)
			}
			if _, err := g.CheckNew(context.Background(), "fuzz", memorykit.NewRecord{
				Scope: b.in.Scope, Kind: p.Kind, Key: p.Key, Content: p.Content, Sources: p.Sources,
				Status: memorykit.StatusCandidate, Actor: memorykit.Actor{Kind: memorykit.ActorWorker, ID: "w"},
			}); err != nil {
				t.Fatalf("guard refuses a returned proposal: %v", err)
			}
		}
	})
}
