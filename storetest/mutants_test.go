package storetest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A mutant is memorystore with one deliberate bug. The suites must notice
// each one, in the case named by failCase.
type mutant struct {
	suite    func(*testing.T, storetest.Harness)
	failCase string
	wrap     func(s *memorystore.Store) storekit.Store
	// guard, when set, replaces the guard the suite hands to New.
	guard func(t *testing.T) *memorykit.WriteGuard
}

var mutants = map[string]mutant{
	"identity": {suite: storetest.RunAll, wrap: func(s *memorystore.Store) storekit.Store { return s }},
	"erase-keeps-content": {
		suite: storetest.RunLifecycleConformance, failCase: "EraseCanary",
		wrap: func(s *memorystore.Store) storekit.Store { return eraseKeeps{s} },
	},
	"full-text-threshold-ignored": {
		suite: storetest.RunFullTextRecallConformance, failCase: "ThresholdMoreThanHalf",
		wrap: func(s *memorystore.Store) storekit.Store { return noThreshold{s} },
	},
	"full-text-no-idf": {
		suite: storetest.RunFullTextRecallConformance, failCase: "IDFTieBreak",
		wrap: func(s *memorystore.Store) storekit.Store { return noIDF{s} },
	},
	"recall-shows-candidates": {
		suite: storetest.RunRecallConformance, failCase: "OnlyRecallableRecords",
		wrap: func(s *memorystore.Store) storekit.Store { return showsCandidates{s} },
	},
	"list-ignores-after-id": {
		suite: storetest.RunLifecycleConformance, failCase: "ListOrderFiltersPaging",
		wrap: func(s *memorystore.Store) storekit.Store { return ignoresAfter{s} },
	},
	"complete-job-not-atomic": {
		suite: storetest.RunJobConformance, failCase: "CompleteInvalidCandidate",
		wrap: func(s *memorystore.Store) storekit.Store { return notAtomic{s} },
	},
	"release-job-counts-attempt": {
		suite: storetest.RunJobConformance, failCase: "ReleaseJob",
		wrap: func(s *memorystore.Store) storekit.Store { return releaseCounts{s} },
	},
	"put-embedding-ignores-hash": {
		suite: storetest.RunEmbeddingConformance, failCase: "StaleAfterCorrect",
		wrap: func(s *memorystore.Store) storekit.Store { return ignoresHash{s} },
	},
	"put-embeddings-first-wins": {
		suite: storetest.RunEmbeddingConformance, failCase: "PutEmbeddingsAsSinglePuts",
		wrap: func(s *memorystore.Store) storekit.Store { return batchPutFirstWins{s} },
	},
	"get-crosses-scopes": {
		suite: storetest.RunIsolationConformance, failCase: "OtherScopeIsNotFound",
		wrap: func(s *memorystore.Store) storekit.Store { return &crossScope{Store: s} },
	},
	"batch-not-atomic": {
		suite: storetest.RunBatchConformance, failCase: "AllOrNothing",
		wrap: func(s *memorystore.Store) storekit.Store { return batchOneByOne{s} },
	},
	"batch-supersedes-nothing-inside": {
		suite: storetest.RunBatchConformance, failCase: "Supersedes",
		wrap: func(s *memorystore.Store) storekit.Store { return batchLastWins{s} },
	},
	"error-quotes-content": {
		suite: storetest.RunBadInputConformance, failCase: "Create",
		wrap: func(s *memorystore.Store) storekit.Store { return quotesContent{s} },
	},
	"validator-bypassed": {
		suite: storetest.RunBadInputConformance, failCase: "Create",
		wrap: func(s *memorystore.Store) storekit.Store { return s },
		guard: func(t *testing.T) *memorykit.WriteGuard {
			g, err := memorykit.NewWriteGuard(storetest.Limits(), storetest.AllowAllValidator{})
			if err != nil {
				t.Fatal(err)
			}
			return g
		},
	},
}

const mutantEnv = "STORETEST_MUTANT"

func mutantHarness(m mutant) storetest.Harness {
	return storetest.Harness{
		New: func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) storekit.Store {
			if m.guard != nil {
				guard = m.guard(t)
			}
			s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: storetest.NewTombstones(t)})
			if err != nil {
				t.Fatal(err)
			}
			return m.wrap(s)
		},
		Dump: func(t *testing.T, s storekit.Store) string {
			return s.(interface{ Dump() string }).Dump()
		},
	}
}

// TestMutantsAreCaught runs each mutant's suite in a child test process
// and requires it to fail in the expected case (and the identity mutant to
// pass).
func TestMutantsAreCaught(t *testing.T) {
	if name := os.Getenv(mutantEnv); name != "" {
		m, ok := mutants[name]
		if !ok {
			t.Fatalf("unknown mutant %q", name)
		}
		m.suite(t, mutantHarness(m))
		return
	}
	if testing.Short() {
		t.Skip("spawns one test process per mutant")
	}
	names := make([]string, 0, len(mutants))
	for name := range mutants {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := mutants[name]
			cmd := exec.Command(os.Args[0], "-test.run=^TestMutantsAreCaught$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), mutantEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if m.failCase == "" {
				if err != nil {
					t.Fatalf("the suites fail on unmodified memorystore:\n%s", out)
				}
				return
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("mutant %s: suites did not fail (err %v):\n%s", name, err, tail(out))
			}
			want := "--- FAIL: TestMutantsAreCaught/" + m.failCase + " "
			if !strings.Contains(string(out), want) {
				t.Fatalf("mutant %s: case %s did not fail:\n%s", name, m.failCase, tail(out))
			}
		})
	}
}

func tail(out []byte) string {
	lines := strings.Split(string(out), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	return strings.Join(lines, "\n")
}

// eraseKeeps reports an erase but only forgets nothing: content stays.
type eraseKeeps struct{ *memorystore.Store }

func (m eraseKeeps) Erase(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	r, err := m.Get(ctx, t.Scope, t.ID)
	if err != nil {
		return r, err
	}
	r.Status = memorykit.StatusErased
	return r, nil
}

// noThreshold keeps every full-text match.
type noThreshold struct{ *memorystore.Store }

func (m noThreshold) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	res, err := m.Store.Recall(ctx, q)
	if err != nil {
		return res, err
	}
	for _, h := range res.FullTextBelow {
		h.Rank = len(res.FullText) + 1
		res.FullText = append(res.FullText, h)
		if r, err := m.Get(ctx, q.Scope, h.ID); err == nil {
			res.Records[h.ID] = r
		}
	}
	res.FullTextBelow = nil
	return res, nil
}

// noIDF ranks equal match counts by recency only.
type noIDF struct{ *memorystore.Store }

func (m noIDF) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	res, err := m.Store.Recall(ctx, q)
	if err != nil {
		return res, err
	}
	sort.SliceStable(res.FullText, func(i, j int) bool {
		a, b := res.FullText[i], res.FullText[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		ra, rb := res.Records[a.ID], res.Records[b.ID]
		if !ra.UpdatedAt.Equal(rb.UpdatedAt) {
			return ra.UpdatedAt.After(rb.UpdatedAt)
		}
		return a.ID < b.ID
	})
	for i := range res.FullText {
		res.FullText[i].Rank = i + 1
	}
	return res, nil
}

// showsCandidates adds candidates to the exact channel.
type showsCandidates struct{ *memorystore.Store }

func (m showsCandidates) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	res, err := m.Store.Recall(ctx, q)
	if err != nil {
		return res, err
	}
	for _, k := range q.ExactKeys {
		cs, err := m.List(ctx, storekit.ListFilter{Scope: q.Scope, Key: k, Limit: 5, Statuses: []memorykit.Status{memorykit.StatusCandidate}})
		if err != nil {
			continue
		}
		for _, c := range cs {
			res.Exact = append(res.Exact, storekit.Hit{ID: c.ID, Rank: len(res.Exact) + 1, Score: 1})
			res.Records[c.ID] = c
		}
	}
	return res, nil
}

// ignoresAfter pages from the start every time.
type ignoresAfter struct{ *memorystore.Store }

func (m ignoresAfter) List(ctx context.Context, f storekit.ListFilter) ([]memorykit.Record, error) {
	f.AfterID = ""
	return m.Store.List(ctx, f)
}

// notAtomic stores candidates before checking the completion.
type notAtomic struct{ *memorystore.Store }

func (m notAtomic) CompleteJob(ctx context.Context, c storekit.JobCompletion) (int, error) {
	for _, in := range c.Candidates {
		_, _ = m.Create(ctx, in)
	}
	return m.Store.CompleteJob(ctx, c)
}

// releaseCounts turns a release into a failed attempt.
type releaseCounts struct{ *memorystore.Store }

func (m releaseCounts) ReleaseJob(ctx context.Context, r storekit.JobRelease) error {
	_, err := m.FailJob(ctx, storekit.JobFailure{JobID: r.JobID, WorkerID: r.WorkerID, LeaseToken: r.LeaseToken, Reason: "released", RetryAt: time.Time{}})
	return err
}

// ignoresHash stores stale vectors against the current content.
type ignoresHash struct{ *memorystore.Store }

func (m ignoresHash) PutEmbedding(ctx context.Context, p storekit.EmbeddingPut) error {
	err := m.Store.PutEmbedding(ctx, p)
	if errors.Is(err, memorykit.ErrStale) {
		if r, gerr := m.Get(ctx, p.Scope, p.RecordID); gerr == nil && r.Status == memorykit.StatusActive {
			p.ContentHash = r.ContentHash
			return m.Store.PutEmbedding(ctx, p)
		}
	}
	return err
}

// batchPutFirstWins applies only the first put of a record in a
// PutEmbeddings call, reporting the later ones as stored.
type batchPutFirstWins struct{ *memorystore.Store }

func (m batchPutFirstWins) PutEmbeddings(ctx context.Context, puts []storekit.EmbeddingPut) ([]error, error) {
	seen := make(map[string]bool)
	var keep []storekit.EmbeddingPut
	var at []int
	errs := make([]error, len(puts))
	for i, p := range puts {
		if !seen[p.RecordID] {
			seen[p.RecordID] = true
			keep = append(keep, p)
			at = append(at, i)
		}
	}
	kept, err := m.Store.PutEmbeddings(ctx, keep)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		errs[i] = kept[j]
	}
	return errs, nil
}

// crossScope answers Get from any Scope it has seen.
type crossScope struct {
	*memorystore.Store
	mu     sync.Mutex
	scopes []memorykit.Scope
}

func (m *crossScope) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	m.mu.Lock()
	m.scopes = append(m.scopes, in.Scope)
	m.mu.Unlock()
	return m.Store.Create(ctx, in)
}

func (m *crossScope) Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error) {
	r, err := m.Store.Get(ctx, scope, id)
	if !errors.Is(err, memorykit.ErrNotFound) {
		return r, err
	}
	m.mu.Lock()
	scopes := append([]memorykit.Scope(nil), m.scopes...)
	m.mu.Unlock()
	for _, s := range scopes {
		if r, err2 := m.Store.Get(ctx, s, id); err2 == nil {
			return r, nil
		}
	}
	return r, err
}

// quotesContent puts the rejected content into the error message.
type quotesContent struct{ *memorystore.Store }

func (m quotesContent) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	r, err := m.Store.Create(ctx, in)
	if err != nil {
		var me *memorykit.Error
		if errors.As(err, &me) {
			cp := *me
			cp.Reason = fmt.Sprintf("%s: %q", me.Reason, in.Content)
			return r, &cp
		}
	}
	return r, err
}

// batchOneByOne creates a batch's records one Create at a time, keeping
// those created before a failure.
type batchOneByOne struct{ *memorystore.Store }

func (m batchOneByOne) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	var out []memorykit.Record
	for i, it := range items {
		r, err := m.Create(ctx, it.Record)
		if err != nil {
			return nil, storekit.BatchItemError(i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// batchLastWins creates only the last active item of each key, as if a
// batch were deduplicated by key before writing.
type batchLastWins struct{ *memorystore.Store }

func (m batchLastWins) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	last := map[string]int{}
	for i, it := range items {
		if it.Record.Status == memorykit.StatusActive {
			last[string(it.Record.Kind)+"/"+storekit.NormalizeKey(it.Record.Key)] = i
		}
	}
	var keep []storekit.BatchItem
	for i, it := range items {
		k := string(it.Record.Kind) + "/" + storekit.NormalizeKey(it.Record.Key)
		if j, ok := last[k]; !ok || j == i || it.Record.Status != memorykit.StatusActive {
			keep = append(keep, it)
		}
	}
	out, err := m.Store.CreateBatch(ctx, keep)
	if err != nil {
		return nil, err
	}
	for len(out) < len(items) {
		out = append(out, out[len(out)-1])
	}
	return out, nil
}
