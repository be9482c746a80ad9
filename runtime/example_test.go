package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// membership is a Host authorizer: an actor may act on the projects it is
// a member of, with the permissions listed for it. Everything else is denied.
type membership map[string][]memorykit.Permission // "tenant/project/actor" -> perms

func (m membership) Authorize(_ context.Context, p memorykit.Principal, perm memorykit.Permission, s memorykit.Scope) error {
	for _, granted := range m[s.TenantID+"/"+s.SubjectID+"/"+p.Actor.ID] {
		if granted == perm {
			return nil
		}
	}
	return errors.New("not a member")
}

// noSecrets is a Host content policy.
type noSecrets struct{}

func (noSecrets) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if len(c.Content) > 0 && c.Content[0] == '!' {
		return errors.New("looks like a command")
	}
	return nil
}

// silentExtractor proposes nothing; a real Host calls its model here.
type silentExtractor struct{}

func (silentExtractor) Extract(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	return nil, nil
}

// alicesTeam grants alice (a user) and agent-1 (the model) their rights on
// acme/apollo.
var alicesTeam = membership{
	"acme/apollo/alice":   {memorykit.PermRead, memorykit.PermWrite, memorykit.PermExtract, memorykit.PermReview},
	"acme/apollo/agent-1": {memorykit.PermRead, memorykit.PermModelWrite},
}

// newRuntime wires a Runtime on the embedded default (memorystore and the
// local embedder) from the version 1 presets and the Host's own parts.
func newRuntime(clk clock.Clock, extractor memorykit.Extractor) (*mkruntime.Runtime, *memorystore.Store) {
	guard, err := memorykit.NewWriteGuard(memorykit.LimitsV1(), noSecrets{})
	if err != nil {
		panic(err)
	}
	tombstones, terr := memorykit.NewTombstoneKeyer([]byte("example tombstone secret: load yours from a secret store"))
	if terr != nil {
		panic(terr)
	}
	store, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: tombstones})
	if err != nil {
		panic(err)
	}
	rt, err := mkruntime.New(mkruntime.Preset(mkruntime.Essentials{
		Guard: guard, Store: store, Authorizer: alicesTeam, Embedder: embedder.NewLocal(),
		Extractor: extractor, Clock: clk, WorkerID: "host-1", Logger: zap.NewNop(), Events: memorykit.DiscardEvents{},
	}))
	if err != nil {
		panic(err)
	}
	return rt, store
}

// Example is a complete Host: a store, a Runtime from the presets, one
// request's Session (projection, a tool call, output validation, the
// extraction hand-off), then Drain and Stop. Only the authorizer, the
// content policy, the extractor and the embedder are the Host's own.
// README.md shows its body verbatim (TestDocCodeBlocksAreRunExamples).
func Example() {
	ctx, clk := context.Background(), clock.New()
	guard, _ := memorykit.NewWriteGuard(memorykit.LimitsV1(), noSecrets{})
	keyer, _ := memorykit.NewTombstoneKeyer([]byte("the Host's tombstone secret, from its secret store"))
	store, _ := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: keyer})
	rt, err := mkruntime.New(mkruntime.Preset(mkruntime.Essentials{
		Guard: guard, Store: store, Authorizer: alicesTeam, Embedder: embedder.NewLocalV2(),
		Extractor: silentExtractor{}, Clock: clk, WorkerID: "host-1", Logger: zap.NewNop(), Events: memorykit.DiscardEvents{},
	}))
	if err != nil || rt.Start(ctx) != nil {
		panic(err)
	}
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	alice := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}
	s, _ := rt.Session(ctx, mkruntime.Request{Caller: alice, Scope: scope, ModelID: "agent-1", WriteIntent: true})
	_, _ = s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1."})
	p, _ := s.Project(ctx, []projector.Message{{Role: projector.RoleUser, Content: "Where do we deploy the API?"}})
	res, _ := s.CallTool(ctx, memorytools.SearchMemory, []byte(`{"query":"deploy region"}`))
	fmt.Println("injected:", p.Injected, "tool error:", res.IsError, "output ok:", s.ValidateOutput("It runs in eu-west-1.") == nil)
	fmt.Println("extraction:", s.FinishTurn(ctx, mkruntime.Turn{RunRef: "run-1", Transcript: "user: where do we deploy?\nassistant: eu-west-1"}).Status)
	fmt.Println("drain:", rt.Drain(ctx), "stop:", rt.Stop(ctx))
	// Output:
	// injected: true tool error: false output ok: true
	// extraction: queued
	// drain: <nil> stop: <nil>
}

// Example_turn is one agent turn: the projector inserts memory before the
// user message, the model calls remember_project_memory for a key a user
// already wrote (so its write waits as a candidate), and a reviewer
// activates the candidate.
func Example_turn() {
	ctx := context.Background()
	rt, _ := newRuntime(clock.New(), silentExtractor{})
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	defer func() { _ = rt.Stop(ctx) }()

	scope, _ := memorykit.ProjectScope("acme", "apollo")
	alice := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}
	s, err := rt.Session(ctx, mkruntime.Request{Caller: alice, Scope: scope, ModelID: "agent-1", WriteIntent: true})
	if err != nil {
		panic(err)
	}
	if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1."}); err != nil {
		panic(err)
	}

	// 1. Before the model call: memory goes right before the user message.
	p, err := s.Project(ctx, []projector.Message{
		{Role: projector.RoleSystem, Content: "You are the team's assistant."},
		{Role: projector.RoleUser, Content: "The API moved. Which region is it in now?"},
	})
	if err != nil {
		panic(err)
	}
	var roles []string
	for _, m := range p.Messages {
		roles = append(roles, string(m.Role)+"/"+m.Name)
	}
	fmt.Println(strings.Join(roles, " "))

	// 2. The model asks to remember the new region. Alice wrote the key, so
	// the model's write becomes a candidate and her record stays active.
	res, err := s.CallTool(ctx, memorytools.RememberProjectMemory,
		[]byte(`{"kind":"fact","key":"deploy region","content":"The API runs in us-east-1."}`))
	if err != nil {
		panic(err)
	}
	fmt.Println("tool error:", res.IsError)
	if err := s.ValidateOutput("I noted the new region for review."); err != nil {
		panic(err)
	}

	// 3. A reviewer sees which record the candidate would supersede, then
	// activates it; it supersedes alice's record.
	cands, err := rt.Reviewer().ListCandidates(ctx, alice, scope, reviewer.Page{Limit: 10})
	if err != nil {
		panic(err)
	}
	if sup := cands[0].Supersedes; sup != nil {
		fmt.Println("would supersede:", sup.Content)
	}
	rec, err := rt.Reviewer().Activate(ctx, alice, scope, reviewer.Decision{ID: cands[0].Record.ID, Reason: "confirmed"})
	if err != nil {
		panic(err)
	}
	fmt.Println("candidates:", len(cands), "activated:", rec.Status, rec.Content)
	// Output:
	// system/ user/memorykit_memory user/
	// tool error: false
	// would supersede: The API runs in eu-west-1.
	// candidates: 1 activated: active The API runs in us-east-1.
}
