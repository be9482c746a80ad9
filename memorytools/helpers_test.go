package memorytools_test

import (
	"context"
	"encoding/json"
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
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func memoryBackend() testkit.Backend { return testkit.Backends()[0] }

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
	caller memorykit.Principal
	eng    *recall.Engine
	wr     *writer.Writer
	ctx    context.Context
}

type option func(cfg *recall.Config)

func withStore(wrap func(storekit.RecallStore) storekit.RecallStore) option {
	return func(cfg *recall.Config) { cfg.Store = wrap(cfg.Store) }
}

func setup(t *testing.T, be testkit.Backend, opts ...option) *bundle {
	t.Helper()
	clk := testkit.NewClock()
	core, logs := observer.New(zap.DebugLevel)
	b := &bundle{
		clk: clk, store: be.New(t, clk), emb: embedder.NewLocal(), az: testkit.NewAuthorizer(),
		sink: &testkit.Sink{}, logs: logs, logger: zap.New(core),
		scope:  testkit.Scope(t, "tenant-a", "project-1"),
		model:  testkit.Principal("tenant-a", memorykit.ActorModel, "model-1"),
		caller: testkit.Principal("tenant-a", memorykit.ActorUser, "user-1"),
		ctx:    context.Background(),
	}
	b.az.Grant("model-1", b.scope, memorykit.PermRead, memorykit.PermModelWrite)
	b.az.Grant("user-1", b.scope, memorykit.PermRead, memorykit.PermWrite)
	cfg := recall.Config{
		Store: b.store, Embedder: b.emb, Authorizer: b.az, Policy: testkit.Policy(),
		Clock: clk, Events: b.sink, Logger: b.logger,
	}
	for _, o := range opts {
		o(&cfg)
	}
	var err error
	if b.eng, err = recall.New(cfg); err != nil {
		t.Fatal(err)
	}
	if b.wr, err = writer.New(writer.Config{Store: b.store, Authorizer: b.az, Events: b.sink, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	return b
}

func limits() memorytools.Limits {
	return memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 400, MaxArgBytes: 4096}
}

func (b *bundle) config(intent bool) memorytools.Config {
	return memorytools.Config{
		Engine: b.eng, Records: b.store, Authorizer: b.az, Writer: b.wr,
		Principal: b.model, Caller: b.caller, Scope: b.scope, WriteIntent: intent, Limits: limits(),
		Events: b.sink, Clock: b.clk, Logger: b.logger,
	}
}

func (b *bundle) provider(t *testing.T, intent bool) *memorytools.Provider {
	t.Helper()
	p, err := memorytools.New(b.config(intent))
	if err != nil {
		t.Fatalf("memorytools.New: %v", err)
	}
	return p
}

func (b *bundle) add(t *testing.T, kind memorykit.Kind, key, content string) memorykit.Record {
	t.Helper()
	r := testkit.Create(t, b.store, b.scope, kind, key, content)
	testkit.EmbedAll(t, b.store, b.emb, r)
	return r
}

// call runs a tool and fails the test on a Go error.
func call(t *testing.T, p *memorytools.Provider, name string, args any) memorytools.Result {
	t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	res, err := p.Call(context.Background(), name, json.RawMessage(raw))
	if err != nil {
		t.Fatalf("Call(%s): %v", name, err)
	}
	return res
}

type searchResult struct {
	Note      string `json:"note"`
	Truncated bool   `json:"truncated"`
	Memories  []struct {
		ID        string `json:"id"`
		Kind      string `json:"kind"`
		Key       string `json:"key"`
		Content   string `json:"content"`
		Truncated bool   `json:"truncated"`
	} `json:"memories"`
}

func parseSearch(t *testing.T, r memorytools.Result) searchResult {
	t.Helper()
	if r.IsError {
		t.Fatalf("search failed: %s", r.Content)
	}
	var s searchResult
	if err := json.Unmarshal([]byte(r.Content), &s); err != nil {
		t.Fatalf("search result is not JSON: %v\n%s", err, r.Content)
	}
	return s
}

func (s searchResult) ids() []string {
	out := make([]string, len(s.Memories))
	for i, m := range s.Memories {
		out[i] = m.ID
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

func (b *bundle) assertNoCanary(t *testing.T, canary string) {
	t.Helper()
	b.sink.AssertNoCanary(t, canary)
	for _, e := range b.logs.All() {
		if strings.Contains(e.Message, canary) || strings.Contains(fmt.Sprint(e.ContextMap()), canary) {
			t.Errorf("log entry %q carries content: %v", e.Message, e.ContextMap())
		}
	}
}
