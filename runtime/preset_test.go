package runtime_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/writer"
)

// essentials are a Host's own decisions around store.
func essentials(t *testing.T, b *bundle, guard *memorykit.WriteGuard, emb memorykit.Embedder) mkruntime.Essentials {
	t.Helper()
	return mkruntime.Essentials{
		Guard: guard, Store: b.store, Authorizer: b.az, Embedder: emb, Extractor: b.ext,
		Clock: b.clk, WorkerID: "host-p", Logger: zap.NewNop(), Events: b.sink,
	}
}

// TestPresetsAreValidAndExplicit: every V1 preset passes its own
// validation, Preset builds a Config New accepts, a Host can override any
// field (and a bad override is refused by name), and Preset fills in no
// essential the Host left out.
func TestPresetsAreValidAndExplicit(t *testing.T) {
	t.Parallel()
	if err := memorykit.LimitsV1().Validate(); err != nil {
		t.Fatalf("LimitsV1: %v", err)
	}
	if err := memorytools.LimitsV1().Validate(); err != nil {
		t.Fatalf("memorytools.LimitsV1: %v", err)
	}
	if err := memorykit.RecallPolicyLexicalV1().Validate(); err != nil {
		t.Fatalf("RecallPolicyLexicalV1: %v", err)
	}
	clk := testkit.NewClock()
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), testkit.Validator{Marker: testkit.RejectMarker})
	if err != nil {
		t.Fatal(err)
	}
	store, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: testkit.NewTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, b := configOn(t, clk, store)
	cfg := mkruntime.Preset(essentials(t, b, guard, embedder.NewLocalV2()))
	if cfg.Workers != mkruntime.WorkersV1() || cfg.Tools != memorytools.LimitsV1() ||
		cfg.Policy != memorykit.RecallPolicyV1(embedder.LocalV2Profile, embedder.LocalV2Dimension) {
		t.Fatalf("Preset did not use the V1 presets: %+v", cfg)
	}
	if _, err := mkruntime.New(cfg); err != nil {
		t.Fatalf("New(Preset(...)): %v", err)
	}
	// A Host overrides a field; New still validates it.
	cfg.Workers.EmbedBatch = 8
	if _, err := mkruntime.New(cfg); err != nil {
		t.Fatalf("override refused: %v", err)
	}
	cfg.Workers.EmbedBatch = 0
	if _, err := mkruntime.New(cfg); !errors.Is(err, memorykit.ErrInvalidConfig) || !strings.Contains(err.Error(), "workers.embed_batch") {
		t.Fatalf("bad override: New() = %v", err)
	}
	// Nothing is defaulted: a missing essential is refused by name.
	for name, edit := range map[string]func(*mkruntime.Essentials){
		"guard":      func(e *mkruntime.Essentials) { e.Guard = nil },
		"authorizer": func(e *mkruntime.Essentials) { e.Authorizer = nil },
		"extractor":  func(e *mkruntime.Essentials) { e.Extractor = nil },
		"stores":     func(e *mkruntime.Essentials) { e.Store = nil },
		"clock":      func(e *mkruntime.Essentials) { e.Clock = nil },
		"logger":     func(e *mkruntime.Essentials) { e.Logger = nil },
		"events":     func(e *mkruntime.Essentials) { e.Events = nil },
		"worker_id":  func(e *mkruntime.Essentials) { e.WorkerID = "" },
	} {
		e := essentials(t, b, guard, embedder.NewLocalV2())
		edit(&e)
		if _, err := mkruntime.New(mkruntime.Preset(e)); !errors.Is(err, memorykit.ErrInvalidConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("missing %s: New() = %v", name, err)
		}
	}
}

// TestLexicalRuntime: a Runtime built without an Embedder runs
// lexical-only recall on both stores, starts no embedding worker, and
// still finds what a user wrote; an Embedder-less Config with a vector
// policy is refused.
func TestLexicalRuntime(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		clk := testkit.NewClock()
		cfg, b := configOn(t, clk, be.New(t, clk))
		lex := mkruntime.Preset(essentials(t, b, cfg.Guard, nil))
		if !lex.Policy.LexicalOnly() {
			t.Fatalf("Preset without an embedder: policy %+v", lex.Policy)
		}
		bad := lex
		bad.Policy = cfg.Policy
		if _, err := mkruntime.New(bad); !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Fatalf("vector policy without embedder: New() = %v", err)
		}
		start(t, lex, b)
		ctx := context.Background()
		if err := b.rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for _, a := range b.rt.Health().Actors {
			if strings.HasPrefix(a.Name, "embed") {
				t.Fatalf("lexical runtime started %s", a.Name)
			}
		}
		if n := len(b.rt.Health().Actors); n != 2 {
			t.Fatalf("actors = %d, want 2 (extract, reaper)", n)
		}
		s, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1."}); err != nil {
			t.Fatal(err)
		}
		p, err := s.Project(ctx, []projector.Message{{Role: projector.RoleUser, Content: "Which region runs the API?"}})
		if err != nil || !p.Injected || p.Degraded {
			t.Fatalf("Project = %+v, %v; want memory injected, not degraded", p, err)
		}
		if err := b.rt.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConfigHasNoHookFields: test seams are not production API; the only
// way to set them is runtimetest.WithHooks.
func TestConfigHasNoHookFields(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeOf(mkruntime.Config{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Func || f.Type.Kind() == reflect.Struct && strings.Contains(f.Type.Name(), "Hooks") {
			t.Errorf("Config.%s is a hook in the public API", f.Name)
		}
		if f.Type.Kind() == reflect.Struct {
			for j := 0; j < f.Type.NumField(); j++ {
				// Outbox.OnDrain is the Host's production callback for the
				// turns left at Drain, not a test seam.
				if f.Type.Field(j).Type.Kind() == reflect.Func && !(f.Name == "Outbox" && f.Type.Field(j).Name == "OnDrain") {
					t.Errorf("Config.%s.%s is a hook in the public API", f.Name, f.Type.Field(j).Name)
				}
			}
		}
	}
}
