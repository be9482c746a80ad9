package recall_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// queryLog records the queries a RecallStore receives.
type queryLog struct {
	storekit.RecallStore
	mu sync.Mutex
	qs []storekit.RecallQuery
}

func (l *queryLog) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	l.mu.Lock()
	l.qs = append(l.qs, q)
	l.mu.Unlock()
	return l.RecallStore.Recall(ctx, q)
}

// TestRecallLexicalOnlyPolicy runs recall with RecallPolicyLexicalV1 and no
// Embedder on both stores: records are found by key and words, the store
// is never asked for vectors, and the vector channel is reported skipped,
// not degraded.
func TestRecallLexicalOnlyPolicy(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		log := &queryLog{}
		b := setup(t, be,
			withEmbedder(nil),
			withPolicy(func(p *memorykit.RecallPolicy) { *p = memorykit.RecallPolicyLexicalV1() }),
			withStore(func(s storekit.RecallStore) storekit.RecallStore { log.RecallStore = s; return log }),
		)
		// Records carry no embedding at all: lexical recall needs none.
		region := testkit.Create(t, b.store, b.scope, memorykit.KindFact, "deploy region", "The API runs in eu-west-1.")
		testkit.Create(t, b.store, b.scope, memorykit.KindNote, "lunch", "Tacos on Fridays.")

		res := b.recall(t, b.req("which region do we deploy the API to?"))
		if ids := entryIDs(res); len(ids) != 1 || ids[0] != region.ID {
			t.Fatalf("entries = %v, want only %s", ids, region.ID)
		}
		if res.Degraded {
			t.Fatalf("lexical recall reported degraded: %+v", res)
		}
		for _, ch := range res.Trace.Channels {
			if ch.Channel == memorykit.ChannelVector && (!ch.Skipped || ch.Degraded || ch.Hits != 0) {
				t.Fatalf("vector channel trace = %+v, want skipped", ch)
			}
		}
		if len(log.qs) != 1 || log.qs[0].Vector != nil || log.qs[0].Profile != "" {
			t.Fatalf("store queries = %+v, want one without a vector", log.qs)
		}
		for _, e := range b.sink.Events() {
			if e.Kind == memorykit.EventRecallDegraded {
				t.Fatalf("degraded event from lexical recall: %+v", e)
			}
		}
	})
}

// TestLexicalPolicyEmbedderRules: a lexical policy takes no Embedder, a
// vector policy needs one, and a half-switched vector channel is refused.
func TestLexicalPolicyEmbedderRules(t *testing.T) {
	lex := memorykit.RecallPolicyLexicalV1()
	if err := recall.CheckEmbedder("t", lex, nil); err != nil {
		t.Fatalf("lexical policy without embedder refused: %v", err)
	}
	if err := recall.CheckEmbedder("t", lex, embedder.NewLocal()); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Fatalf("lexical policy with an embedder: %v", err)
	}
	vec := memorykit.RecallPolicyV1(embedder.LocalProfile, embedder.LocalDimension)
	if err := recall.CheckEmbedder("t", vec, nil); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Fatalf("vector policy without embedder: %v", err)
	}
	if err := recall.CheckEmbedder("t", vec, embedder.NewLocal()); err != nil {
		t.Fatalf("matching embedder refused: %v", err)
	}
}
