package projector_test

import (
	"bytes"
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
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	clk    *clock.Mock
	store  storekit.Store
	emb    memorykit.Embedder
	az     *testkit.Authorizer
	sink   *testkit.Sink
	logs   *observer.ObservedLogs
	logger *zap.Logger
	scope  memorykit.Scope
	model  memorykit.Principal
	policy memorykit.RecallPolicy
	proj   *projector.Projector
	ctx    context.Context
}

type option func(cfg *recall.Config)

func withStore(wrap func(storekit.RecallStore) storekit.RecallStore) option {
	return func(cfg *recall.Config) { cfg.Store = wrap(cfg.Store) }
}

func withPolicy(edit func(*memorykit.RecallPolicy)) option {
	return func(cfg *recall.Config) { edit(&cfg.Policy) }
}

func withEmbedder(e memorykit.Embedder) option {
	return func(cfg *recall.Config) { cfg.Embedder = e }
}

func setup(t *testing.T, be testkit.Backend, opts ...option) *bundle {
	t.Helper()
	clk := testkit.NewClock()
	core, logs := observer.New(zap.DebugLevel)
	b := &bundle{
		clk: clk, store: be.New(t, clk), emb: embedder.NewLocal(), az: testkit.NewAuthorizer(),
		sink: &testkit.Sink{}, logs: logs, logger: zap.New(core),
		scope: testkit.Scope(t, "tenant-a", "project-1"),
		model: testkit.Principal("tenant-a", memorykit.ActorModel, "model-1"),
		ctx:   context.Background(),
	}
	b.az.Grant("model-1", b.scope, memorykit.PermRead)
	b.proj = b.projector(t, opts...)
	return b
}

// projector builds a projector over the bundle's store with opts.
func (b *bundle) projector(t *testing.T, opts ...option) *projector.Projector {
	t.Helper()
	cfg := recall.Config{
		Store: b.store, Embedder: b.emb, Authorizer: b.az, Policy: testkit.Policy(),
		Clock: b.clk, Events: b.sink, Logger: b.logger,
	}
	for _, o := range opts {
		o(&cfg)
	}
	b.policy = cfg.Policy
	eng, err := recall.New(cfg)
	if err != nil {
		t.Fatalf("recall.New: %v", err)
	}
	p, err := projector.New(projector.Config{Engine: eng, Logger: b.logger, Random: bytes.NewReader(bytes.Repeat([]byte{0xab}, 1<<16))})
	if err != nil {
		t.Fatalf("projector.New: %v", err)
	}
	return p
}

func (b *bundle) add(t *testing.T, kind memorykit.Kind, key, content string) memorykit.Record {
	t.Helper()
	r := testkit.Create(t, b.store, b.scope, kind, key, content)
	testkit.EmbedAll(t, b.store, b.emb, r)
	return r
}

func (b *bundle) turn(msgs ...projector.Message) projector.Turn {
	return projector.Turn{Principal: b.model, Scope: b.scope, Messages: msgs}
}

func (b *bundle) project(t *testing.T, turn projector.Turn) projector.Projection {
	t.Helper()
	p, err := b.proj.Project(b.ctx, turn)
	if err != nil {
		t.Fatalf("Project: %v", err)
	}
	return p
}

func user(s string) projector.Message { return projector.Message{Role: projector.RoleUser, Content: s} }

func sys(s string) projector.Message {
	return projector.Message{Role: projector.RoleSystem, Content: s}
}

func assistant(s string) projector.Message {
	return projector.Message{Role: projector.RoleAssistant, Content: s}
}

// view returns the injected view's text, failing the test when none.
func view(t *testing.T, p projector.Projection) string {
	t.Helper()
	if !p.Injected || p.Index < 0 || p.Index >= len(p.Messages) {
		t.Fatalf("no view injected: %+v", p)
	}
	m := p.Messages[p.Index]
	if m.Role != projector.RoleUser || m.Name != projector.ViewName {
		t.Fatalf("view message %+v", m)
	}
	return m.Content
}

func (b *bundle) assertNoCanary(t *testing.T, canary string) {
	t.Helper()
	b.sink.AssertNoCanary(t, canary)
	for _, e := range b.logs.All() {
		if strings.Contains(e.Message, canary) || strings.Contains(fmt.Sprint(e.ContextMap()), canary) {
			t.Errorf("log entry %q carries content: %v", e.Message, e.ContextMap())
		}
	}
}

func recoverable(reason string) error {
	return &memorykit.Error{Op: "test.double", Kind: memorykit.ErrUnavailable, Reason: reason, Retry: true}
}
