package recall_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

func memoryBackend() testkit.Backend { return testkit.Backends()[0] }

func TestNewRefusesIncompleteConfig(t *testing.T) {
	clk := testkit.NewClock()
	good := func() recall.Config {
		return recall.Config{
			Store: testkit.MemStore(t, clk), Embedder: embedder.NewLocal(), Authorizer: testkit.NewAuthorizer(),
			Policy: testkit.Policy(), Clock: clk, Events: &testkit.Sink{}, Logger: zap.NewNop(),
		}
	}
	if _, err := recall.New(good()); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	other := testkit.NewFaultEmbedder(embedder.NewLocal())
	cases := []struct {
		name string
		edit func(*recall.Config)
		want error
	}{
		{"nil store", func(c *recall.Config) { c.Store = nil }, memorykit.ErrInvalidConfig},
		{"nil embedder", func(c *recall.Config) { c.Embedder = nil }, memorykit.ErrInvalidConfig},
		{"nil authorizer", func(c *recall.Config) { c.Authorizer = nil }, memorykit.ErrInvalidConfig},
		{"nil clock", func(c *recall.Config) { c.Clock = nil }, memorykit.ErrInvalidConfig},
		{"nil events", func(c *recall.Config) { c.Events = nil }, memorykit.ErrInvalidConfig},
		{"nil logger", func(c *recall.Config) { c.Logger = nil }, memorykit.ErrInvalidConfig},
		{"zero policy", func(c *recall.Config) { c.Policy = memorykit.RecallPolicy{} }, memorykit.ErrInvalidPolicy},
		{"partial policy", func(c *recall.Config) { c.Policy.Deadline = 0 }, memorykit.ErrInvalidPolicy},
		{"policy without weights", func(c *recall.Config) { c.Policy.VectorWeight = 0 }, memorykit.ErrInvalidPolicy},
		{"profile mismatch", func(c *recall.Config) { c.Policy.EmbeddingProfile = "other/model-v2" }, memorykit.ErrInvalidConfig},
		{"dimension mismatch", func(c *recall.Config) { c.Policy.EmbeddingDimension = 768 }, memorykit.ErrInvalidConfig},
		{"wrapped embedder still checked", func(c *recall.Config) { c.Embedder = other; c.Policy.EmbeddingDimension = 12 }, memorykit.ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := good()
			c.edit(&cfg)
			eng, err := recall.New(cfg)
			if !errors.Is(err, c.want) || eng != nil {
				t.Fatalf("New = %v, %v; want nil engine and %v", eng, err, c.want)
			}
		})
	}
}

func TestRecallFusesThreeChannels(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		b := setup(t, be)
		region := b.add(t, memorykit.KindFact, "deploy region", "The API deploys to eu-west-1 in the deploy region plan")
		other := b.add(t, memorykit.KindNote, "lunch", "Team lunch is on Fridays")
		res := b.recall(t, b.req("deploy region"))
		if len(res.Entries) == 0 || res.Entries[0].ID != region.ID {
			t.Fatalf("entries %v, want %s first", entryIDs(res), region.ID)
		}
		tr, ok := res.Trace.Record(region.ID)
		if !ok || tr.Outcome != recall.Kept {
			t.Fatalf("trace of %s = %+v", region.ID, tr)
		}
		for _, ch := range []memorykit.Channel{memorykit.ChannelExact, memorykit.ChannelFullText, memorykit.ChannelVector} {
			if tr.Ranks[ch] != 1 {
				t.Errorf("rank in %s = %d, want 1 (ranks %v)", ch, tr.Ranks[ch], tr.Ranks)
			}
		}
		p := b.policy
		want := p.ExactWeight/float64(p.RRFK+1) + p.FullTextWeight/float64(p.RRFK+1) + p.VectorWeight/float64(p.RRFK+1)
		if math.Abs(tr.Score-want) > 1e-12 || math.Abs(res.Entries[0].Score-want) > 1e-12 {
			t.Fatalf("fused score %v / %v, want %v", tr.Score, res.Entries[0].Score, want)
		}
		// The unrelated record comes only from the vector channel (every
		// embedded record has a cosine similarity) and ranks below.
		if ot, ok := res.Trace.Record(other.ID); ok {
			if _, ft := ot.Ranks[memorykit.ChannelFullText]; ft {
				t.Fatalf("unrelated record matched full-text: %+v", ot)
			}
			if ot.Score >= tr.Score {
				t.Fatalf("unrelated record outranks the match: %+v", ot)
			}
		}
		if len(b.sink.OfKind(memorykit.EventRecallCompleted)) != 1 {
			t.Fatalf("events %+v, want one recall.completed", b.sink.Events())
		}
	})
}

func TestRecallNeverReturnsHiddenRecords(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		b := setup(t, be)
		hidden := testkit.PlantHidden(t, b.store, b.emb, b.clk, b.scope, "zephyr")
		res := b.recall(t, b.req("zephyr hidden noted"))
		for name, r := range hidden {
			if contains(entryIDs(res), r.ID) {
				t.Errorf("%s record %s was recalled", name, r.ID)
			}
			if _, ok := res.Trace.Record(r.ID); ok {
				t.Errorf("%s record %s is in the trace: the store returned it", name, r.ID)
			}
		}
		for _, e := range res.Entries {
			if strings.Contains(e.Content, "hidden-") {
				t.Errorf("entry %s holds hidden content", e.ID)
			}
		}
		if len(res.Entries) != 1 || !strings.Contains(res.Entries[0].Content, "replacement") {
			t.Fatalf("want only the active replacement, got %+v", res.Entries)
		}
		// The not-yet-effective record becomes recallable once effective.
		b.clk.Add(2 * time.Hour)
		res = b.recall(t, b.req("zephyr hidden noted"))
		if !contains(entryIDs(res), hidden["not_yet_effective"].ID) {
			t.Fatalf("record did not become recallable once effective: %v", entryIDs(res))
		}
	})
}

func TestRecallFailsClosedOnAuthorizationAndScope(t *testing.T) {
	var fs *testkit.FaultStore
	b := setup(t, memoryBackend(), withStore(func(s storekit.RecallStore) storekit.RecallStore {
		fs = &testkit.FaultStore{Inner: s}
		return fs
	}))
	b.add(t, memorykit.KindFact, "deploy region", "eu-west-1")
	otherProject := testkit.Scope(t, "tenant-a", "project-2")
	userScope := memorykit.Scope{TenantID: "tenant-a", SubjectType: memorykit.SubjectUser, SubjectID: "u1"}
	cases := []struct {
		name string
		req  recall.Request
		want error
	}{
		{"no grant for project", recall.Request{Principal: b.reader, Scope: otherProject, Query: "deploy"}, memorykit.ErrForbidden},
		{"no grant for actor", recall.Request{Principal: testkit.Principal("tenant-a", memorykit.ActorModel, "model-2"), Scope: b.scope, Query: "deploy"}, memorykit.ErrForbidden},
		{"tenant mismatch", recall.Request{Principal: testkit.Principal("tenant-b", memorykit.ActorModel, "model-1"), Scope: b.scope, Query: "deploy"}, memorykit.ErrForbidden},
		{"user scope", recall.Request{Principal: b.reader, Scope: userScope, Query: "deploy"}, memorykit.ErrInvalidScope},
		{"zero scope", recall.Request{Principal: b.reader, Query: "deploy"}, memorykit.ErrInvalidScope},
		{"invalid principal", recall.Request{Scope: b.scope, Query: "deploy"}, memorykit.ErrForbidden},
		{"negative cap", recall.Request{Principal: b.reader, Scope: b.scope, Query: "deploy", MaxItems: -1}, memorykit.ErrInvalidInput},
		{"negative reserve", recall.Request{Principal: b.reader, Scope: b.scope, Query: "deploy", Reserve: -1}, memorykit.ErrInvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := b.eng.Recall(b.ctx, c.req)
			if !errors.Is(err, c.want) {
				t.Fatalf("Recall err = %v, want %v", err, c.want)
			}
			if len(res.Entries) != 0 || res.Degraded {
				t.Fatalf("a refused recall returned %+v", res)
			}
		})
	}
	if fs.Calls() != 0 {
		t.Fatalf("the store ran %d times for refused recalls", fs.Calls())
	}
	if n := len(b.sink.OfKind(memorykit.EventRecallDegraded)); n != 0 {
		t.Fatalf("a fail-closed recall was reported as degradation (%d events)", n)
	}
}

func TestRecallVectorEmbedderFailureDropsOnlyVector(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		fe := testkit.NewFaultEmbedder(embedder.NewLocal())
		fe.Err = recoverable("rate_limited")
		b := setup(t, be, withEmbedder(fe))
		r := b.add(t, memorykit.KindFact, "deploy region", "eu-west-1 is the deploy region")
		res := b.recall(t, b.req("deploy region"))
		if res.Degraded || !contains(entryIDs(res), r.ID) {
			t.Fatalf("exact/full-text recall lost: %+v", res)
		}
		ch, _ := res.Trace.Channel(memorykit.ChannelVector)
		if !ch.Degraded || ch.Reason != "rate_limited" {
			t.Fatalf("vector channel trace %+v", ch)
		}
		tr, _ := res.Trace.Record(r.ID)
		if _, ok := tr.Ranks[memorykit.ChannelVector]; ok {
			t.Fatalf("vector rank present after the channel failed: %+v", tr)
		}
		evs := b.sink.OfKind(memorykit.EventRecallDegraded)
		if len(evs) != 1 || evs[0].Channel != memorykit.ChannelVector || evs[0].Reason != "rate_limited" || evs[0].SubjectID != "project-1" {
			t.Fatalf("degradation events %+v", evs)
		}
	})
}

func TestRecallStoreVectorErrDropsOnlyVector(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		b := setup(t, be, withStore(func(s storekit.RecallStore) storekit.RecallStore {
			return &testkit.FaultStore{Inner: s, VectorErr: recoverable("vector_timeout")}
		}))
		match := b.add(t, memorykit.KindFact, "deploy region", "eu-west-1 is the deploy region")
		vecOnly := b.add(t, memorykit.KindNote, "lunch", "Team lunch is on Fridays")
		res := b.recall(t, b.req("deploy region"))
		if !contains(entryIDs(res), match.ID) || contains(entryIDs(res), vecOnly.ID) {
			t.Fatalf("entries %v", entryIDs(res))
		}
		tr, ok := res.Trace.Record(vecOnly.ID)
		if !ok || tr.Outcome != recall.DroppedChannelDegraded || tr.Ranks[memorykit.ChannelVector] == 0 {
			t.Fatalf("vector-only record trace %+v", tr)
		}
		evs := b.sink.OfKind(memorykit.EventRecallDegraded)
		if len(evs) != 1 || evs[0].Channel != memorykit.ChannelVector || !contains(evs[0].RecordIDs, vecOnly.ID) {
			t.Fatalf("degradation events %+v", evs)
		}
	})
}

func TestRecallFailsClosedOnNonRecoverableFailures(t *testing.T) {
	integrity := memorykit.NewError("test.double", memorykit.ErrIntegrity, "broken")
	badShape := testkit.NewFaultEmbedder(embedder.NewLocal())
	badShape.Vectors = [][]float32{{1, 2, 3}}
	nanVec := testkit.NewFaultEmbedder(embedder.NewLocal())
	nanVec.Vectors = [][]float32{make([]float32, embedder.LocalDimension)}
	nanVec.Vectors[0][0] = float32(math.NaN())
	embFail := testkit.NewFaultEmbedder(embedder.NewLocal())
	embFail.Err = memorykit.NewError("test.double", memorykit.ErrInvalidInput, "bad")
	cases := []struct {
		name string
		opt  option
		want error
	}{
		{"store integrity error", withStore(func(s storekit.RecallStore) storekit.RecallStore {
			return &testkit.FaultStore{Inner: s, Err: integrity}
		}), memorykit.ErrIntegrity},
		{"store untyped error", withStore(func(s storekit.RecallStore) storekit.RecallStore {
			return &testkit.FaultStore{Inner: s, Err: errors.New("boom")}
		}), memorykit.ErrUnavailable},
		{"store non-recoverable vector error", withStore(func(s storekit.RecallStore) storekit.RecallStore {
			return &testkit.FaultStore{Inner: s, VectorErr: integrity}
		}), memorykit.ErrIntegrity},
		{"embedder non-recoverable error", withEmbedder(embFail), memorykit.ErrInvalidInput},
		{"embedder wrong dimension", withEmbedder(badShape), memorykit.ErrIntegrity},
		{"embedder NaN", withEmbedder(nanVec), memorykit.ErrIntegrity},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := setup(t, memoryBackend(), c.opt)
			b.add(t, memorykit.KindFact, "deploy region", "eu-west-1")
			res, err := b.eng.Recall(b.ctx, b.req("deploy region"))
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if res.Degraded || len(res.Entries) != 0 {
				t.Fatalf("failed recall returned %+v", res)
			}
			if strings.Contains(err.Error(), "boom") {
				t.Fatalf("error prints its cause: %v", err)
			}
			// Every fail-closed path leaves through one exit, which logs
			// the failure once.
			if n := b.logs.FilterMessage("recall failed closed").Len(); n != 1 {
				t.Fatalf("%d failed-closed log entries, want 1", n)
			}
		})
	}
}

// TestRecallFailureLogs: an unauthorised recall fails closed and is
// logged once; a recall admission turned away (ErrOverloaded) or one whose
// caller's context ended is returned without a failed-closed log entry.
func TestRecallFailureLogs(t *testing.T) {
	b := setup(t, memoryBackend())
	other := b.req("deploy region")
	other.Principal = testkit.Principal("tenant-a", memorykit.ActorModel, "model-2")
	if _, err := b.eng.Recall(b.ctx, other); err == nil {
		t.Fatal("an unauthorised recall succeeded")
	}
	if n := b.logs.FilterMessage("recall failed closed").Len(); n != 1 {
		t.Fatalf("unauthorised: %d failed-closed log entries, want 1", n)
	}

	over := setup(t, memoryBackend(), withStore(func(s storekit.RecallStore) storekit.RecallStore {
		return &testkit.FaultStore{Inner: s, Err: memorykit.NewError("test.admission", memorykit.ErrOverloaded, "overloaded")}
	}))
	if _, err := over.eng.Recall(over.ctx, over.req("deploy region")); !errors.Is(err, memorykit.ErrOverloaded) {
		t.Fatalf("overloaded store: %v", err)
	}
	if n := over.logs.FilterMessage("recall failed closed").Len(); n != 0 {
		t.Fatalf("overloaded: %d failed-closed log entries, want 0", n)
	}

	blocked := testkit.NewFaultEmbedder(embedder.NewLocal())
	blocked.Block = true
	gone := setup(t, memoryBackend(), withEmbedder(blocked))
	ctx, cancel := context.WithCancel(gone.ctx)
	go func() {
		select {
		case <-blocked.Blocked():
		case <-time.After(testkit.RecvLimit): // a guard; the recall below then fails the test
		}
		cancel()
	}()
	if _, err := gone.eng.Recall(ctx, gone.req("deploy region")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled recall: %v", err)
	}
	if n := gone.logs.FilterMessage("recall failed closed").Len(); n != 0 {
		t.Fatalf("cancelled: %d failed-closed log entries, want 0", n)
	}
}

func TestRecallWholeStoreRecoverableFailureDegrades(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		b := setup(t, be, withStore(func(s storekit.RecallStore) storekit.RecallStore {
			return &testkit.FaultStore{Inner: s, Err: memorykit.Recoverable(errors.New("connection reset"))}
		}))
		b.add(t, memorykit.KindFact, "deploy region", "eu-west-1")
		res, err := b.eng.Recall(b.ctx, b.req("deploy region"))
		if err != nil {
			t.Fatalf("recoverable store failure failed the turn: %v", err)
		}
		if !res.Degraded || len(res.Entries) != 0 || res.Trace.Reason != "store_unavailable" {
			t.Fatalf("result %+v", res)
		}
		evs := b.sink.OfKind(memorykit.EventRecallDegraded)
		if len(evs) != 1 || evs[0].Reason != "store_unavailable" || evs[0].Channel != "" || evs[0].TenantID != "tenant-a" {
			t.Fatalf("events %+v", evs)
		}
	})
}

func TestRecallFailsClosedOnStoreIntegrity(t *testing.T) {
	type edit func(b *bundle, other memorykit.Record, res *storekit.RecallResult)
	cases := []struct {
		name string
		edit edit
	}{
		{"record from another project", func(_ *bundle, other memorykit.Record, res *storekit.RecallResult) {
			for id, r := range res.Records {
				r.Scope = other.Scope
				res.Records[id] = r
				return
			}
		}},
		{"candidate record", func(_ *bundle, _ memorykit.Record, res *storekit.RecallResult) {
			for id, r := range res.Records {
				r.Status = memorykit.StatusCandidate
				res.Records[id] = r
			}
		}},
		{"erased record", func(_ *bundle, _ memorykit.Record, res *storekit.RecallResult) {
			for id, r := range res.Records {
				r.Status = memorykit.StatusErased
				res.Records[id] = r
			}
		}},
		{"not yet effective", func(b *bundle, _ memorykit.Record, res *storekit.RecallResult) {
			for id, r := range res.Records {
				r.EffectiveFrom = b.clk.Now().Add(time.Minute)
				res.Records[id] = r
			}
		}},
		{"expired", func(b *bundle, _ memorykit.Record, res *storekit.RecallResult) {
			for id, r := range res.Records {
				r.EffectiveUntil = b.clk.Now().Add(-time.Minute)
				res.Records[id] = r
			}
		}},
		{"hit without record", func(_ *bundle, _ memorykit.Record, res *storekit.RecallResult) {
			res.Exact = append(res.Exact, storekit.Hit{ID: "mem_ghost", Rank: len(res.Exact) + 1})
		}},
		{"record id mismatch", func(_ *bundle, other memorykit.Record, res *storekit.RecallResult) {
			for id := range res.Records {
				res.Records[id] = other
				return
			}
		}},
		{"unnamed record", func(_ *bundle, other memorykit.Record, res *storekit.RecallResult) {
			o := other
			o.Scope = res.Records[res.Exact[0].ID].Scope
			res.Records[o.ID] = o
		}},
		{"duplicate hit", func(_ *bundle, _ memorykit.Record, res *storekit.RecallResult) {
			res.FullText = append(res.FullText, storekit.Hit{ID: res.FullText[0].ID, Rank: len(res.FullText) + 1})
		}},
		{"bad rank", func(_ *bundle, _ memorykit.Record, res *storekit.RecallResult) {
			res.Exact[0].Rank = 7
		}},
		{"over limit", func(b *bundle, _ memorykit.Record, res *storekit.RecallResult) {
			id := res.Exact[0].ID
			res.Exact = nil
			for i := 0; i <= b.policy.ExactLimit; i++ {
				res.Exact = append(res.Exact, storekit.Hit{ID: id, Rank: i + 1})
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var (
				bp    *bundle
				other memorykit.Record
			)
			b := setup(t, memoryBackend(), withStore(func(s storekit.RecallStore) storekit.RecallStore {
				return &testkit.FaultStore{Inner: s, Edit: func(res *storekit.RecallResult) { c.edit(bp, other, res) }}
			}))
			bp = b
			b.add(t, memorykit.KindFact, "deploy region", "eu-west-1 deploy region")
			other = testkit.Create(t, b.store, testkit.Scope(t, "tenant-a", "project-9"), memorykit.KindFact, "deploy region", "secret other project")
			res, err := b.eng.Recall(b.ctx, b.req("deploy region"))
			if !errors.Is(err, memorykit.ErrIntegrity) {
				t.Fatalf("err = %v, want ErrIntegrity", err)
			}
			if len(res.Entries) != 0 || res.Degraded {
				t.Fatalf("integrity failure returned %+v", res)
			}
		})
	}
}

// recallAsync runs Recall in a goroutine and returns a channel with its
// outcome.
type outcome struct {
	res recall.Result
	err error
}

func recallAsync(ctx context.Context, b *bundle, r recall.Request) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := b.eng.Recall(ctx, r)
		ch <- outcome{res, err}
	}()
	return ch
}

func TestRecallDeadlineWhileStoreBlocksDegrades(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		var bs *testkit.BlockingStore
		b := setup(t, be, withStore(func(s storekit.RecallStore) storekit.RecallStore {
			bs = testkit.NewBlockingStore(s, false)
			return bs
		}))
		b.add(t, memorykit.KindFact, "deploy region", "eu-west-1")
		done := recallAsync(b.ctx, b, b.req("deploy region"))
		testkit.Recv(t, bs.Blocked(), "the blocked call")
		b.clk.Add(b.policy.Deadline - time.Millisecond)
		select {
		case o := <-done:
			t.Fatalf("recall ended before its deadline: %+v %v", o.res, o.err)
		default:
		}
		b.clk.Add(time.Millisecond)
		o := testkit.Recv(t, done, "the recall's outcome")
		if o.err != nil {
			t.Fatalf("deadline failed the turn: %v", o.err)
		}
		if !o.res.Degraded || o.res.Trace.Reason != "deadline" || len(o.res.Entries) != 0 {
			t.Fatalf("result %+v", o.res)
		}
		evs := b.sink.OfKind(memorykit.EventRecallDegraded)
		if len(evs) != 1 || evs[0].Reason != "deadline" {
			t.Fatalf("events %+v", evs)
		}
	})
}

func TestRecallDeadlinePassedBeforeLateAnswerDropsEverything(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		var bs *testkit.BlockingStore
		b := setup(t, be, withStore(func(s storekit.RecallStore) storekit.RecallStore {
			bs = testkit.NewBlockingStore(s, true)
			return bs
		}))
		r := b.add(t, memorykit.KindFact, "deploy region", "eu-west-1 deploy region")
		done := recallAsync(b.ctx, b, b.req("deploy region"))
		testkit.Recv(t, bs.Blocked(), "the blocked call")
		b.clk.Add(b.policy.Deadline)
		o := testkit.Recv(t, done, "the recall's outcome")
		if o.err != nil || !o.res.Degraded || len(o.res.Entries) != 0 {
			t.Fatalf("late answer used: %+v, %v", o.res, o.err)
		}
		tr, ok := o.res.Trace.Record(r.ID)
		if !ok || tr.Outcome != recall.DroppedDeadline {
			t.Fatalf("trace %+v", o.res.Trace.Records)
		}
		// The dropped record keeps the ranks the store gave it.
		if len(o.res.Trace.Records) != 1 || tr.Ranks[memorykit.ChannelExact] != 1 || tr.Ranks[memorykit.ChannelFullText] != 1 {
			t.Fatalf("trace ranks %+v", o.res.Trace.Records)
		}
	})
}

func TestRecallDeadlineWhileEmbeddingDegradesWithoutStore(t *testing.T) {
	fe := testkit.NewFaultEmbedder(embedder.NewLocal())
	fe.Block = true
	var fs *testkit.FaultStore
	b := setup(t, memoryBackend(), withEmbedder(fe), withStore(func(s storekit.RecallStore) storekit.RecallStore {
		fs = &testkit.FaultStore{Inner: s}
		return fs
	}))
	done := recallAsync(b.ctx, b, b.req("deploy region"))
	testkit.Recv(t, fe.Blocked(), "the blocked call")
	b.clk.Add(b.policy.Deadline)
	o := testkit.Recv(t, done, "the recall's outcome")
	if o.err != nil || !o.res.Degraded || o.res.Trace.Reason != "deadline" {
		t.Fatalf("result %+v, err %v", o.res, o.err)
	}
	ch, _ := o.res.Trace.Channel(memorykit.ChannelVector)
	if !ch.Degraded || ch.Reason != "deadline" {
		t.Fatalf("vector channel %+v", ch)
	}
	if fs.Calls() != 0 {
		t.Fatal("the store ran after the deadline passed")
	}
}

func TestRecallCallerCancellationIsAnError(t *testing.T) {
	var bs *testkit.BlockingStore
	b := setup(t, memoryBackend(), withStore(func(s storekit.RecallStore) storekit.RecallStore {
		bs = testkit.NewBlockingStore(s, false)
		return bs
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := recallAsync(ctx, b, b.req("deploy region"))
	testkit.Recv(t, bs.Blocked(), "the blocked call")
	cancel()
	o := testkit.Recv(t, done, "the recall's outcome")
	if !errors.Is(o.err, context.Canceled) || o.res.Degraded {
		t.Fatalf("caller cancellation: %+v, %v", o.res, o.err)
	}
	if n := len(b.sink.OfKind(memorykit.EventRecallDegraded)); n != 0 {
		t.Fatalf("caller cancellation reported as degradation")
	}
	// A context already done never reaches the store.
	if _, err := b.eng.Recall(ctx, b.req("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: %v", err)
	}
}

func TestRecallKeepsLastQueryRunes(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		fe := testkit.NewFaultEmbedder(embedder.NewLocal())
		b := setup(t, be, withEmbedder(fe), withPolicy(func(p *memorykit.RecallPolicy) { p.MaxQueryRunes = 40 }))
		head := b.add(t, memorykit.KindFact, "alpha", "alpha is the first word")
		tail := b.add(t, memorykit.KindFact, "omega", "omega is the last word")
		query := "alpha " + strings.Repeat("界", 200) + " omega"
		res := b.recall(t, b.req(query))
		if !res.Trace.QueryCut || res.Trace.QueryRunes != 40 {
			t.Fatalf("trace query %d runes cut=%v", res.Trace.QueryRunes, res.Trace.QueryCut)
		}
		if !contains(entryIDs(res), tail.ID) {
			t.Fatalf("the query's tail was lost: %v", entryIDs(res))
		}
		if tr, _ := res.Trace.Record(head.ID); tr.Ranks[memorykit.ChannelExact] != 0 || tr.Ranks[memorykit.ChannelFullText] != 0 {
			t.Fatalf("the cut head of the query still matched: %+v", tr)
		}
		texts := fe.Texts()
		if len(texts) != 1 || len([]rune(texts[0])) != 40 || !strings.HasSuffix(texts[0], "omega") {
			t.Fatalf("embedded query %q", texts)
		}
	})
}

func TestRecallItemBudgetAndTruncation(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		b := setup(t, be, withPolicy(func(p *memorykit.RecallPolicy) { p.MaxItems = 3; p.MaxEntryRunes = 30 }))
		for i := 0; i < 6; i++ {
			b.add(t, memorykit.KindNote, fmt.Sprintf("cobalt %d", i), fmt.Sprintf("cobalt fact number %d with a rather long tail of words", i))
		}
		res := b.recall(t, b.req("cobalt"))
		if len(res.Entries) != 3 {
			t.Fatalf("kept %d, want 3", len(res.Entries))
		}
		if res.Trace.Count(recall.DroppedItemBudget) != 3 {
			t.Fatalf("trace %+v", res.Trace.Records)
		}
		for _, e := range res.Entries {
			if len([]rune(e.Content)) > 30 || !e.Truncated {
				t.Fatalf("entry not cut: %q truncated=%v", e.Content, e.Truncated)
			}
		}
		// A request may tighten the caps but never loosen them.
		r := b.req("cobalt")
		r.MaxItems = 2
		if got := len(b.recall(t, r).Entries); got != 2 {
			t.Fatalf("tightened cap kept %d", got)
		}
		r.MaxItems = 50
		if got := len(b.recall(t, r).Entries); got != 3 {
			t.Fatalf("loosened cap kept %d, want the policy's 3", got)
		}
	})
}

func TestRecallTokenBudgetSkipsLargeTriesSmaller(t *testing.T) {
	b := setup(t, memoryBackend())
	big := b.add(t, memorykit.KindNote, "quartz", "quartz "+strings.Repeat("long words here ", 20))
	small := b.add(t, memorykit.KindNote, "quartz small", "quartz tiny")
	r := b.req("quartz")
	r.Keys = []string{"quartz"} // big ranks first through the exact channel
	r.MaxTokens = 40
	r.Reserve = 10
	r.Cost = func(e recall.Entry) int { return storekit.EstimateTokens(e.Content) }
	res := b.recall(t, r)
	if len(res.Entries) != 1 || res.Entries[0].ID != small.ID {
		t.Fatalf("entries %v", entryIDs(res))
	}
	if tr, _ := res.Trace.Record(big.ID); tr.Outcome != recall.DroppedTokenBudget || tr.Tokens <= 30 {
		t.Fatalf("big record trace %+v", tr)
	}
	if res.Trace.TokenBudget != 30 || res.Tokens > 30 {
		t.Fatalf("budget %d tokens %d", res.Trace.TokenBudget, res.Tokens)
	}
}

func TestRecallTokenBudgetProperty(t *testing.T) {
	b := setup(t, memoryBackend(), withPolicy(func(p *memorykit.RecallPolicy) { p.MaxItems = 50; p.FullTextLimit = 50; p.VectorLimit = 50 }))
	for i := 0; i < 40; i++ {
		words := strings.Repeat("ember ", 1+i*7%23) + strings.Repeat("火山", i%5)
		b.add(t, memorykit.KindNote, fmt.Sprintf("ember %d", i), words)
	}
	for budget := 0; budget <= 400; budget += 7 {
		for _, reserve := range []int{0, 3, 50} {
			r := b.req("ember 火山")
			r.MaxTokens = budget
			r.Reserve = reserve
			res := b.recall(t, r)
			limit := budget - reserve
			if limit < 0 {
				limit = 0
			}
			if budget == 0 {
				limit = b.policy.MaxTokens - reserve
			}
			sum := 0
			for _, e := range res.Entries {
				if e.Tokens != recall.DefaultCost(e) {
					t.Fatalf("entry tokens %d, cost %d", e.Tokens, recall.DefaultCost(e))
				}
				sum += e.Tokens
			}
			if sum != res.Tokens || sum > limit {
				t.Fatalf("budget %d reserve %d: entries cost %d (reported %d), limit %d", budget, reserve, sum, res.Tokens, limit)
			}
			// Greedy: every dropped entry really did not fit when tried.
			for _, tr := range res.Trace.Records {
				if tr.Outcome == recall.DroppedTokenBudget && tr.Tokens <= limit-sum {
					t.Fatalf("budget %d: %s (%d tokens) dropped though %d tokens remain at the end", budget, tr.ID, tr.Tokens, limit-sum)
				}
			}
		}
	}
}

func TestRecallTraceAccountsForEveryRecord(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		var seen storekit.RecallResult
		b := setup(t, be,
			withPolicy(func(p *memorykit.RecallPolicy) { p.MaxItems = 2; p.MaxTokens = 60 }),
			withStore(func(s storekit.RecallStore) storekit.RecallStore {
				return &testkit.FaultStore{Inner: s, Edit: func(res *storekit.RecallResult) { seen = *res }}
			}))
		b.add(t, memorykit.KindFact, "granite quarry north", "granite quarry north opens at dawn")
		b.add(t, memorykit.KindFact, "granite", "granite quarry north and south both close at dusk "+strings.Repeat("x", 300))
		b.add(t, memorykit.KindNote, "quarry", "granite quarry north road")
		// Below the full-text threshold, and not embedded, so no other
		// channel returns it.
		testkit.Create(t, b.store, b.scope, memorykit.KindNote, "weak", "north only")
		b.add(t, memorykit.KindNote, "unrelated", "bicycle parking rules") // vector only
		res := b.recall(t, b.req("granite quarry north"))
		want := map[string]bool{}
		for _, hits := range [][]storekit.Hit{seen.Exact, seen.FullText, seen.FullTextBelow, seen.Vector} {
			for _, h := range hits {
				want[h.ID] = true
			}
		}
		got := map[string]bool{}
		outcomes := map[recall.Outcome]int{}
		for _, tr := range res.Trace.Records {
			if got[tr.ID] {
				t.Fatalf("record %s traced twice", tr.ID)
			}
			got[tr.ID] = true
			outcomes[tr.Outcome]++
			if tr.Outcome == "" {
				t.Fatalf("record %s has no outcome", tr.ID)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("trace covers %d records, channels returned %d", len(got), len(want))
		}
		for id := range want {
			if !got[id] {
				t.Fatalf("record %s missing from the trace", id)
			}
		}
		if outcomes[recall.Kept] != len(res.Entries) || outcomes[recall.DroppedBelowThreshold] == 0 {
			t.Fatalf("outcomes %v", outcomes)
		}
		if outcomes[recall.DroppedItemBudget]+outcomes[recall.DroppedTokenBudget] == 0 {
			t.Fatalf("no budget drop recorded: %v", outcomes)
		}
		ids := make([]string, 0, len(got))
		for id := range got {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if s := fmt.Sprintf("%+v", res.Trace); strings.Contains(s, "granite") || strings.Contains(s, "bicycle") {
			t.Fatalf("trace carries content: %s", s)
		}
	})
}

func TestRecallNoContentInEventsLogsOrErrors(t *testing.T) {
	const canary = "CANARY-7f3a"
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		fe := testkit.NewFaultEmbedder(embedder.NewLocal())
		b := setup(t, be, withEmbedder(fe))
		b.add(t, memorykit.KindFact, "canary key "+canary, "content with "+canary+" inside")
		res := b.recall(t, b.req("canary key "+canary+" question"))
		if len(res.Entries) == 0 {
			t.Fatal("canary record not recalled")
		}
		// Degradation and failure paths too.
		fe.Err = recoverable("rate_limited")
		b.recall(t, b.req("canary "+canary))
		fe.Err = memorykit.WrapError("test", memorykit.ErrInvalidInput, "bad", errors.New(canary))
		_, err := b.eng.Recall(b.ctx, b.req("canary "+canary))
		if err == nil {
			t.Fatal("want an error")
		}
		_, err2 := b.eng.Recall(b.ctx, recall.Request{Principal: b.reader, Scope: testkit.Scope(t, "tenant-a", "p9"), Query: canary})
		if len(b.logs.All()) == 0 {
			t.Fatal("no log entries to check")
		}
		b.assertNoCanary(t, canary, err.Error(), err2.Error(), fmt.Sprintf("%+v", res.Trace))
	})
}

func TestRecallEmptyQueryAsksNothing(t *testing.T) {
	var fs *testkit.FaultStore
	b := setup(t, memoryBackend(), withStore(func(s storekit.RecallStore) storekit.RecallStore {
		fs = &testkit.FaultStore{Inner: s}
		return fs
	}))
	b.add(t, memorykit.KindFact, "deploy region", "eu-west-1")
	res := b.recall(t, b.req("  \t\n "))
	if len(res.Entries) != 0 || fs.Calls() != 0 {
		t.Fatalf("blank query: %+v calls=%d", res, fs.Calls())
	}
	// Explicit keys alone still use the exact channel.
	r := b.req("")
	r.Keys = []string{"  Deploy   REGION "}
	res = b.recall(t, r)
	if len(res.Entries) != 1 {
		t.Fatalf("explicit key recall: %+v", res)
	}
	if ch, _ := res.Trace.Channel(memorykit.ChannelVector); !ch.Skipped {
		t.Fatalf("vector channel asked for a blank query: %+v", ch)
	}
}

func TestRecallVectorFloorDropsUnrelatedVectorOnlyHits(t *testing.T) {
	testkit.Each(t, func(t *testing.T, be testkit.Backend) {
		for _, floor := range []float64{0, 0.1} {
			b := setup(t, be, withPolicy(func(p *memorykit.RecallPolicy) { p.MinVectorSimilarity = floor }))
			related := b.add(t, memorykit.KindFact, "granite quarry", "the granite quarry opens at dawn")
			unrelated := b.add(t, memorykit.KindNote, "bicycles", "bicycle parking rules for visitors")
			res := b.recall(t, b.req("when does the granite quarry open"))
			ids := entryIDs(res)
			if !contains(ids, related.ID) {
				t.Fatalf("floor %v: related record missing: %v", floor, ids)
			}
			var outcome recall.Outcome
			for _, tr := range res.Trace.Records {
				if tr.ID == unrelated.ID {
					outcome = tr.Outcome
				}
			}
			switch floor {
			case 0:
				if !contains(ids, unrelated.ID) || outcome != recall.Kept {
					t.Fatalf("without a floor every vector hit is fused: %v (%s)", ids, outcome)
				}
			default:
				if contains(ids, unrelated.ID) || outcome != recall.DroppedBelowVectorFloor {
					t.Fatalf("floor %v: unrelated record outcome %q, entries %v", floor, outcome, ids)
				}
			}
		}
	})
}
