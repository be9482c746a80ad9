package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/reviewer"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/supervisor"
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

// newRuntime wires a Runtime on the embedded default (memorystore and the
// local embedder) with explicit limits, policy and worker schedule.
func newRuntime(clk clock.Clock, extractor memorykit.Extractor) (*mkruntime.Runtime, *memorystore.Store) {
	limits := memorykit.Limits{
		Version: 1, MaxKeyBytes: 128, MaxContentBytes: 4096, MaxMetadataEntries: 8,
		MaxMetadataBytes: 1024, MaxSources: 8, MaxSourceBytes: 512, MaxListSize: 100,
		MaxJobPayloadBytes: 64 << 10, MaxReasonBytes: 1024,
	}
	guard, err := memorykit.NewWriteGuard(limits, noSecrets{})
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
	backoff := memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}
	rt, err := mkruntime.New(mkruntime.Config{
		Guard: guard,
		Policy: memorykit.RecallPolicy{
			Version: 1, ExactLimit: 5, FullTextLimit: 20, VectorLimit: 20, RRFK: 60,
			ExactWeight: 1, FullTextWeight: 1, VectorWeight: 1, MinVectorSimilarity: 0.1, MaxItems: 6, MaxTokens: 1000,
			MaxEntryRunes: 500, MaxQueryRunes: 2000, MaxQueryTerms: 48, Deadline: 300 * time.Millisecond,
			EmbeddingProfile: "memorykit/hash-v1", EmbeddingDimension: 384,
		},
		Embedder: embedder.NewLocal(),
		Authorizer: membership{
			"acme/apollo/alice":   {memorykit.PermRead, memorykit.PermWrite, memorykit.PermExtract, memorykit.PermReview},
			"acme/apollo/agent-1": {memorykit.PermRead, memorykit.PermModelWrite},
		},
		Extractor: extractor,
		Stores:    mkruntime.StoresOf(store),
		Clock:     clk,
		WorkerID:  "host-1",
		Logger:    zap.NewNop(),
		Events:    memorykit.DiscardEvents{},
		Workers: mkruntime.Workers{
			LeaseTTL: time.Minute, EmbedBatch: 32, EmbedPoll: time.Second, EmbedDeadline: 10 * time.Second,
			EmbedRetry: backoff, ExtractBatch: 4, ExtractPoll: time.Second, JobDeadline: 30 * time.Second,
			JobRetry: backoff, JobMaxAttempts: 5, JobMaxReaps: 10, ReapInterval: 10 * time.Second, StoreBackoff: backoff,
			HandBackTimeout: 5 * time.Second,
			Restart:         supervisor.BackoffPolicy{Initial: time.Second, Max: time.Minute, Multiplier: 2, MaxRestarts: 10},
		},
		Tools:  memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 500, MaxArgBytes: 8192},
		Outbox: mkruntime.Outbox{MaxTurns: 1000, MaxBytes: 8 << 20, Retry: backoff},
		Mode:   mkruntime.ModeAll,
	})
	if err != nil {
		panic(err)
	}
	return rt, store
}

// Example wires a Runtime on the embedded default, runs one turn, and shuts
// down in the right order.
func Example() {
	ctx := context.Background()
	rt, _ := newRuntime(clock.New(), silentExtractor{})
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}

	// One request: the Host built the principal and Scope from trusted data.
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	alice := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}
	s, err := rt.Session(ctx, mkruntime.Request{Caller: alice, Scope: scope, ModelID: "agent-1", WriteIntent: true})
	if err != nil {
		panic(err)
	}
	if _, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "deploy region", Content: "The API runs in eu-west-1."}); err != nil {
		panic(err)
	}
	p, err := s.Project(ctx, []projector.Message{{Role: projector.RoleUser, Content: "Where do we deploy the API?"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("memory injected:", p.Injected, "messages:", len(p.Messages))
	fmt.Println("tools:", len(s.Tools()))

	// Shutdown: the Host stops its own intake first, then Drain, Stop, and
	// finally closes the stores (pgstore: store.Close()).
	drainCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rt.Drain(drainCtx); err != nil {
		fmt.Println("drain:", err)
	}
	_, err = rt.Session(ctx, mkruntime.Request{Caller: alice, Scope: scope, ModelID: "agent-1"})
	fmt.Println("after drain:", errors.Is(err, memorykit.ErrDraining))
	if err := rt.Stop(ctx); err != nil {
		fmt.Println("stop:", err)
	}
	// Output:
	// memory injected: true messages: 2
	// tools: 3
	// after drain: true
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

	// 3. A reviewer activates the candidate; it supersedes alice's record.
	cands, err := rt.Reviewer().ListCandidates(ctx, alice, scope, reviewer.Page{Limit: 10})
	if err != nil {
		panic(err)
	}
	rec, err := rt.Reviewer().Activate(ctx, alice, scope, reviewer.Decision{ID: cands[0].ID, Reason: "confirmed"})
	if err != nil {
		panic(err)
	}
	fmt.Println("candidates:", len(cands), "activated:", rec.Status, rec.Content)
	// Output:
	// system/ user/memorykit_memory user/
	// tool error: false
	// candidates: 1 activated: active The API runs in us-east-1.
}
