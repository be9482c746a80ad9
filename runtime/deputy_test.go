package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/writer"
)

// Hole 4 of issue 10: through the library API, a caller with no grants on
// the project got search results and an active write through the model,
// because only the model's grants were checked. The caller must be
// authorized on every path, beside the model.
func TestConfusedDeputyCallerMustBeAuthorized(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		clk := testkit.NewClock()
		cfg, b := configOn(t, clk, be.Open(t, clk))
		b = start(t, cfg, b)
		ctx := context.Background()
		if err := b.rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		seed, err := b.rt.Session(ctx, mkruntime.Request{Caller: b.alice, Scope: b.scope, ModelID: "agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := seed.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1"})
		if err != nil {
			t.Fatal(err)
		}
		b.az.Grant("reader", b.scope, memorykit.PermRead)
		b.az.Grant("author", b.scope, memorykit.PermRead, memorykit.PermWrite)
		// "outsider" has no grant; the model agent-1 keeps read and
		// model_write throughout, so only the caller's rights differ.

		for _, c := range []struct {
			name        string
			caller      memorykit.Principal
			read, write bool
		}{
			{"no grants", testkit.Principal("acme", memorykit.ActorUser, "outsider"), false, false},
			{"model as its own caller", testkit.Principal("acme", memorykit.ActorModel, "agent-1"), false, false},
			{"other tenant", testkit.Principal("globex", memorykit.ActorUser, "alice"), false, false},
			{"read only", testkit.Principal("acme", memorykit.ActorUser, "reader"), true, false},
			{"read and write", testkit.Principal("acme", memorykit.ActorUser, "author"), true, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				s, err := b.rt.Session(ctx, mkruntime.Request{Caller: c.caller, Scope: b.scope, ModelID: "agent-1", WriteIntent: true})
				if !c.read {
					if !errors.Is(err, memorykit.ErrForbidden) || s != nil {
						t.Fatalf("Session for a caller without read = %v, %v; want ErrForbidden", s, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Session: %v", err)
				}
				p, err := s.Project(ctx, []projector.Message{{Role: projector.RoleUser, Content: "Which deploy region do we use?"}})
				if err != nil || !p.Injected {
					t.Fatalf("Project = injected %v, %v", p.Injected, err)
				}
				res, err := s.CallTool(ctx, memorytools.SearchMemory, []byte(`{"query":"deploy region"}`))
				if err != nil || !strings.Contains(res.Content, rec.Record.ID) {
					t.Fatalf("search_memory = %+v, %v", res, err)
				}
				res, err = s.CallTool(ctx, memorytools.ReadMemory, []byte(`{"id":"`+rec.Record.ID+`"}`))
				if err != nil || res.IsError {
					t.Fatalf("read_memory = %+v, %v", res, err)
				}

				key := "deputy " + c.caller.Actor.ID
				res, err = s.CallTool(ctx, memorytools.RememberProjectMemory,
					[]byte(`{"kind":"note","key":"`+key+`","content":"written through the model"}`))
				_, findErr := b.store.FindActive(ctx, b.scope, memorykit.KindNote, key)
				if c.write {
					if err != nil || res.IsError || findErr != nil || s.WriteFailed() {
						t.Fatalf("remember with write = %+v, %v (find %v)", res, err, findErr)
					}
					return
				}
				if !errors.Is(err, memorykit.ErrForbidden) {
					t.Fatalf("remember without the caller's write = %+v, %v; want ErrForbidden", res, err)
				}
				if !errors.Is(findErr, memorykit.ErrNotFound) {
					t.Fatalf("a write happened without the caller's write: %v", findErr)
				}
				if !s.WriteFailed() {
					t.Fatal("a refused write must set the failure flag")
				}
				if err := s.ValidateOutput("Saved it to project memory."); !errors.Is(err, memorytools.ErrNotSaved) {
					t.Fatalf("claim after refused write = %v", err)
				}
			})
		}

		// Grants are checked on every call, not only when the Session
		// opens: the caller's revoked read stops projection and search.
		b.az.Grant("leaver", b.scope, memorykit.PermRead)
		s, err := b.rt.Session(ctx, mkruntime.Request{Caller: testkit.Principal("acme", memorykit.ActorUser, "leaver"), Scope: b.scope, ModelID: "agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		b.az.Revoke()
		b.az.Grant("agent-1", b.scope, memorykit.PermRead, memorykit.PermModelWrite)
		if _, err := s.Project(ctx, []projector.Message{{Role: projector.RoleUser, Content: "deploy region?"}}); !errors.Is(err, memorykit.ErrForbidden) {
			t.Fatalf("Project after revoke = %v", err)
		}
		if _, err := s.CallTool(ctx, memorytools.SearchMemory, []byte(`{"query":"deploy region"}`)); !errors.Is(err, memorykit.ErrForbidden) {
			t.Fatalf("search_memory after revoke = %v", err)
		}
		if _, err := s.CallTool(ctx, memorytools.ReadMemory, []byte(`{"id":"`+rec.Record.ID+`"}`)); !errors.Is(err, memorykit.ErrForbidden) {
			t.Fatalf("read_memory after revoke = %v", err)
		}
	})
}
