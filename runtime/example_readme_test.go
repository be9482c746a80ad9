package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/reviewer"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/writer"
)

// newHostRuntime is the host guide's composition: the Host's own parts, the
// rest from the presets. docs/host-guide.md shows its body verbatim.
func newHostRuntime(clk clock.Clock, hostContentPolicy memorykit.ContentValidator, hostTombstoneSecret []byte,
	hostAuthorizer memorykit.Authorizer, hostExtractor memorykit.Extractor, log *zap.Logger, sink memorykit.EventSink) (*mkruntime.Runtime, error) {
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), hostContentPolicy)
	if err != nil {
		return nil, err
	}
	keyer, err := memorykit.NewTombstoneKeyer(hostTombstoneSecret) // from the Host's secret store
	if err != nil {
		return nil, err
	}
	store, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: keyer}) // or pgstore.Open
	if err != nil {
		return nil, err
	}
	cfg := mkruntime.Preset(mkruntime.Essentials{
		Guard: guard, Store: store, Authorizer: hostAuthorizer, Embedder: embedder.NewLocalV2(),
		Extractor: hostExtractor, Clock: clk, WorkerID: "host-1", Logger: log, Events: sink,
	})
	cfg.Workers.EmbedBatch = 16 // any field may still be overridden
	return mkruntime.New(cfg)
}

// handleTurn is the host guide's request: one turn's Session and the calls a
// Host makes around its model. docs/host-guide.md shows its body verbatim.
func handleTurn(ctx context.Context, rt *mkruntime.Runtime, caller memorykit.Principal, scope memorykit.Scope, trusted bool,
	messages []projector.Message, name string, argsJSON json.RawMessage, finalText, transcript string) error {
	s, err := rt.Session(ctx, mkruntime.Request{Caller: caller, Scope: scope, ModelID: "agent-1", WriteIntent: trusted})
	if err != nil {
		return err // ErrForbidden when the caller may not read the Scope
	}
	p, err := s.Project(ctx, messages) // messages with a bounded memory view before the user turn
	if err != nil {
		return err
	}
	tools := s.Tools()                          // search_memory, read_memory (+ remember_project_memory)
	res, err := s.CallTool(ctx, name, argsJSON) // for each tool call the model makes
	if err != nil {
		return err
	}
	if err := s.ValidateOutput(finalText); err != nil { // before persisting the model's answer
		return err
	}
	s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-42/turn-3", Transcript: transcript}) // to extraction; never fails the turn
	fmt.Println("injected:", p.Injected, "tools:", len(tools), "tool error:", res.IsError)
	return nil
}

// readmeTurn is the host guide's whole turn, shown verbatim: the projector
// inserts memory, the model writes a key alice wrote, and a reviewer
// activates the resulting candidate.
func readmeTurn(ctx context.Context, rt *mkruntime.Runtime, alice memorykit.Principal, scope memorykit.Scope) {
	s, _ := rt.Session(ctx, mkruntime.Request{Caller: alice, Scope: scope, ModelID: "agent-1", WriteIntent: true})
	s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1."})

	p, _ := s.Project(ctx, []projector.Message{
		{Role: projector.RoleSystem, Content: "You are the team's assistant."},
		{Role: projector.RoleUser, Content: "The API moved. Which region is it in now?"},
	})
	// p.Messages: system, user/memorykit_memory (the bounded, delimited memory view), user

	res, _ := s.CallTool(ctx, memorytools.RememberProjectMemory,
		[]byte(`{"kind":"fact","key":"deploy region","content":"The API runs in us-east-1."}`))
	// res.IsError == false: stored as a candidate, alice's record stays active

	cands, _ := rt.Reviewer().ListCandidates(ctx, alice, scope, reviewer.Page{Limit: 10})
	// cands[0].Supersedes: alice's active record, the one activation replaces
	rec, _ := rt.Reviewer().Activate(ctx, alice, scope, reviewer.Decision{ID: cands[0].Record.ID, Reason: "confirmed"})
	// rec.Status == active; alice's record is now superseded
	fmt.Println("messages:", len(p.Messages), "tool error:", res.IsError, "activated:", rec.Status)
}

// Example_readme runs the host guide's composition, request and turn.
func Example_readme() {
	ctx, clk := context.Background(), clock.New()
	rt, err := newHostRuntime(clk, noSecrets{}, []byte("the Host's tombstone secret, from its secret store"),
		alicesTeam, silentExtractor{}, zap.NewNop(), memorykit.DiscardEvents{})
	if err != nil || rt.Start(ctx) != nil {
		panic(err)
	}
	defer func() { _ = rt.Stop(ctx) }()
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	alice := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}
	readmeTurn(ctx, rt, alice, scope)
	err = handleTurn(ctx, rt, alice, scope, true,
		[]projector.Message{{Role: projector.RoleUser, Content: "Where do we deploy the API?"}},
		memorytools.SearchMemory, json.RawMessage(`{"query":"deploy region"}`), "It runs in us-east-1.", "user: where?\nassistant: us-east-1")
	fmt.Println("request:", err)
	outsider := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "mallory"}}
	err = handleTurn(ctx, rt, outsider, scope, false, nil, memorytools.SearchMemory, nil, "", "")
	fmt.Println("outsider forbidden:", err != nil && errors.Is(err, memorykit.ErrForbidden))
	// Output:
	// messages: 3 tool error: false activated: active
	// injected: true tools: 3 tool error: false
	// request: <nil>
	// outsider forbidden: true
}
