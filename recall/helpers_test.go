package recall_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bundle is one test's engine with everything around it.
type bundle struct {
	clk    *clock.Mock
	store  storekit.Store
	emb    memorykit.Embedder
	az     *testkit.Authorizer
	sink   *testkit.Sink
	logs   *observer.ObservedLogs
	scope  memorykit.Scope
	reader memorykit.Principal
	policy memorykit.RecallPolicy
	eng    *recall.Engine
	ctx    context.Context
}

// option adjusts an engine's Config before New.
type option func(b *bundle, cfg *recall.Config)

func withStore(wrap func(storekit.RecallStore) storekit.RecallStore) option {
	return func(_ *bundle, cfg *recall.Config) { cfg.Store = wrap(cfg.Store) }
}

func withEmbedder(e memorykit.Embedder) option {
	return func(_ *bundle, cfg *recall.Config) { cfg.Embedder = e }
}

func withPolicy(edit func(*memorykit.RecallPolicy)) option {
	return func(_ *bundle, cfg *recall.Config) { edit(&cfg.Policy) }
}

func setup(t *testing.T, be testkit.Backend, opts ...option) *bundle {
	t.Helper()
	clk := testkit.NewClock()
	core, logs := observer.New(zap.DebugLevel)
	b := &bundle{
		clk:    clk,
		store:  be.New(t, clk),
		emb:    embedder.NewLocal(),
		az:     testkit.NewAuthorizer(),
		sink:   &testkit.Sink{},
		logs:   logs,
		scope:  testkit.Scope(t, "tenant-a", "project-1"),
		reader: testkit.Principal("tenant-a", memorykit.ActorModel, "model-1"),
		ctx:    context.Background(),
	}
	b.az.Grant("model-1", b.scope, memorykit.PermRead)
	cfg := recall.Config{
		Store: b.store, Embedder: b.emb, Authorizer: b.az, Policy: testkit.Policy(),
		Clock: clk, Events: b.sink, Logger: zap.New(core),
	}
	for _, o := range opts {
		o(b, &cfg)
	}
	b.policy = cfg.Policy
	eng, err := recall.New(cfg)
	if err != nil {
		t.Fatalf("recall.New: %v", err)
	}
	b.eng = eng
	return b
}

// add stores an active record in the bundle's scope with a current
// embedding.
func (b *bundle) add(t *testing.T, kind memorykit.Kind, key, content string) memorykit.Record {
	t.Helper()
	r := testkit.Create(t, b.store, b.scope, kind, key, content)
	testkit.EmbedAll(t, b.store, b.emb, r)
	return r
}

func (b *bundle) req(query string) recall.Request {
	return recall.Request{Principal: b.reader, Scope: b.scope, Query: query}
}

func (b *bundle) recall(t *testing.T, r recall.Request) recall.Result {
	t.Helper()
	res, err := b.eng.Recall(b.ctx, r)
	if err != nil {
		t.Fatalf("Recall: %v", err)
	}
	return res
}

func entryIDs(res recall.Result) []string {
	out := make([]string, len(res.Entries))
	for i, e := range res.Entries {
		out[i] = e.ID
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// assertNoCanary fails when any event, log entry or the given strings
// mention canary.
func (b *bundle) assertNoCanary(t *testing.T, canary string, extra ...string) {
	t.Helper()
	b.sink.AssertNoCanary(t, canary)
	for _, e := range b.logs.All() {
		if strings.Contains(e.Message, canary) || strings.Contains(fmt.Sprint(e.ContextMap()), canary) {
			t.Errorf("log entry %q carries content: %v", e.Message, e.ContextMap())
		}
	}
	for _, s := range extra {
		if strings.Contains(s, canary) {
			t.Errorf("%q carries content", s)
		}
	}
}

// recoverable is a typed recoverable failure.
func recoverable(reason string) error {
	return &memorykit.Error{Op: "test.double", Kind: memorykit.ErrUnavailable, Reason: reason, Retry: true}
}
