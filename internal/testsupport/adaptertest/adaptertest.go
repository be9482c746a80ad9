// Package adaptertest is the fixture the model adapter modules
// (adapters/openai, adapters/anthropic) test against: a started memorykit
// Runtime on the embedded store with a mock clock, an authorizer that lets
// one user and one model act in one project, and a content policy that
// refuses any memory holding RejectMarker, so a test can make
// remember_project_memory fail on purpose.
//
// It lives in the core module, under internal/, so that both adapter
// modules share one fixture without the core depending on any SDK.
package adaptertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/memorytools"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/writer"
)

// Identities of the fixture.
const (
	Tenant  = "acme"
	Project = "apollo"
	UserID  = "alice"
	ModelID = "agent-1"
)

// RejectMarker makes the fixture's content policy refuse a memory.
const RejectMarker = "REJECT-ME"

// Fixture is a running Runtime and what a test needs around it.
type Fixture struct {
	Runtime *mkruntime.Runtime
	Store   *memorystore.Store
	Clock   *clock.Mock
	Scope   memorykit.Scope
	User    memorykit.Principal
}

type allowProject struct{}

func (allowProject) Authorize(_ context.Context, p memorykit.Principal, _ memorykit.Permission, s memorykit.Scope) error {
	if p.TenantID == Tenant && s.TenantID == Tenant && s.SubjectID == Project && (p.Actor.ID == UserID || p.Actor.ID == ModelID) {
		return nil
	}
	return errors.New("not a member")
}

type rejectMarked struct{}

func (rejectMarked) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if strings.Contains(c.Content, RejectMarker) {
		return errors.New("refused by policy")
	}
	return nil
}

type noExtraction struct{}

func (noExtraction) Extract(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	return nil, nil
}

// New starts a Runtime on memorystore; the test's cleanup stops it.
func New(t testing.TB) *Fixture {
	t.Helper()
	return NewWithClaims(t, nil)
}

// NewWithClaims is New with the Runtime's claim detector (Config.Claims)
// set to claims; nil means the built-in one.
func NewWithClaims(t testing.TB, claims memorytools.ClaimDetector) *Fixture {
	t.Helper()
	limits := memorykit.Limits{
		Version: 1, MaxKeyBytes: 128, MaxContentBytes: 4096, MaxMetadataEntries: 8,
		MaxMetadataBytes: 1024, MaxSources: 8, MaxSourceBytes: 512, MaxListSize: 100,
		MaxJobPayloadBytes: 64 << 10, MaxReasonBytes: 1024,
	}
	guard, err := memorykit.NewWriteGuard(limits, rejectMarked{})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// A keyer of its own rather than testkit's: the kit imports every
	// store, and the adapter modules that use this fixture should not
	// need the PostgreSQL driver to build their tests.
	tombstones, err := memorykit.NewTombstoneKeyer([]byte("adaptertest tombstone secret, tests only"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: tombstones})
	if err != nil {
		t.Fatal(err)
	}
	backoff := memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}
	rt, err := mkruntime.New(mkruntime.Config{
		Guard: guard,
		Policy: memorykit.RecallPolicy{
			Version: 1, ExactLimit: 5, FullTextLimit: 20, VectorLimit: 20, RRFK: 60,
			ExactWeight: 1, FullTextWeight: 1, VectorWeight: 1, MinVectorSimilarity: 0.1,
			MaxItems: 6, MaxTokens: 1000, MaxEntryRunes: 500, MaxQueryRunes: 2000, MaxQueryTerms: 48,
			Deadline:         time.Hour, // the mock clock never reaches it
			EmbeddingProfile: embedder.LocalProfile, EmbeddingDimension: embedder.LocalDimension,
		},
		Embedder:   embedder.NewLocal(),
		Authorizer: allowProject{},
		Extractor:  noExtraction{},
		Stores:     mkruntime.StoresOf(store),
		Clock:      clk,
		WorkerID:   "adapter-test",
		Logger:     zap.NewNop(),
		Events:     memorykit.DiscardEvents{},
		Workers: mkruntime.Workers{
			LeaseTTL: time.Minute, EmbedBatch: 32, EmbedPoll: time.Second, EmbedDeadline: 10 * time.Second,
			EmbedRetry: backoff, ExtractBatch: 4, ExtractPoll: time.Second, JobDeadline: 30 * time.Second,
			JobRetry: backoff, JobMaxAttempts: 5, JobMaxReaps: 10, ReapInterval: 10 * time.Second, StoreBackoff: backoff,
			HandBackTimeout: 5 * time.Second,
			Restart:         memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}, MaxRestarts: 10,
		},
		Tools:  memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 500, MaxArgBytes: 8192},
		Outbox: mkruntime.Outbox{MaxTurns: 100, MaxBytes: 1 << 20, Retry: backoff},
		Mode:   mkruntime.ModeAll,
		Claims: claims,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("runtime stop: %v", err)
		}
	})
	scope, err := memorykit.ProjectScope(Tenant, Project)
	if err != nil {
		t.Fatal(err)
	}
	return &Fixture{
		Runtime: rt, Store: store, Clock: clk, Scope: scope,
		User: memorykit.Principal{TenantID: Tenant, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: UserID}},
	}
}

// Session opens a request Session for the fixture's user and model, with
// or without write intent.
func (f *Fixture) Session(t testing.TB, writeIntent bool) *mkruntime.Session {
	t.Helper()
	s, err := f.Runtime.Session(context.Background(), mkruntime.Request{Caller: f.User, Scope: f.Scope, ModelID: ModelID, WriteIntent: writeIntent})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Remember writes one active memory as the user and returns its ID.
func (f *Fixture) Remember(t testing.TB, key, content string) string {
	t.Helper()
	res, err := f.Runtime.Writer().WriteExplicit(context.Background(), f.User, f.Scope,
		writer.Input{Kind: memorykit.KindFact, Key: key, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return res.Record.ID
}
