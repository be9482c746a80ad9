package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
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

// Example wires a Runtime on the embedded default (memorystore and the local
// embedder), runs one turn, and shuts down in the right order.
func Example() {
	ctx := context.Background()
	clk := clock.New()
	limits := memorykit.Limits{
		Version: 1, MaxKeyBytes: 128, MaxContentBytes: 4096, MaxMetadataEntries: 8,
		MaxMetadataBytes: 1024, MaxSources: 8, MaxSourceBytes: 512, MaxListSize: 100,
		MaxJobPayloadBytes: 64 << 10,
	}
	guard, err := memorykit.NewWriteGuard(limits, noSecrets{})
	if err != nil {
		panic(err)
	}
	store, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard})
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
			"acme/apollo/alice":   {memorykit.PermRead, memorykit.PermWrite, memorykit.PermExtract},
			"acme/apollo/agent-1": {memorykit.PermRead, memorykit.PermModelWrite},
		},
		Extractor: silentExtractor{},
		Stores:    mkruntime.StoresOf(store),
		Clock:     clk,
		WorkerID:  "host-1",
		Logger:    zap.NewNop(),
		Events:    memorykit.DiscardEvents{},
		Workers: mkruntime.Workers{
			LeaseTTL: time.Minute, EmbedBatch: 32, EmbedPoll: time.Second, EmbedDeadline: 10 * time.Second,
			EmbedRetry: backoff, ExtractBatch: 4, ExtractPoll: time.Second, JobDeadline: 30 * time.Second,
			JobRetry: backoff, JobMaxAttempts: 5, ReapInterval: 10 * time.Second, StoreBackoff: backoff,
			HandBackTimeout: 5 * time.Second,
			Restart:         supervisor.BackoffPolicy{Initial: time.Second, Max: time.Minute, Multiplier: 2, MaxRestarts: 10},
		},
		Tools: memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 500, MaxArgBytes: 8192},
	})
	if err != nil {
		panic(err)
	}
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}

	// One request: the Host built the principal and Scope from trusted data.
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	alice := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}
	s, err := rt.Session(mkruntime.Request{Principal: alice, Scope: scope, ModelID: "agent-1", WriteIntent: true})
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
	_, err = rt.Session(mkruntime.Request{Principal: alice, Scope: scope, ModelID: "agent-1"})
	fmt.Println("after drain:", errors.Is(err, memorykit.ErrDraining))
	if err := rt.Stop(ctx); err != nil {
		fmt.Println("stop:", err)
	}
	// Output:
	// memory injected: true messages: 2
	// tools: 3
	// after drain: true
}
