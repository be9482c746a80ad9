package storekit_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// rejection is one call that must fail with the given kind, field and
// reason.
type rejection struct {
	name          string
	call          func() error
	kind          error
	field, reason string
}

func runRejections(t *testing.T, tests []rejection) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.call(), tc.kind, tc.field, tc.reason)
		})
	}
}

func testGuard(t *testing.T) *memorykit.WriteGuard {
	t.Helper()
	g, err := memorykit.NewWriteGuard(validLimits(), rejectMarker{"SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func testScope(t *testing.T) memorykit.Scope {
	t.Helper()
	s, err := memorykit.ProjectScope("t1", "p1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	badScope = memorykit.Scope{TenantID: "t1", SubjectType: memorykit.SubjectUser, SubjectID: "u1"}
	goodHash = storekit.ContentHash("x")
)

func TestCheckScopedID(t *testing.T) {
	t.Parallel()
	scope := testScope(t)
	if err := storekit.CheckScopedID("test", scope, "r1"); err != nil {
		t.Fatalf("valid: %v", err)
	}
	runRejections(t, []rejection{
		{"scope", func() error { return storekit.CheckScopedID("test", badScope, "r1") }, memorykit.ErrInvalidScope, "subject_type", "user_scope_not_supported"},
		{"empty id", func() error { return storekit.CheckScopedID("test", scope, "") }, memorykit.ErrInvalidInput, "id", "empty"},
		{"bad id", func() error { return storekit.CheckScopedID("test", scope, "a b") }, memorykit.ErrInvalidInput, "id", "bad_character"},
	})
}

func TestCheckActiveKey(t *testing.T) {
	t.Parallel()
	g, scope := testGuard(t), testScope(t)
	key, err := storekit.CheckActiveKey(g, "test", scope, memorykit.KindFact, "  Deploy  Region ")
	if err != nil || key != "deploy region" {
		t.Fatalf("CheckActiveKey() = %q, %v; want the canonical key", key, err)
	}
	check := func(scope memorykit.Scope, kind memorykit.Kind, key string) func() error {
		return func() error {
			_, err := storekit.CheckActiveKey(g, "test", scope, kind, key)
			return err
		}
	}
	runRejections(t, []rejection{
		{"scope", check(badScope, memorykit.KindFact, "k"), memorykit.ErrInvalidScope, "subject_type", "user_scope_not_supported"},
		{"kind", check(scope, "gossip", "k"), memorykit.ErrInvalidInput, "kind", "unknown"},
		{"empty key", check(scope, memorykit.KindFact, "  "), memorykit.ErrInvalidInput, "key", "empty"},
		{"long key", check(scope, memorykit.KindFact, strings.Repeat("k", 65)), memorykit.ErrInvalidInput, "key", "too_long"},
	})
}

func TestCheckList(t *testing.T) {
	t.Parallel()
	g, scope := testGuard(t), testScope(t)
	valid := func() storekit.ListFilter {
		return storekit.ListFilter{
			Scope: scope, Statuses: []memorykit.Status{memorykit.StatusActive}, Kind: memorykit.KindFact,
			Key: " A  Key ", Limit: 10, AfterID: "r1",
		}
	}
	got, err := storekit.CheckList(g, "test", valid())
	if err != nil {
		t.Fatalf("valid: %v", err)
	}
	if want := valid(); got.Key != "a key" || got.Limit != want.Limit || got.AfterID != want.AfterID || got.Kind != want.Kind {
		t.Fatalf("CheckList() = %+v, want the filter with its key canonicalised", got)
	}
	if _, err := storekit.CheckList(g, "test", storekit.ListFilter{Scope: scope, Limit: 1}); err != nil {
		t.Fatalf("filter without the optional fields: %v", err)
	}
	check := func(mutate func(*storekit.ListFilter)) func() error {
		return func() error {
			f := valid()
			mutate(&f)
			_, err := storekit.CheckList(g, "test", f)
			return err
		}
	}
	runRejections(t, []rejection{
		{"scope", check(func(f *storekit.ListFilter) { f.Scope = badScope }), memorykit.ErrInvalidScope, "subject_type", "user_scope_not_supported"},
		{"zero limit", check(func(f *storekit.ListFilter) { f.Limit = 0 }), memorykit.ErrInvalidInput, "limit", "must_be_positive"},
		{"limit above max", check(func(f *storekit.ListFilter) { f.Limit = 11 }), memorykit.ErrInvalidInput, "limit", "above_max_list_size"},
		{"status", check(func(f *storekit.ListFilter) { f.Statuses = append(f.Statuses, "gone") }), memorykit.ErrInvalidInput, "statuses", "unknown"},
		{"kind", check(func(f *storekit.ListFilter) { f.Kind = "gossip" }), memorykit.ErrInvalidInput, "kind", "unknown"},
		{"key", check(func(f *storekit.ListFilter) { f.Key = "a\x00" }), memorykit.ErrInvalidInput, "key", "nul_byte"},
		{"after id", check(func(f *storekit.ListFilter) { f.AfterID = "a b" }), memorykit.ErrInvalidInput, "after_id", "bad_character"},
	})
}

func TestCheckBatch(t *testing.T) {
	t.Parallel()
	g, scope := testGuard(t), testScope(t)
	ctx := context.Background()
	item := func(id string) storekit.BatchItem {
		return storekit.BatchItem{
			Record: memorykit.NewRecord{
				ID: id, Scope: scope, Kind: memorykit.KindFact, Key: " Some Key ", Content: "c",
				Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorTool, ID: "t"},
				Metadata: map[string]string{"a": "1"}, Sources: []memorykit.Source{{Kind: "doc", Ref: "d1"}},
			},
			Embedding: &storekit.BatchEmbedding{Profile: "p", Vector: []float32{1, 0}},
		}
	}
	in := []storekit.BatchItem{item("r1"), item("")}
	got, err := storekit.CheckBatch(ctx, g, "test", in, 0)
	if err != nil {
		t.Fatalf("valid batch: %v", err)
	}
	if len(got) != 2 || got[0].ID != "r1" || got[1].Key != "some key" {
		t.Fatalf("CheckBatch() = %+v", got)
	}
	got[0].Metadata["a"] = "changed"
	got[0].Sources[0].Ref = "changed"
	if in[0].Record.Metadata["a"] != "1" || in[0].Record.Sources[0].Ref != "d1" {
		t.Fatal("CheckBatch's records share metadata or sources with the input")
	}
	if got, err := storekit.CheckBatch(ctx, g, "test", nil, 0); err != nil || len(got) != 0 {
		t.Fatalf("empty batch = %v, %v", got, err)
	}
	check := func(maxDims int, mutate func([]storekit.BatchItem) []storekit.BatchItem) func() error {
		return func() error {
			_, err := storekit.CheckBatch(ctx, g, "test", mutate([]storekit.BatchItem{item("r1"), item("r2")}), maxDims)
			return err
		}
	}
	runRejections(t, []rejection{
		{"too many items", check(0, func(b []storekit.BatchItem) []storekit.BatchItem {
			for len(b) <= validLimits().MaxListSize {
				b = append(b, item(""))
			}
			return b
		}), memorykit.ErrInvalidInput, "items", "above_max_list_size"},
		{"bad record", check(0, func(b []storekit.BatchItem) []storekit.BatchItem {
			b[1].Record.Content = "a SECRET"
			return b
		}), memorykit.ErrInvalidInput, "items[1].content", "content_rejected"},
		{"repeated id", check(0, func(b []storekit.BatchItem) []storekit.BatchItem {
			b[1].Record.ID = "r1"
			return b
		}), memorykit.ErrAlreadyExists, "items[1]", "id_repeated"},
		{"embedding on a candidate", check(0, func(b []storekit.BatchItem) []storekit.BatchItem {
			b[1].Record.Status = memorykit.StatusCandidate
			return b
		}), memorykit.ErrInvalidInput, "items[1].embedding", "record_not_active"},
		{"embedding profile", check(0, func(b []storekit.BatchItem) []storekit.BatchItem {
			b[0].Embedding.Profile = ""
			return b
		}), memorykit.ErrInvalidInput, "items[0].profile", "bad_length"},
		{"embedding vector", check(0, func(b []storekit.BatchItem) []storekit.BatchItem {
			b[0].Embedding.Vector = []float32{0, 0}
			return b
		}), memorykit.ErrInvalidInput, "items[0].embedding.vector", "zero_vector"},
		{"embedding dimensions", check(1, func(b []storekit.BatchItem) []storekit.BatchItem { return b }),
			memorykit.ErrInvalidInput, "items[0].embedding.vector", "too_many_dimensions"},
	})
}

func TestCheckRecallQuery(t *testing.T) {
	t.Parallel()
	scope := testScope(t)
	valid := func() storekit.RecallQuery {
		return storekit.RecallQuery{
			Scope: scope, ExactLimit: 1, FullTextLimit: 1, VectorLimit: 1,
			Vector: []float32{0.5, 1}, Profile: "p",
		}
	}
	if err := storekit.CheckRecallQuery("test", valid()); err != nil {
		t.Fatalf("valid: %v", err)
	}
	noVector := valid()
	noVector.Vector, noVector.Profile = nil, ""
	if err := storekit.CheckRecallQuery("test", noVector); err != nil {
		t.Fatalf("no vector needs no profile: %v", err)
	}
	zero := valid()
	zero.Vector = []float32{0, 0}
	if err := storekit.CheckRecallQuery("test", zero); err != nil {
		t.Fatalf("a zero query vector is allowed (it matches nothing): %v", err)
	}
	check := func(mutate func(*storekit.RecallQuery)) func() error {
		return func() error {
			q := valid()
			mutate(&q)
			return storekit.CheckRecallQuery("test", q)
		}
	}
	nan := float32(math.NaN())
	runRejections(t, []rejection{
		{"scope", check(func(q *storekit.RecallQuery) { q.Scope = badScope }), memorykit.ErrInvalidScope, "subject_type", "user_scope_not_supported"},
		{"exact limit", check(func(q *storekit.RecallQuery) { q.ExactLimit = 0 }), memorykit.ErrInvalidInput, "exact_limit", "must_be_positive"},
		{"full-text limit", check(func(q *storekit.RecallQuery) { q.FullTextLimit = -1 }), memorykit.ErrInvalidInput, "full_text_limit", "must_be_positive"},
		{"vector limit", check(func(q *storekit.RecallQuery) { q.VectorLimit = 0 }), memorykit.ErrInvalidInput, "vector_limit", "must_be_positive"},
		{"profile", check(func(q *storekit.RecallQuery) { q.Profile = "a b" }), memorykit.ErrInvalidInput, "profile", "bad_character"},
		{"empty vector", check(func(q *storekit.RecallQuery) { q.Vector = []float32{} }), memorykit.ErrInvalidInput, "vector", "empty"},
		{"nan", check(func(q *storekit.RecallQuery) { q.Vector = []float32{1, nan} }), memorykit.ErrInvalidInput, "vector", "not_finite"},
	})
}

func TestCheckContentHash(t *testing.T) {
	t.Parallel()
	if err := storekit.CheckContentHash("test", goodHash); err != nil {
		t.Fatalf("ContentHash's output: %v", err)
	}
	for _, bad := range []string{
		"", "sha256:", strings.TrimPrefix(goodHash, "sha256:"), "md5:" + goodHash[7:],
		goodHash[:len(goodHash)-1], goodHash + "0", strings.ToUpper(goodHash), goodHash[:70] + "g",
	} {
		wantError(t, storekit.CheckContentHash("test", bad), memorykit.ErrInvalidInput, "content_hash", "malformed")
	}
}

func TestCheckVector(t *testing.T) {
	t.Parallel()
	if err := storekit.CheckVector("test", "v", []float32{0, 1}, 0); err != nil {
		t.Fatalf("valid, no bound: %v", err)
	}
	if err := storekit.CheckVector("test", "v", []float32{0, 1}, 2); err != nil {
		t.Fatalf("valid, at the bound: %v", err)
	}
	inf := float32(math.Inf(1))
	check := func(v []float32, maxDims int) func() error {
		return func() error { return storekit.CheckVector("test", "v", v, maxDims) }
	}
	runRejections(t, []rejection{
		{"nil", check(nil, 0), memorykit.ErrInvalidInput, "v", "empty"},
		{"empty", check([]float32{}, 3), memorykit.ErrInvalidInput, "v", "empty"},
		{"dimensions", check([]float32{1, 2, 3}, 2), memorykit.ErrInvalidInput, "v", "too_many_dimensions"},
		// The bound is checked before the values.
		{"dimensions before values", check([]float32{inf, 0, 0}, 2), memorykit.ErrInvalidInput, "v", "too_many_dimensions"},
		{"infinite", check([]float32{1, inf}, 0), memorykit.ErrInvalidInput, "v", "not_finite"},
		{"nan", check([]float32{float32(math.NaN())}, 0), memorykit.ErrInvalidInput, "v", "not_finite"},
		{"zero", check([]float32{0, 0}, 0), memorykit.ErrInvalidInput, "v", "zero_vector"},
	})
}

func TestLeaseChecks(t *testing.T) {
	t.Parallel()
	g := testGuard(t)
	if err := storekit.CheckLeaseTTL("test", time.Microsecond); err != nil {
		t.Fatalf("one microsecond: %v", err)
	}
	if err := storekit.CheckLeaseMax(g, "test", validLimits().MaxListSize); err != nil {
		t.Fatalf("max at MaxListSize: %v", err)
	}
	emb := storekit.EmbeddingLease{Profile: "p", WorkerID: "w1", TTL: time.Second, Max: 1}
	if err := storekit.CheckEmbeddingLease(g, "test", emb); err != nil {
		t.Fatalf("valid embedding lease: %v", err)
	}
	job := storekit.JobLease{WorkerID: "w1", TTL: time.Second, Max: 1}
	if err := storekit.CheckJobLease(g, "test", job); err != nil {
		t.Fatalf("valid job lease: %v", err)
	}
	embWith := func(mutate func(*storekit.EmbeddingLease)) func() error {
		return func() error {
			p := emb
			mutate(&p)
			return storekit.CheckEmbeddingLease(g, "test", p)
		}
	}
	jobWith := func(mutate func(*storekit.JobLease)) func() error {
		return func() error {
			p := job
			mutate(&p)
			return storekit.CheckJobLease(g, "test", p)
		}
	}
	runRejections(t, []rejection{
		{"ttl zero", func() error { return storekit.CheckLeaseTTL("test", 0) }, memorykit.ErrInvalidInput, "ttl", "must_be_positive"},
		{"ttl negative", func() error { return storekit.CheckLeaseTTL("test", -time.Second) }, memorykit.ErrInvalidInput, "ttl", "must_be_positive"},
		{"ttl below precision", func() error { return storekit.CheckLeaseTTL("test", time.Nanosecond) }, memorykit.ErrInvalidInput, "ttl", "below_precision"},
		{"max zero", func() error { return storekit.CheckLeaseMax(g, "test", 0) }, memorykit.ErrInvalidInput, "max", "must_be_positive"},
		{"max above", func() error { return storekit.CheckLeaseMax(g, "test", 11) }, memorykit.ErrInvalidInput, "max", "above_max_list_size"},
		{"embedding profile", embWith(func(p *storekit.EmbeddingLease) { p.Profile = "" }), memorykit.ErrInvalidInput, "profile", "bad_length"},
		{"embedding worker", embWith(func(p *storekit.EmbeddingLease) { p.WorkerID = "" }), memorykit.ErrInvalidInput, "worker_id", "empty"},
		{"embedding ttl", embWith(func(p *storekit.EmbeddingLease) { p.TTL = 0 }), memorykit.ErrInvalidInput, "ttl", "must_be_positive"},
		{"embedding max", embWith(func(p *storekit.EmbeddingLease) { p.Max = 0 }), memorykit.ErrInvalidInput, "max", "must_be_positive"},
		{"job worker", jobWith(func(p *storekit.JobLease) { p.WorkerID = "a b" }), memorykit.ErrInvalidInput, "worker_id", "bad_character"},
		{"job ttl", jobWith(func(p *storekit.JobLease) { p.TTL = time.Nanosecond }), memorykit.ErrInvalidInput, "ttl", "below_precision"},
		{"job max", jobWith(func(p *storekit.JobLease) { p.Max = 11 }), memorykit.ErrInvalidInput, "max", "above_max_list_size"},
	})
}

func TestCheckEmbeddingPutAndRelease(t *testing.T) {
	t.Parallel()
	scope := testScope(t)
	put := storekit.EmbeddingPut{Scope: scope, RecordID: "r1", Profile: "p", ContentHash: goodHash, Vector: []float32{1}, WorkerID: "w1"}
	if err := storekit.CheckEmbeddingPut("test", put, 0); err != nil {
		t.Fatalf("valid put: %v", err)
	}
	rel := storekit.EmbeddingRelease{Scope: scope, RecordID: "r1", Profile: "p", ContentHash: goodHash, WorkerID: "w1", LeaseToken: 1, Reason: "timeout"}
	if err := storekit.CheckEmbeddingRelease("test", rel); err != nil {
		t.Fatalf("valid release: %v", err)
	}
	putWith := func(maxDims int, mutate func(*storekit.EmbeddingPut)) func() error {
		return func() error {
			p := put
			mutate(&p)
			return storekit.CheckEmbeddingPut("test", p, maxDims)
		}
	}
	relWith := func(mutate func(*storekit.EmbeddingRelease)) func() error {
		return func() error {
			r := rel
			mutate(&r)
			return storekit.CheckEmbeddingRelease("test", r)
		}
	}
	runRejections(t, []rejection{
		{"put scope", putWith(0, func(p *storekit.EmbeddingPut) { p.Scope = badScope }), memorykit.ErrInvalidScope, "subject_type", "user_scope_not_supported"},
		{"put record id", putWith(0, func(p *storekit.EmbeddingPut) { p.RecordID = "" }), memorykit.ErrInvalidInput, "record_id", "empty"},
		{"put profile", putWith(0, func(p *storekit.EmbeddingPut) { p.Profile = "a b" }), memorykit.ErrInvalidInput, "profile", "bad_character"},
		{"put hash", putWith(0, func(p *storekit.EmbeddingPut) { p.ContentHash = "sha256:00" }), memorykit.ErrInvalidInput, "content_hash", "malformed"},
		{"put worker", putWith(0, func(p *storekit.EmbeddingPut) { p.WorkerID = "" }), memorykit.ErrInvalidInput, "worker_id", "empty"},
		{"put vector", putWith(0, func(p *storekit.EmbeddingPut) { p.Vector = nil }), memorykit.ErrInvalidInput, "vector", "empty"},
		{"put dimensions", putWith(1, func(p *storekit.EmbeddingPut) { p.Vector = []float32{1, 2} }), memorykit.ErrInvalidInput, "vector", "too_many_dimensions"},
		{"release scope", relWith(func(r *storekit.EmbeddingRelease) { r.Scope = memorykit.Scope{} }), memorykit.ErrInvalidScope, "tenant_id", "empty"},
		{"release record id", relWith(func(r *storekit.EmbeddingRelease) { r.RecordID = "a b" }), memorykit.ErrInvalidInput, "record_id", "bad_character"},
		{"release profile", relWith(func(r *storekit.EmbeddingRelease) { r.Profile = "" }), memorykit.ErrInvalidInput, "profile", "bad_length"},
		{"release hash", relWith(func(r *storekit.EmbeddingRelease) { r.ContentHash = "" }), memorykit.ErrInvalidInput, "content_hash", "malformed"},
		{"release worker", relWith(func(r *storekit.EmbeddingRelease) { r.WorkerID = "a b" }), memorykit.ErrInvalidInput, "worker_id", "bad_character"},
		{"release reason", relWith(func(r *storekit.EmbeddingRelease) { r.Reason = "Bad Reason" }), memorykit.ErrInvalidInput, "reason_code", "bad_character"},
	})
}

func TestJobChecks(t *testing.T) {
	t.Parallel()
	g, scope := testGuard(t), testScope(t)
	ctx := context.Background()
	job := storekit.NewJob{ID: "j1", Scope: scope, Payload: "turn text", MaxAttempts: 3, MaxReaps: 3}
	if err := storekit.CheckJob(g, "test", job); err != nil {
		t.Fatalf("valid job: %v", err)
	}
	done := storekit.JobCompletion{JobID: "j1", WorkerID: "w1", LeaseToken: 1}
	if err := storekit.CheckJobCompletion(g, "test", done); err != nil {
		t.Fatalf("valid completion: %v", err)
	}
	fail := storekit.JobFailure{JobID: "j1", WorkerID: "w1", LeaseToken: 1, Reason: "timeout"}
	if err := storekit.CheckJobFailure("test", fail); err != nil {
		t.Fatalf("valid failure: %v", err)
	}
	if err := storekit.CheckJobHolder("test", "j1", "w1"); err != nil {
		t.Fatalf("valid holder: %v", err)
	}
	jobWith := func(mutate func(*storekit.NewJob)) func() error {
		return func() error {
			j := job
			mutate(&j)
			return storekit.CheckJob(g, "test", j)
		}
	}
	tooMany := make([]memorykit.NewRecord, validLimits().MaxListSize+1)
	runRejections(t, []rejection{
		{"job scope", jobWith(func(j *storekit.NewJob) { j.Scope = badScope }), memorykit.ErrInvalidScope, "subject_type", "user_scope_not_supported"},
		{"job id", jobWith(func(j *storekit.NewJob) { j.ID = "" }), memorykit.ErrInvalidInput, "id", "empty"},
		{"job attempts", jobWith(func(j *storekit.NewJob) { j.MaxAttempts = 0 }), memorykit.ErrInvalidInput, "max_attempts", "must_be_positive"},
		{"job payload empty", jobWith(func(j *storekit.NewJob) { j.Payload = "" }), memorykit.ErrInvalidInput, "payload", "empty"},
		{"job payload long", jobWith(func(j *storekit.NewJob) { j.Payload = strings.Repeat("p", 129) }), memorykit.ErrInvalidInput, "payload", "too_long"},
		{"holder job id", func() error { return storekit.CheckJobHolder("test", "", "w1") }, memorykit.ErrInvalidInput, "job_id", "empty"},
		{"holder worker id", func() error { return storekit.CheckJobHolder("test", "j1", "a b") }, memorykit.ErrInvalidInput, "worker_id", "bad_character"},
		{"completion job id", func() error {
			return storekit.CheckJobCompletion(g, "test", storekit.JobCompletion{JobID: "a b", WorkerID: "w1"})
		}, memorykit.ErrInvalidInput, "job_id", "bad_character"},
		{"completion worker id", func() error {
			return storekit.CheckJobCompletion(g, "test", storekit.JobCompletion{JobID: "j1"})
		}, memorykit.ErrInvalidInput, "worker_id", "empty"},
		{"completion size", func() error {
			return storekit.CheckJobCompletion(g, "test", storekit.JobCompletion{JobID: "j1", WorkerID: "w1", LeaseToken: 1, Candidates: tooMany})
		}, memorykit.ErrInvalidInput, "candidates", "above_max_list_size"},
		{"completion lease token", func() error {
			return storekit.CheckJobCompletion(g, "test", storekit.JobCompletion{JobID: "j1", WorkerID: "w1"})
		}, memorykit.ErrInvalidInput, "lease_token", "must_be_positive"},
		{"failure lease token", func() error {
			return storekit.CheckJobFailure("test", storekit.JobFailure{JobID: "j1", WorkerID: "w1", Reason: "x"})
		}, memorykit.ErrInvalidInput, "lease_token", "must_be_positive"},
		{"release lease token", func() error {
			return storekit.CheckJobRelease("test", storekit.JobRelease{JobID: "j1", WorkerID: "w1"})
		}, memorykit.ErrInvalidInput, "lease_token", "must_be_positive"},
		{"failure job id", func() error {
			return storekit.CheckJobFailure("test", storekit.JobFailure{WorkerID: "w1", Reason: "x"})
		}, memorykit.ErrInvalidInput, "job_id", "empty"},
		{"failure worker id", func() error {
			return storekit.CheckJobFailure("test", storekit.JobFailure{JobID: "j1", Reason: "x"})
		}, memorykit.ErrInvalidInput, "worker_id", "empty"},
		{"failure reason", func() error {
			return storekit.CheckJobFailure("test", storekit.JobFailure{JobID: "j1", WorkerID: "w1", LeaseToken: 1})
		}, memorykit.ErrInvalidInput, "reason_code", "bad_length"},
	})

	cand := memorykit.NewRecord{
		Scope: scope, Kind: memorykit.KindNote, Key: " A Key ", Content: "c", Status: memorykit.StatusCandidate,
		Actor:    memorykit.Actor{Kind: memorykit.ActorWorker, ID: "w1"},
		Metadata: map[string]string{"a": "1"}, Sources: []memorykit.Source{{Kind: "turn", Ref: "t1"}},
	}
	got, err := storekit.CheckCandidate(ctx, g, "test", 0, scope, cand)
	if err != nil || got.Key != "a key" {
		t.Fatalf("CheckCandidate() = %+v, %v", got, err)
	}
	got.Metadata["a"] = "changed"
	got.Sources[0].Ref = "changed"
	if cand.Metadata["a"] != "1" || cand.Sources[0].Ref != "t1" {
		t.Fatal("CheckCandidate's record shares metadata or sources with the input")
	}
	candWith := func(mutate func(*memorykit.NewRecord)) func() error {
		return func() error {
			c := cand
			mutate(&c)
			_, err := storekit.CheckCandidate(ctx, g, "test", 2, scope, c)
			return err
		}
	}
	other := scope
	other.SubjectID = "p2"
	runRejections(t, []rejection{
		{"candidate status", candWith(func(c *memorykit.NewRecord) { c.Status = memorykit.StatusActive }), memorykit.ErrInvalidInput, "candidates[2].status", "must_be_candidate"},
		{"candidate scope", candWith(func(c *memorykit.NewRecord) { c.Scope = other }), memorykit.ErrInvalidInput, "candidates[2].scope", "not_job_scope"},
		{"candidate content", candWith(func(c *memorykit.NewRecord) { c.Content = "SECRET" }), memorykit.ErrInvalidInput, "content", "content_rejected"},
	})
}

func TestStoreChecksKeepContentOutOfErrors(t *testing.T) {
	t.Parallel()
	g, scope := testGuard(t), testScope(t)
	_, err := storekit.CheckCandidate(context.Background(), g, "test", 0, scope, memorykit.NewRecord{
		Scope: scope, Kind: memorykit.KindNote, Key: "k", Content: "SECRET hunter2", Status: memorykit.StatusCandidate,
		Actor: memorykit.Actor{Kind: memorykit.ActorWorker, ID: "w1"},
	})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error = %v, want a rejection without the content", err)
	}
	if !errors.Is(err, memorykit.ErrInvalidInput) {
		t.Fatalf("error = %v, want ErrInvalidInput", err)
	}
}
