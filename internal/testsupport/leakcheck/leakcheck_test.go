// Package leakcheck_test holds TestNoCallerContentInErrors: one table of
// every public entry point of memorykit, called with a canary in every
// argument while the Host's parts behind it (Authorizer, Embedder,
// ContentValidator, Extractor, Store) fail with errors that quote the
// canary. Every error that comes back must be a *memorykit.Error whose
// message carries no canary, and no log line or event may carry one.
package leakcheck_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/reviewer"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
	"github.com/goagents/memorykit/turn"
	"github.com/goagents/memorykit/writer"
)

// Two canaries. content is caller content (keys, text, queries, reasons,
// payloads, tool arguments, DSNs): it may appear in no error, log line or
// event. id goes where an identifier is expected (tenant, project, record,
// worker and model IDs): identifiers may be logged and sent in events, but
// never printed in an error message either.
const (
	content = "CANARY-content-7f3a"
	id      = "canary-id-9c1d"
)

// contentText is content shaped to pass text validation.
var contentText = "the deploy region is " + content

// foreign is what a failing Host part returns: an untyped error that
// quotes both canaries, around a *memorykit.Error whose own fields quote
// them too, so neither the outer text nor the inner fields may be printed.
func foreign(retry bool) error {
	inner := &memorykit.Error{Op: "host.store", Kind: memorykit.ErrUnavailable, Field: content, Reason: content, Retry: retry}
	return fmt.Errorf("upstream refused %q for %s: %w", content, id, inner)
}

// plain is a failing part's error with no memorykit type in its chain.
func plain(what string) error {
	return errors.New(what + " failed on " + content + " / " + id)
}

type failAuthorizer struct{}

func (failAuthorizer) Authorize(context.Context, memorykit.Principal, memorykit.Permission, memorykit.Scope) error {
	return plain("authorize")
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, memorykit.Principal, memorykit.Permission, memorykit.Scope) error {
	return nil
}

type failValidator struct{}

// ValidateContent refuses every check that carries the content canary
// (every caller argument does; the fixtures' records do not).
func (failValidator) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	text := fmt.Sprint(c.Key, c.Content, c.Reason, c.Metadata, c.Sources)
	if strings.Contains(text, content) {
		return errors.New("refused: " + text)
	}
	return nil
}

// failEmbedder fails every call; recoverable selects whether recall may
// degrade on it.
type failEmbedder struct{ recoverable bool }

func (failEmbedder) Profile() string { return embedder.NewLocal().Profile() }
func (failEmbedder) Dimension() int  { return embedder.NewLocal().Dimension() }
func (f failEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	err := fmt.Errorf("embedding %q: %w", strings.Join(texts, "|"), plain("embed"))
	if f.recoverable {
		return nil, memorykit.Recoverable(err)
	}
	return nil, err
}

type failExtractor struct{}

func (failExtractor) Extract(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	return nil, fmt.Errorf("extract %q: %w", in.Payload, foreign(false))
}

// failStore is a Store every method of which fails with a foreign error;
// the embedded Store only satisfies the interface.
type failStore struct{ storekit.Store }

func (failStore) err() error { return foreign(false) }
func (f failStore) Create(context.Context, memorykit.NewRecord) (memorykit.Record, error) {
	return memorykit.Record{}, f.err()
}
func (f failStore) Get(context.Context, memorykit.Scope, string) (memorykit.Record, error) {
	return memorykit.Record{}, f.err()
}
func (f failStore) FindActive(context.Context, memorykit.Scope, memorykit.Kind, string) (memorykit.Record, error) {
	return memorykit.Record{}, f.err()
}
func (f failStore) List(context.Context, storekit.ListFilter) ([]memorykit.Record, error) {
	return nil, f.err()
}
func (f failStore) Activate(context.Context, storekit.Transition) (memorykit.Record, error) {
	return memorykit.Record{}, f.err()
}
func (f failStore) Reject(context.Context, storekit.Transition) (memorykit.Record, error) {
	return memorykit.Record{}, f.err()
}
func (f failStore) Correct(context.Context, storekit.Correction) (memorykit.Record, error) {
	return memorykit.Record{}, f.err()
}
func (f failStore) Forget(context.Context, storekit.Transition) (memorykit.Record, error) {
	return memorykit.Record{}, f.err()
}
func (f failStore) Erase(context.Context, storekit.Transition) (memorykit.Record, error) {
	return memorykit.Record{}, f.err()
}
func (f failStore) Revisions(context.Context, memorykit.Scope, string) ([]storekit.Revision, error) {
	return nil, f.err()
}
func (f failStore) Recall(context.Context, storekit.RecallQuery) (storekit.RecallResult, error) {
	return storekit.RecallResult{}, f.err()
}
func (f failStore) EnqueueJob(context.Context, storekit.NewJob) (storekit.Job, error) {
	return storekit.Job{}, f.err()
}
func (f failStore) LeaseJobs(context.Context, storekit.JobLease) ([]storekit.Job, error) {
	return nil, f.err()
}
func (f failStore) LeaseEmbeddings(context.Context, storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	return nil, f.err()
}
func (f failStore) PendingEmbeddings(context.Context, string) (int, error) { return 0, f.err() }
func (f failStore) DeleteEmbeddings(context.Context, string, memorykit.Scope) (int, error) {
	return 0, f.err()
}
func (f failStore) DeleteAllEmbeddings(context.Context, string) (int, error) { return 0, f.err() }
func (f failStore) ReapEmbeddingLeases(context.Context) (int, error)         { return 0, f.err() }
func (f failStore) ReapJobLeases(context.Context) (int, error)               { return 0, f.err() }

// vectorErrStore answers recall with a foreign, non-recoverable vector
// channel error.
type vectorErrStore struct{ storekit.Store }

func (v vectorErrStore) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	res, err := v.Store.Recall(ctx, q)
	res.VectorErr = foreign(false)
	return res, err
}

// fault names the Host part that fails in one environment.
type fault string

const (
	faultAuthorizer  fault = "authorizer"
	faultValidator   fault = "validator"
	faultStore       fault = "store"
	faultVectorErr   fault = "store_vector"
	faultEmbedder    fault = "embedder"
	faultEmbedderRec fault = "embedder_recoverable"
	faultExtractor   fault = "extractor"
)

var faults = []fault{faultAuthorizer, faultValidator, faultStore, faultVectorErr, faultEmbedder, faultEmbedderRec, faultExtractor}

// env is one composition with one failing part.
type env struct {
	clk   *clock.Mock
	real  *memorystore.Store
	store storekit.Store
	az    memorykit.Authorizer
	emb   memorykit.Embedder
	ext   memorykit.Extractor
	guard *memorykit.WriteGuard
	log   *zap.Logger
	logs  *observer.ObservedLogs
	sink  *testkit.Sink
	scope memorykit.Scope
	user  memorykit.Principal
	model memorykit.Principal
}

func newEnv(t *testing.T, f fault) *env {
	t.Helper()
	clk := testkit.NewClock()
	core, logs := observer.New(zapcore.DebugLevel)
	e := &env{
		clk: clk, az: allowAll{}, emb: embedder.NewLocal(), ext: failExtractor{},
		log: zap.New(core), logs: logs, sink: &testkit.Sink{},
		scope: memorykit.Scope{TenantID: id, SubjectType: memorykit.SubjectProject, SubjectID: id},
		user:  memorykit.Principal{TenantID: id, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: id}},
		model: memorykit.Principal{TenantID: id, Actor: memorykit.Actor{Kind: memorykit.ActorModel, ID: id}},
	}
	var validator memorykit.ContentValidator = testkit.Validator{}
	if f == faultValidator {
		validator = failValidator{}
	}
	guard, err := memorykit.NewWriteGuard(storetest.Limits(), validator)
	if err != nil {
		t.Fatal(err)
	}
	e.guard = guard
	e.real, err = memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: testkit.NewTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	e.store = e.real
	switch f {
	case faultAuthorizer:
		e.az = failAuthorizer{}
	case faultStore:
		e.store = failStore{Store: e.real}
	case faultVectorErr:
		e.store = vectorErrStore{Store: e.real}
	case faultEmbedder:
		e.emb = failEmbedder{}
	case faultEmbedderRec:
		e.emb = failEmbedder{recoverable: true}
	}
	// A record and a job the entry points can find, so calls reach past
	// their lookups.
	ctx := context.Background()
	rec, err := e.real.Create(ctx, memorykit.NewRecord{Scope: e.scope, ID: id, Kind: memorykit.KindFact,
		Key: "deploy region", Content: "eu-west-1", Status: memorykit.StatusActive, Actor: e.user.Actor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.real.Create(ctx, memorykit.NewRecord{Scope: e.scope, ID: id + "-cand", Kind: memorykit.KindFact,
		Key: "deploy zone", Content: "eu-west-1a", Status: memorykit.StatusCandidate, Actor: e.model.Actor}); err != nil {
		t.Fatal(err)
	}
	if f != faultValidator {
		// A candidate whose key and text carry the canary: the review
		// hints recall with them (query, exact key, embedding input).
		if _, err := e.real.Create(ctx, memorykit.NewRecord{Scope: e.scope, ID: id + "-cand2", Kind: memorykit.KindNote,
			Key: "deploy region " + content, Content: contentText, Status: memorykit.StatusCandidate, Actor: e.model.Actor}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.real.EnqueueJob(ctx, storekit.NewJob{ID: id, Scope: e.scope, Payload: contentText, MaxAttempts: 1, MaxReaps: 1}); err != nil {
		t.Fatal(err)
	}
	_ = rec
	return e
}

// call is one public entry point called with canaries.
type call struct {
	name string
	do   func(ctx context.Context) error
}

func scopeArg() memorykit.Scope {
	return memorykit.Scope{TenantID: id, SubjectType: memorykit.SubjectProject, SubjectID: id}
}

func transition() storekit.Transition {
	return storekit.Transition{Scope: scopeArg(), ID: id, Actor: memorykit.Actor{Kind: memorykit.ActorReviewer, ID: id}, Reason: contentText}
}

func newRecord() memorykit.NewRecord {
	return memorykit.NewRecord{Scope: scopeArg(), Kind: memorykit.KindFact, Key: content, Content: contentText,
		Metadata: map[string]string{"team": contentText}, Sources: []memorykit.Source{{Kind: "doc", Ref: content}},
		Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: id}, Reason: contentText}
}

// storeCalls calls every Store method with canaries in its arguments.
func storeCalls(s storekit.Store) []call {
	sc := scopeArg()
	profile := embedder.NewLocal().Profile()
	calls := []call{
		{"Create", func(ctx context.Context) error { _, err := s.Create(ctx, newRecord()); return err }},
		{"Create bad key", func(ctx context.Context) error {
			in := newRecord()
			in.Key = content + "\x00"
			_, err := s.Create(ctx, in)
			return err
		}},
		{"Get", func(ctx context.Context) error { _, err := s.Get(ctx, sc, id+"-missing"); return err }},
		{"FindActive", func(ctx context.Context) error {
			_, err := s.FindActive(ctx, sc, memorykit.KindFact, content)
			return err
		}},
		{"List", func(ctx context.Context) error {
			_, err := s.List(ctx, storekit.ListFilter{Scope: sc, Key: content, AfterID: id, Limit: 5})
			return err
		}},
		{"Activate", func(ctx context.Context) error { _, err := s.Activate(ctx, transition()); return err }},
		{"Reject", func(ctx context.Context) error { _, err := s.Reject(ctx, transition()); return err }},
		{"Forget", func(ctx context.Context) error { _, err := s.Forget(ctx, transition()); return err }},
		{"Erase", func(ctx context.Context) error { _, err := s.Erase(ctx, transition()); return err }},
		{"Correct", func(ctx context.Context) error {
			_, err := s.Correct(ctx, storekit.Correction{Transition: transition(), Content: contentText,
				Metadata: map[string]string{"k": content}, Sources: []memorykit.Source{{Kind: "doc", Ref: content}}})
			return err
		}},
		{"Revisions", func(ctx context.Context) error { _, err := s.Revisions(ctx, sc, id+"-missing"); return err }},
		{"Recall", func(ctx context.Context) error {
			_, err := s.Recall(ctx, storekit.RecallQuery{Scope: sc, ExactKeys: []string{content}, Terms: []string{content},
				Vector: []float32{1, 0}, Profile: profile, ExactLimit: 5, FullTextLimit: 5, VectorLimit: 5})
			return err
		}},
		{"LeaseEmbeddings", func(ctx context.Context) error {
			_, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: content, WorkerID: id, TTL: time.Minute, Max: 5})
			return err
		}},
		{"PutEmbedding", func(ctx context.Context) error {
			return s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: sc, RecordID: id, Profile: profile,
				ContentHash: storekit.ContentHash(contentText), Vector: []float32{1}, WorkerID: id})
		}},
		{"ReleaseEmbedding", func(ctx context.Context) error {
			return s.ReleaseEmbedding(ctx, storekit.EmbeddingRelease{Scope: sc, RecordID: id, Profile: profile,
				ContentHash: storekit.ContentHash(contentText), WorkerID: id, Reason: content})
		}},
		{"PendingEmbeddings", func(ctx context.Context) error { _, err := s.PendingEmbeddings(ctx, content); return err }},
		{"DeleteEmbeddings", func(ctx context.Context) error { _, err := s.DeleteEmbeddings(ctx, content, sc); return err }},
		{"DeleteAllEmbeddings", func(ctx context.Context) error { _, err := s.DeleteAllEmbeddings(ctx, content); return err }},
		{"EnqueueJob", func(ctx context.Context) error {
			_, err := s.EnqueueJob(ctx, storekit.NewJob{ID: id + "-new", Scope: sc, Payload: contentText + "\x00", MaxAttempts: 1})
			return err
		}},
		{"LeaseJobs", func(ctx context.Context) error {
			_, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: id, TTL: time.Minute, Max: 1})
			return err
		}},
		{"CompleteJob", func(ctx context.Context) error {
			c := newRecord()
			c.Status = memorykit.StatusCandidate
			_, err := s.CompleteJob(ctx, storekit.JobCompletion{JobID: id, WorkerID: id + "-other", Candidates: []memorykit.NewRecord{c}})
			return err
		}},
		{"FailJob", func(ctx context.Context) error {
			_, err := s.FailJob(ctx, storekit.JobFailure{JobID: id, WorkerID: id + "-other", Reason: content})
			return err
		}},
		{"ReleaseJob", func(ctx context.Context) error {
			return s.ReleaseJob(ctx, storekit.JobRelease{JobID: id, WorkerID: id + "-other", LeaseToken: 1})
		}},
		{"GetJob", func(ctx context.Context) error { _, err := s.GetJob(ctx, sc, id+"-missing"); return err }},
	}
	if b, ok := s.(storekit.BatchCreator); ok {
		calls = append(calls, call{"CreateBatch", func(ctx context.Context) error {
			_, err := b.CreateBatch(ctx, []storekit.BatchItem{{Record: newRecord()}})
			return err
		}})
	}
	return calls
}

func writerInput() writer.Input {
	return writer.Input{Kind: memorykit.KindFact, Key: content, Content: contentText,
		Metadata: map[string]string{"team": content}, Sources: []memorykit.Source{{Kind: "doc", Ref: content}}, Reason: contentText}
}

// componentCalls builds every component on e and calls each public method.
func componentCalls(t *testing.T, e *env) []call {
	t.Helper()
	w, err := writer.New(writer.Config{Store: e.store, Authorizer: e.az, Events: e.sink, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := reviewer.New(reviewer.Config{Store: e.store, Authorizer: e.az, Events: e.sink, Clock: e.clk,
		Hints: reviewer.HintConfig{Store: e.store, Embedder: e.emb, Policy: testkit.Policy(), Logger: e.log}})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := recall.New(recall.Config{Store: e.store, Embedder: e.emb, Authorizer: e.az, Policy: testkit.Policy(),
		Clock: e.clk, Events: e.sink, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := projector.New(projector.Config{Engine: eng, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := memorytools.New(memorytools.Config{Engine: eng, Records: e.store, Authorizer: e.az, Writer: w,
		Principal: e.model, Caller: e.user, Scope: e.scope, WriteIntent: true,
		Limits: memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 400, MaxArgBytes: 8192},
		Events: e.sink, Clock: e.clk, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := extractworker.New(extractworker.Config{Store: e.store, Extractor: e.ext, Guard: e.guard, Clock: e.clk,
		Logger: e.log, Events: e.sink, WorkerID: id, LeaseTTL: time.Minute, BatchSize: 4, PollInterval: time.Second,
		JobDeadline: 30 * time.Second, HandBackTimeout: 5 * time.Second,
		Retry:        memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
		StoreBackoff: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embedworker.New(embedworker.Config{Store: e.store, Embedder: e.emb, Clock: e.clk, Logger: e.log,
		Events: e.sink, WorkerID: id, LeaseTTL: time.Minute, BatchSize: 4, PollInterval: time.Second,
		EmbedDeadline: 30 * time.Second, HandBackTimeout: 5 * time.Second,
		Retry:        memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2},
		StoreBackoff: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}})
	if err != nil {
		t.Fatal(err)
	}
	reaper, err := extractworker.NewReaper(extractworker.ReaperConfig{Store: e.store, Clock: e.clk, Logger: e.log,
		Events: e.sink, Interval: time.Second, StoreBackoff: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}})
	if err != nil {
		t.Fatal(err)
	}
	enq, err := extractworker.NewEnqueuer(extractworker.EnqueuerConfig{Store: e.store, Authorizer: e.az, Clock: e.clk,
		Logger: e.log, Events: e.sink, MaxAttempts: 2, MaxReaps: 2})
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, e)
	sess, sessErr := rt.Session(context.Background(), mkruntime.Request{Caller: e.user, Scope: e.scope, ModelID: id, WriteIntent: true})

	d := reviewer.Decision{ID: id, Reason: contentText}
	page := reviewer.Page{Limit: 5, AfterID: id}
	args := func(v any) json.RawMessage {
		b, _ := json.Marshal(v)
		return b
	}
	messages := []projector.Message{{Role: projector.RoleUser, Content: contentText, Name: content}}
	calls := []call{
		{"writer.WriteExplicit", func(ctx context.Context) error {
			_, err := w.WriteExplicit(ctx, e.user, e.scope, writerInput())
			return err
		}},
		{"writer.WriteModel", func(ctx context.Context) error {
			_, err := w.WriteModel(ctx, e.model, e.scope, writerInput())
			return err
		}},
		{"writer.WriteProjection", func(ctx context.Context) error {
			p := memorykit.Principal{TenantID: id, Actor: memorykit.Actor{Kind: memorykit.ActorProjection, ID: id}}
			_, err := w.WriteProjection(ctx, p, e.scope, writerInput())
			return err
		}},
		{"reviewer.ListCandidates", func(ctx context.Context) error { _, err := rv.ListCandidates(ctx, e.user, e.scope, page); return err }},
		{"reviewer.List", func(ctx context.Context) error {
			_, err := rv.List(ctx, e.user, e.scope, []memorykit.Status{memorykit.StatusActive}, page)
			return err
		}},
		{"reviewer.Get", func(ctx context.Context) error { _, err := rv.Get(ctx, e.user, e.scope, id); return err }},
		{"reviewer.History", func(ctx context.Context) error { _, err := rv.History(ctx, e.user, e.scope, id); return err }},
		{"reviewer.Activate", func(ctx context.Context) error {
			_, err := rv.Activate(ctx, e.user, e.scope, reviewer.Decision{ID: id + "-cand", Reason: contentText})
			return err
		}},
		{"reviewer.Reject", func(ctx context.Context) error {
			_, err := rv.Reject(ctx, e.user, e.scope, reviewer.Decision{ID: id + "-cand", Reason: contentText})
			return err
		}},
		{"reviewer.Correct", func(ctx context.Context) error {
			_, err := rv.Correct(ctx, e.user, e.scope, reviewer.CorrectionInput{Decision: d, Content: contentText,
				Sources: []memorykit.Source{{Kind: "doc", Ref: content}}, Metadata: map[string]string{"k": content}})
			return err
		}},
		{"reviewer.Forget", func(ctx context.Context) error { _, err := rv.Forget(ctx, e.user, e.scope, d); return err }},
		{"reviewer.Erase", func(ctx context.Context) error { _, err := rv.Erase(ctx, e.user, e.scope, d); return err }},
		{"recall.Recall", func(ctx context.Context) error {
			_, err := eng.Recall(ctx, recall.Request{Principal: e.user, Scope: e.scope, Query: contentText, Keys: []string{content}, MaxItems: 5, MaxTokens: 500})
			return err
		}},
		{"projector.Project", func(ctx context.Context) error {
			_, err := proj.Project(ctx, projector.Turn{Principal: e.user, Scope: e.scope, Messages: messages})
			return err
		}},
		{"memorytools.search_memory", func(ctx context.Context) error {
			_, err := tools.Call(ctx, memorytools.SearchMemory, args(map[string]any{"query": contentText}))
			return err
		}},
		{"memorytools.read_memory", func(ctx context.Context) error {
			_, err := tools.Call(ctx, memorytools.ReadMemory, args(map[string]any{"id": id}))
			return err
		}},
		{"memorytools.remember_project_memory", func(ctx context.Context) error {
			_, err := tools.Call(ctx, memorytools.RememberProjectMemory, args(map[string]any{"kind": "fact", "key": content, "content": contentText}))
			return err
		}},
		{"memorytools.unknown tool", func(ctx context.Context) error {
			_, err := tools.Call(ctx, content, json.RawMessage(`{"`+content+`":1}`))
			return err
		}},
		{"memorytools.ValidateOutput", func(context.Context) error { return tools.ValidateOutput("I saved " + contentText + " to memory.") }},
		{"turn.ClaimJudge (provider error)", func(ctx context.Context) error {
			return judgeOnce(ctx, e, func(context.Context, turn.ClaimQuestion) ([]byte, error) { return nil, foreign(true) })
		}},
		{"turn.ClaimJudge (malformed verdict)", func(ctx context.Context) error {
			return judgeOnce(ctx, e, func(context.Context, turn.ClaimQuestion) ([]byte, error) {
				return []byte(`{"claims_memory_saved":"` + contentText + `"}`), nil
			})
		}},
		{"extractworker.RunOnce", func(ctx context.Context) error { _, err := ext.RunOnce(ctx); return err }},
		{"extractworker.Enqueue", func(ctx context.Context) error {
			r := enq.Enqueue(ctx, extractworker.Turn{Principal: e.user, Scope: e.scope, RunRef: id, Payload: contentText})
			return r.Err
		}},
		{"embedworker.RunOnce", func(ctx context.Context) error { _, err := emb.RunOnce(ctx); return err }},
		{"embedworker.RunUntilEmpty", func(ctx context.Context) error {
			_, err := emb.RunUntilEmpty(ctx, embedworker.RebuildOptions{MaxIdleRounds: 1})
			return err
		}},
		{"extractworker.Reaper.RunOnce", func(ctx context.Context) error { _, err := reaper.RunOnce(ctx); return err }},
		{"runtime.Session", func(context.Context) error { return sessErr }},
	}
	if sess != nil {
		calls = append(calls,
			call{"runtime.Session.Project", func(ctx context.Context) error { _, err := sess.Project(ctx, messages); return err }},
			call{"runtime.Session.CallTool", func(ctx context.Context) error {
				_, err := sess.CallTool(ctx, memorytools.SearchMemory, args(map[string]any{"query": contentText}))
				return err
			}},
			call{"runtime.Session.Remember", func(ctx context.Context) error { _, err := sess.Remember(ctx, writerInput()); return err }},
			call{"runtime.Session.FinishTurn", func(ctx context.Context) error {
				return sess.FinishTurn(ctx, mkruntime.Turn{RunRef: id, Transcript: contentText}).Err
			}},
			call{"runtime.Session.ValidateOutput", func(context.Context) error { return sess.ValidateOutput("remembered " + contentText) }},
		)
	}
	return calls
}

// judgeOnce runs a model-judged claim check whose model fails with
// content in its error or verdict; the check must report a claim and emit
// only a reason code.
func judgeOnce(ctx context.Context, e *env, ask turn.ClaimAsker) error {
	j, err := turn.NewClaimJudge("leakcheck.claims", turn.ClaimJudgeConfig{Timeout: time.Minute, MaxTextBytes: 1 << 16, Clock: e.clk, Events: e.sink}, ask)
	if err != nil {
		return err
	}
	if !j.ClaimsMemoryWriteContext(ctx, "I saved "+contentText+" to memory.") {
		return errors.New("a failed claim check let the output through")
	}
	return nil
}

// newRuntime starts a Runtime on e's parts (its workers stay idle: the
// mock clock never moves) and stops it when t ends.
func newRuntime(t *testing.T, e *env) *mkruntime.Runtime {
	t.Helper()
	b := memorykit.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2}
	rt, err := mkruntime.New(mkruntime.Config{
		Guard: e.guard, Policy: testkit.Policy(), Embedder: e.emb, Authorizer: e.az, Extractor: e.ext,
		Stores: mkruntime.StoresOf(e.store), Clock: e.clk, WorkerID: id, Logger: e.log, Events: e.sink,
		Workers: mkruntime.Workers{
			LeaseTTL: time.Hour, EmbedBatch: 16, EmbedPoll: time.Second, EmbedDeadline: 20 * time.Minute,
			EmbedRetry: b, ExtractBatch: 4, ExtractPoll: time.Second, JobDeadline: 20 * time.Minute,
			JobRetry: b, JobMaxAttempts: 3, JobMaxReaps: 5, ReapInterval: 5 * time.Second, StoreBackoff: b,
			HandBackTimeout: 20 * time.Minute,
			Restart:         memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}, MaxRestarts: 5,
		},
		Tools:  memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 400, MaxArgBytes: 8192},
		Mode:   mkruntime.ModeAll,
		Outbox: mkruntime.Outbox{MaxTurns: 100, MaxBytes: 1 << 20, Retry: b},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt
}

// checkErr fails unless err is nil or a *memorykit.Error (itself, not
// merely somewhere in its chain) whose message carries neither canary.
func checkErr(t *testing.T, what string, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	// ErrNotSaved is the one error with a fixed text of its own (the
	// Host shows it); errors.As still finds a *memorykit.Error in it.
	if _, ok := err.(*memorykit.Error); !ok && !errors.Is(err, memorytools.ErrNotSaved) {
		t.Errorf("%s: error %T is not a *memorykit.Error: %q", what, err, err.Error())
	}
	var me *memorykit.Error
	if !errors.As(err, &me) {
		t.Errorf("%s: errors.As finds no *memorykit.Error in %q", what, err)
	}
	if msg := err.Error(); strings.Contains(msg, content) || strings.Contains(msg, id) {
		t.Errorf("%s: error message carries caller content: %q", what, msg)
	}
	return true
}

// TestNoCallerContentInErrors plants canaries in every argument of every
// public entry point, with each Host part failing in turn behind them
// (issue 10, hole 6).
func TestNoCallerContentInErrors(t *testing.T) {
	t.Run("memorystore", func(t *testing.T) {
		for _, f := range []fault{faultValidator, faultAuthorizer} {
			e := newEnv(t, f)
			for _, c := range storeCalls(e.real) {
				checkErr(t, string(f)+" "+c.name, c.do(context.Background()))
			}
			testkit.NoContent(t, e.logs, e.sink, content)
		}
	})
	t.Run("pgstore", func(t *testing.T) {
		dsn := pgtest.DSN(t)
		ctx := context.Background()
		guard, err := memorykit.NewWriteGuard(storetest.Limits(), failValidator{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := pgstore.Open(ctx, dsn, pgstore.Config{Clock: testkit.NewClock(), Guard: guard, Tombstones: testkit.NewTombstones(t), Schema: pgtest.Schema(t, dsn), MaxConns: 2})
		if err != nil {
			pgtest.Unusable(t, "open pgstore", err)
		}
		t.Cleanup(s.Close)
		for _, c := range storeCalls(s) {
			checkErr(t, c.name, c.do(ctx))
		}
		// Opening with a DSN and schema that quote the canary.
		_, err = pgstore.Open(ctx, "postgres://"+id+":"+content+"@127.0.0.1:1/"+id+"?connect_timeout=1",
			pgstore.Config{Clock: testkit.NewClock(), Guard: guard, Tombstones: testkit.NewTombstones(t), Schema: id, MaxConns: 1})
		if !checkErr(t, "pgstore.Open unreachable", err) {
			t.Error("pgstore.Open on an unreachable DSN succeeded")
		}
		_, err = pgstore.Open(ctx, dsn, pgstore.Config{Clock: testkit.NewClock(), Guard: guard, Tombstones: testkit.NewTombstones(t), Schema: content, MaxConns: 1})
		checkErr(t, "pgstore.Open bad schema", err)
		_, err = pgstore.Open(ctx, content+"://"+content, pgstore.Config{Clock: testkit.NewClock(), Guard: guard, Tombstones: testkit.NewTombstones(t), Schema: id, MaxConns: 1})
		checkErr(t, "pgstore.Open malformed DSN", err)
	})
	for _, f := range faults {
		t.Run(string(f), func(t *testing.T) {
			e := newEnv(t, f)
			errs := 0
			for _, c := range componentCalls(t, e) {
				if checkErr(t, c.name, c.do(context.Background())) {
					errs++
				}
			}
			if errs == 0 {
				t.Errorf("no entry point failed with a failing %s", f)
			}
			testkit.NoContent(t, e.logs, e.sink, content)
		})
	}
	t.Run("cli", testCLI)
}

// testCLI runs the memorykit binary with canaries in every flag; nothing it
// prints on stderr may quote them.
func testCLI(t *testing.T) {
	dsn := pgtest.DSN(t)
	bin := filepath.Join(t.TempDir(), "memorykit")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/goagents/memorykit/cmd/memorykit").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	schema := pgtest.Schema(t, dsn)
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "MEMORYKIT_DSN=", "MEMORYKIT_TOMBSTONE_SECRET=leakcheck tombstone secret, tests only, 32+ bytes")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("run %v: %v", args, err)
		}
		return code, stderr.String()
	}
	if code, out := run("migrate", "--dsn", dsn, "--schema", schema); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, out)
	}
	scoped := []string{"--dsn", dsn, "--schema", schema, "--tenant", id, "--project", id, "--operator", id}
	bad := "postgres://" + id + ":" + content + "@127.0.0.1:1/" + id + "?connect_timeout=1"
	cases := [][]string{
		append([]string{"forget"}, append(scoped, "--id", id, "--reason", contentText)...),
		append([]string{"erase"}, append(scoped, "--id", id, "--reason", contentText)...),
		append([]string{"candidates", "activate"}, append(scoped, "--id", id, "--reason", contentText)...),
		append([]string{"candidates", "reject"}, append(scoped, "--id", id+"/", "--reason", contentText)...),
		append([]string{"candidates", "list"}, append(scoped, "--after", content+"/")...),
		append([]string{"audit"}, append(scoped, "--id", id)...),
		append([]string{"status"}, append(scoped, "--profile", content+" x")...),
		{"status", "--dsn", bad, "--tenant", id, "--project", id, "--operator", id},
		{"migrate", "--dsn", bad},
		{"migrate", "--dsn", dsn, "--schema", content},
		{content, "--" + content, content},
		{"forget", "--" + content + "=" + content},
		append([]string{"candidates", "list", "--limit", content}, scoped...),
		append([]string{"status", content}, scoped...),
	}
	for _, args := range cases {
		code, out := run(args...)
		if code == 0 {
			t.Errorf("%.30q: exit 0, want a failure", args)
		}
		if strings.Contains(out, content) || strings.Contains(out, "hunter2") {
			t.Errorf("%.30q: stderr quotes caller content:\n%s", args, out)
		}
	}
}
