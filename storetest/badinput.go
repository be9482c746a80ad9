package storetest

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// secretToken marks content in the bad-input cases; no error message may
// repeat it.
const secretToken = "secretpayload"

// RunBadInputConformance checks that every malformed input is refused with
// a typed error of the right kind and changes nothing: oversized, invalid
// UTF-8 and NUL-bearing text in every field, empty keys and content,
// unknown kinds and statuses, user and malformed Scopes, ContentValidator
// rejections, bad reason codes, bad list limits, bad vectors and a done
// context.
func RunBadInputConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"Create", testBadCreate},
		{"Correct", testBadCorrect},
		{"Transitions", testBadTransitions},
		{"Reads", testBadReads},
		{"Recall", testBadRecall},
		{"Embeddings", testBadEmbeddings},
		{"Jobs", testBadJobs},
		{"DoneContext", testBadContext},
	})
}

type badCase struct {
	name string
	want error
	op   func() error
}

// refuseAll runs each case as a sequential subtest: each must fail with its
// sentinel and leave the store's dump unchanged.
func (e *env) refuseAll(t *testing.T, cases []badCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.refused(t, c.name, c.want, c.op)
		})
	}
}

var (
	errInput = memorykit.ErrInvalidInput
	errScope = memorykit.ErrInvalidScope
)

// badScopes are malformed or non-V1 Scopes, each ErrInvalidScope.
func badScopes() map[string]memorykit.Scope {
	return map[string]memorykit.Scope{
		"user scope":           {TenantID: "tenant-a", SubjectType: memorykit.SubjectUser, SubjectID: "user-1"},
		"empty tenant":         {SubjectType: memorykit.SubjectProject, SubjectID: "project-1"},
		"tenant with a space":  {TenantID: "tenant a", SubjectType: memorykit.SubjectProject, SubjectID: "project-1"},
		"unknown subject type": {TenantID: "tenant-a", SubjectType: "team", SubjectID: "project-1"},
		"empty subject":        {TenantID: "tenant-a", SubjectType: memorykit.SubjectProject},
		"subject too long":     {TenantID: "tenant-a", SubjectType: memorykit.SubjectProject, SubjectID: strings.Repeat("p", storekit.MaxIDBytes+1)},
	}
}

// blankContents are contents that show nothing, each ErrInvalidInput with
// reason "blank" on every write path.
var blankContents = map[string]string{
	"spaces":            "   ",
	"tabs and lines":    " \t\r\n ",
	"zero-width":        "\u200b\u200b",
	"joiners and BOM":   "\u200d\u2060\ufeff",
	"braille blank":     "\u2800",
	"hangul filler":     "\u3164\u115f",
	"ideographic space": "\u3000 \u00a0",
}

// badIDs are malformed identifiers, each ErrInvalidInput.
var badIDs = map[string]string{
	"empty":       "",
	"space":       "mem 1",
	"slash":       "mem/1",
	"non-ASCII":   "mém-1",
	"too long":    strings.Repeat("m", storekit.MaxIDBytes+1),
	"NUL":         "mem\x00",
	"invalid UTF": "mem\xff",
}

func testBadCreate(t *testing.T, e *env) {
	e.create(e.active(memorykit.KindFact, "existing", "an existing record"))
	var cases []badCase
	for _, b := range badNewRecords(e) {
		in := b.in
		cases = append(cases, badCase{b.name, b.want, func() error { _, err := e.s.Create(e.ctx, in); return err }})
	}
	e.refuseAll(t, cases)
}

// badNew is a NewRecord that Create must refuse with want.
type badNew struct {
	name string
	want error
	in   memorykit.NewRecord
}

// badNewRecords lists malformed NewRecords in e's Scope; Create and
// CreateBatch must refuse each one the same way.
func badNewRecords(e *env) []badNew {
	l := Limits()
	base := func() memorykit.NewRecord {
		in := e.active(memorykit.KindFact, "new key", "valid content "+secretToken)
		in.Metadata = map[string]string{"team": "blue"}
		in.Sources = []memorykit.Source{{Kind: "conversation", Ref: "turn-1"}}
		return in
	}
	var cases []badNew
	add := func(name string, want error, mutate func(*memorykit.NewRecord)) {
		in := base()
		mutate(&in)
		cases = append(cases, badNew{name, want, in})
	}
	add("key too long", errInput, func(in *memorykit.NewRecord) { in.Key = strings.Repeat("k", l.MaxKeyBytes+1) })
	add("key empty", errInput, func(in *memorykit.NewRecord) { in.Key = "" })
	add("key blank", errInput, func(in *memorykit.NewRecord) { in.Key = " \t  " })
	add("key invalid UTF-8", errInput, func(in *memorykit.NewRecord) { in.Key = "bad\xffkey" })
	add("key NUL", errInput, func(in *memorykit.NewRecord) { in.Key = "bad\x00key" })
	add("key control character", errInput, func(in *memorykit.NewRecord) { in.Key = "bad\x1bkey" })
	add("content empty", errInput, func(in *memorykit.NewRecord) { in.Content = "" })
	for name, blank := range blankContents {
		add("content blank "+name, errInput, func(in *memorykit.NewRecord) { in.Content = blank })
	}
	add("content too long", errInput, func(in *memorykit.NewRecord) {
		in.Content = secretToken + strings.Repeat("x", l.MaxContentBytes)
	})
	add("content invalid UTF-8", errInput, func(in *memorykit.NewRecord) { in.Content = secretToken + " \xff\xfe" })
	add("content NUL", errInput, func(in *memorykit.NewRecord) { in.Content = secretToken + " \x00 tail" })
	add("content control character", errInput, func(in *memorykit.NewRecord) { in.Content = secretToken + " \x1b[31m" })
	add("metadata too many entries", errInput, func(in *memorykit.NewRecord) {
		in.Metadata = map[string]string{}
		for i := 0; i <= l.MaxMetadataEntries; i++ {
			in.Metadata[string(rune('a'+i))] = "v"
		}
	})
	add("metadata too many bytes", errInput, func(in *memorykit.NewRecord) {
		in.Metadata = map[string]string{"big": secretToken + strings.Repeat("v", l.MaxMetadataBytes)}
	})
	add("metadata value invalid UTF-8", errInput, func(in *memorykit.NewRecord) { in.Metadata["team"] = secretToken + "\xff" })
	add("metadata value NUL", errInput, func(in *memorykit.NewRecord) { in.Metadata["team"] = secretToken + "\x00" })
	add("metadata key bad character", errInput, func(in *memorykit.NewRecord) { in.Metadata["Bad Key"] = "v" })
	add("metadata key empty", errInput, func(in *memorykit.NewRecord) { in.Metadata[""] = "v" })
	add("sources too many", errInput, func(in *memorykit.NewRecord) {
		in.Sources = nil
		for i := 0; i <= l.MaxSources; i++ {
			in.Sources = append(in.Sources, memorykit.Source{Kind: "doc", Ref: "r"})
		}
	})
	add("source too long", errInput, func(in *memorykit.NewRecord) {
		in.Sources[0].Ref = secretToken + strings.Repeat("r", l.MaxSourceBytes)
	})
	add("source ref invalid UTF-8", errInput, func(in *memorykit.NewRecord) { in.Sources[0].Ref = secretToken + "\xff" })
	add("source ref NUL", errInput, func(in *memorykit.NewRecord) { in.Sources[0].Ref = secretToken + "\x00" })
	add("source ref empty", errInput, func(in *memorykit.NewRecord) { in.Sources[0].Ref = "" })
	add("source kind bad character", errInput, func(in *memorykit.NewRecord) { in.Sources[0].Kind = "Chat Log" })
	add("reason invalid UTF-8", errInput, func(in *memorykit.NewRecord) { in.Reason = secretToken + "\xff" })
	add("reason NUL", errInput, func(in *memorykit.NewRecord) { in.Reason = secretToken + "\x00" })
	add("reason too long", errInput, func(in *memorykit.NewRecord) {
		in.Reason = secretToken + strings.Repeat("r", storekit.MaxReasonBytes)
	})
	add("unknown kind", errInput, func(in *memorykit.NewRecord) { in.Kind = "rumour" })
	add("empty kind", errInput, func(in *memorykit.NewRecord) { in.Kind = "" })
	for _, st := range []memorykit.Status{"", "bogus", memorykit.StatusErased, memorykit.StatusSuperseded, memorykit.StatusInactive, memorykit.StatusRejected} {
		add("status "+string(st), errInput, func(in *memorykit.NewRecord) { in.Status = st })
	}
	for name, id := range badIDs {
		if id == "" {
			continue // an empty ID asks the store to generate one
		}
		add("id "+name, errInput, func(in *memorykit.NewRecord) { in.ID = id })
	}
	add("actor unknown kind", errInput, func(in *memorykit.NewRecord) { in.Actor.Kind = "robot" })
	add("actor empty id", errInput, func(in *memorykit.NewRecord) { in.Actor.ID = "" })
	add("effective until before from", errInput, func(in *memorykit.NewRecord) {
		in.EffectiveFrom, in.EffectiveUntil = Epoch.Add(2*time.Hour), Epoch.Add(time.Hour)
	})
	add("effective until equals from", errInput, func(in *memorykit.NewRecord) {
		in.EffectiveFrom, in.EffectiveUntil = Epoch.Add(time.Hour), Epoch.Add(time.Hour)
	})
	add("expect on a candidate", errInput, func(in *memorykit.NewRecord) {
		in.Status, in.Expect = memorykit.StatusCandidate, &memorykit.ActiveExpectation{None: true}
	})
	add("expect none and id", errInput, func(in *memorykit.NewRecord) {
		in.Expect = &memorykit.ActiveExpectation{None: true, ID: "mem-x", Version: 1}
	})
	add("expect neither", errInput, func(in *memorykit.NewRecord) { in.Expect = &memorykit.ActiveExpectation{} })
	add("expect id without version", errInput, func(in *memorykit.NewRecord) { in.Expect = &memorykit.ActiveExpectation{ID: "mem-x"} })
	add("expect key owner invalid", errInput, func(in *memorykit.NewRecord) {
		in.Expect = &memorykit.ActiveExpectation{None: true, KeyOwner: &memorykit.Actor{Kind: "robot", ID: "r"}}
	})
	add("validator rejects content", errInput, func(in *memorykit.NewRecord) { in.Content = "token " + RejectMarker })
	add("validator rejects metadata", errInput, func(in *memorykit.NewRecord) { in.Metadata["team"] = RejectMarker })
	add("validator rejects source", errInput, func(in *memorykit.NewRecord) { in.Sources[0].Ref = RejectMarker })
	add("validator rejects key", errInput, func(in *memorykit.NewRecord) { in.Key = "key " + RejectMarker })
	add("validator rejects candidate", errInput, func(in *memorykit.NewRecord) {
		in.Status, in.Content = memorykit.StatusCandidate, RejectMarker
	})
	for name, s := range badScopes() {
		add("scope "+name, errScope, func(in *memorykit.NewRecord) { in.Scope = s })
	}
	return cases
}

func testBadCorrect(t *testing.T, e *env) {
	r := e.create(e.active(memorykit.KindFact, "target", "original content"))
	l := Limits()
	base := func() storekit.Correction {
		return storekit.Correction{Transition: tr(e.scope, r.ID, reviewer), Content: "corrected " + secretToken,
			Sources: []memorykit.Source{{Kind: "review", Ref: "pr-1"}}, Metadata: map[string]string{"k": "v"}}
	}
	var cases []badCase
	add := func(name string, want error, mutate func(*storekit.Correction)) {
		c := base()
		mutate(&c)
		cases = append(cases, badCase{name, want, func() error { _, err := e.s.Correct(e.ctx, c); return err }})
	}
	add("content empty", errInput, func(c *storekit.Correction) { c.Content = "" })
	for name, blank := range blankContents {
		add("content blank "+name, errInput, func(c *storekit.Correction) { c.Content = blank })
	}
	add("content too long", errInput, func(c *storekit.Correction) { c.Content = secretToken + strings.Repeat("x", l.MaxContentBytes) })
	add("content NUL", errInput, func(c *storekit.Correction) { c.Content = secretToken + "\x00" })
	add("content invalid UTF-8", errInput, func(c *storekit.Correction) { c.Content = secretToken + "\xc3\x28" })
	add("validator rejects content", errInput, func(c *storekit.Correction) { c.Content = RejectMarker })
	add("validator rejects source", errInput, func(c *storekit.Correction) { c.Sources[0].Ref = RejectMarker })
	add("metadata too many entries", errInput, func(c *storekit.Correction) {
		for i := 0; i <= l.MaxMetadataEntries; i++ {
			c.Metadata[string(rune('a'+i))] = "v"
		}
	})
	add("metadata value NUL", errInput, func(c *storekit.Correction) { c.Metadata["k"] = "\x00" })
	add("sources too many", errInput, func(c *storekit.Correction) {
		for i := 0; i < l.MaxSources; i++ {
			c.Sources = append(c.Sources, memorykit.Source{Kind: "doc", Ref: "r"})
		}
	})
	add("source ref invalid UTF-8", errInput, func(c *storekit.Correction) { c.Sources[0].Ref = "\xff" })
	add("reason NUL", errInput, func(c *storekit.Correction) { c.Reason = "why\x00" })
	add("bad actor", errInput, func(c *storekit.Correction) { c.Actor = memorykit.Actor{Kind: "ghost", ID: "x"} })
	add("negative expect version", errInput, func(c *storekit.Correction) { c.ExpectVersion = -1 })
	for name, id := range badIDs {
		add("id "+name, errInput, func(c *storekit.Correction) { c.ID = id })
	}
	for name, s := range badScopes() {
		add("scope "+name, errScope, func(c *storekit.Correction) { c.Scope = s })
	}
	e.refuseAll(t, cases)
}

func testBadTransitions(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindFact, "cand", "candidate"))
	a := e.create(e.active(memorykit.KindFact, "act", "active"))
	in := e.create(e.active(memorykit.KindFact, "inact", "inactive"))
	e.must(actForget, tr(e.scope, in.ID, reviewer))
	targets := map[string]string{"Activate": c.ID, "Reject": c.ID, "Forget": a.ID, "Erase": in.ID}
	var cases []badCase
	for _, act := range []action{actActivate, actReject, actForget, actErase} {
		add := func(name string, want error, mutate func(*storekit.Transition)) {
			x := tr(e.scope, targets[act.name], reviewer)
			mutate(&x)
			cases = append(cases, badCase{act.name + " " + name, want, func() error { _, err := act.do(e.ctx, e.s, x); return err }})
		}
		add("reason invalid UTF-8", errInput, func(x *storekit.Transition) { x.Reason = "\xff" })
		add("reason NUL", errInput, func(x *storekit.Transition) { x.Reason = "a\x00b" })
		add("reason too long", errInput, func(x *storekit.Transition) { x.Reason = strings.Repeat("r", storekit.MaxReasonBytes+1) })
		add("actor unknown kind", errInput, func(x *storekit.Transition) { x.Actor.Kind = "" })
		add("actor bad id", errInput, func(x *storekit.Transition) { x.Actor.ID = "a b" })
		add("negative expect version", errInput, func(x *storekit.Transition) { x.ExpectVersion = -3 })
		for name, id := range badIDs {
			add("id "+name, errInput, func(x *storekit.Transition) { x.ID = id })
		}
		for name, s := range badScopes() {
			add("scope "+name, errScope, func(x *storekit.Transition) { x.Scope = s })
		}
	}
	e.refuseAll(t, cases)
}

func testBadReads(t *testing.T, e *env) {
	r := e.create(e.active(memorykit.KindFact, "k", "v"))
	j := e.enqueue("turn-1", 2)
	max := Limits().MaxListSize
	list := func(f storekit.ListFilter) func() error {
		return func() error { _, err := e.s.List(e.ctx, f); return err }
	}
	ok := storekit.ListFilter{Scope: e.scope, Limit: 5}
	with := func(mutate func(*storekit.ListFilter)) storekit.ListFilter {
		f := ok
		mutate(&f)
		return f
	}
	cases := []badCase{
		{"List limit 0", errInput, list(with(func(f *storekit.ListFilter) { f.Limit = 0 }))},
		{"List limit negative", errInput, list(with(func(f *storekit.ListFilter) { f.Limit = -1 }))},
		{"List limit above MaxListSize", errInput, list(with(func(f *storekit.ListFilter) { f.Limit = max + 1 }))},
		{"List unknown status", errInput, list(with(func(f *storekit.ListFilter) { f.Statuses = []memorykit.Status{"bogus"} }))},
		{"List unknown kind", errInput, list(with(func(f *storekit.ListFilter) { f.Kind = "rumour" }))},
		{"List key invalid UTF-8", errInput, list(with(func(f *storekit.ListFilter) { f.Key = "\xff" }))},
		{"List bad AfterID", errInput, list(with(func(f *storekit.ListFilter) { f.AfterID = "mem 1" }))},
		{"FindActive unknown kind", errInput, func() error {
			_, err := e.s.FindActive(e.ctx, e.scope, "rumour", "k")
			return err
		}},
		{"FindActive empty key", errInput, func() error { _, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, " "); return err }},
		{"FindActive key NUL", errInput, func() error { _, err := e.s.FindActive(e.ctx, e.scope, memorykit.KindFact, "k\x00"); return err }},
	}
	for name, id := range badIDs {
		cases = append(cases,
			badCase{"Get id " + name, errInput, func() error { _, err := e.s.Get(e.ctx, e.scope, id); return err }},
			badCase{"Revisions id " + name, errInput, func() error { _, err := e.s.Revisions(e.ctx, e.scope, id); return err }},
			badCase{"GetJob id " + name, errInput, func() error { _, err := e.s.GetJob(e.ctx, e.scope, id); return err }},
		)
	}
	for name, s := range badScopes() {
		cases = append(cases,
			badCase{"Get scope " + name, errScope, func() error { _, err := e.s.Get(e.ctx, s, r.ID); return err }},
			badCase{"Revisions scope " + name, errScope, func() error { _, err := e.s.Revisions(e.ctx, s, r.ID); return err }},
			badCase{"FindActive scope " + name, errScope, func() error {
				_, err := e.s.FindActive(e.ctx, s, memorykit.KindFact, "k")
				return err
			}},
			badCase{"List scope " + name, errScope, list(with(func(f *storekit.ListFilter) { f.Scope = s }))},
			badCase{"GetJob scope " + name, errScope, func() error { _, err := e.s.GetJob(e.ctx, s, j.ID); return err }},
		)
	}
	e.refuseAll(t, cases)
}

func testBadRecall(t *testing.T, e *env) {
	r := e.create(e.active(memorykit.KindFact, "k", "zebra"))
	e.embed(r, "test/bad-v1", []float32{1, 0})
	base := func() storekit.RecallQuery {
		q := query(e.scope)
		q.ExactKeys, q.Terms = []string{"k"}, []string{"zebra"}
		q.Vector, q.Profile = []float32{1, 0}, "test/bad-v1"
		return q
	}
	var cases []badCase
	add := func(name string, want error, mutate func(*storekit.RecallQuery)) {
		q := base()
		mutate(&q)
		cases = append(cases, badCase{name, want, func() error { _, err := e.s.Recall(e.ctx, q); return err }})
	}
	add("exact limit 0", errInput, func(q *storekit.RecallQuery) { q.ExactLimit = 0 })
	add("full-text limit 0", errInput, func(q *storekit.RecallQuery) { q.FullTextLimit = 0 })
	add("vector limit negative", errInput, func(q *storekit.RecallQuery) { q.VectorLimit = -1 })
	add("vector NaN", errInput, func(q *storekit.RecallQuery) { q.Vector = []float32{float32(math.NaN()), 1} })
	add("vector Inf", errInput, func(q *storekit.RecallQuery) { q.Vector = []float32{float32(math.Inf(1)), 1} })
	add("vector empty", errInput, func(q *storekit.RecallQuery) { q.Vector = []float32{} })
	add("vector with bad profile", errInput, func(q *storekit.RecallQuery) { q.Profile = "bad profile" })
	add("vector without profile", errInput, func(q *storekit.RecallQuery) { q.Profile = "" })
	for name, s := range badScopes() {
		add("scope "+name, errScope, func(q *storekit.RecallQuery) { q.Scope = s })
	}
	e.refuseAll(t, cases)
}

func testBadEmbeddings(t *testing.T, e *env) {
	r := e.create(e.active(memorykit.KindFact, "k", "v"))
	tasks := e.lease("embedder-1", time.Minute, 5)
	if len(tasks) != 1 {
		t.Fatalf("setup lease: %+v", tasks)
	}
	task := tasks[0]
	max := Limits().MaxListSize
	var cases []badCase
	addPut := func(name string, want error, mutate func(*storekit.EmbeddingPut)) {
		p := put(task, "embedder-1", []float32{1, 0})
		mutate(&p)
		cases = append(cases, badCase{"PutEmbedding " + name, want, func() error { return e.s.PutEmbedding(e.ctx, p) }})
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	addPut("nil vector", errInput, func(p *storekit.EmbeddingPut) { p.Vector = nil })
	addPut("empty vector", errInput, func(p *storekit.EmbeddingPut) { p.Vector = []float32{} })
	addPut("NaN", errInput, func(p *storekit.EmbeddingPut) { p.Vector = []float32{1, nan} })
	addPut("+Inf", errInput, func(p *storekit.EmbeddingPut) { p.Vector = []float32{inf, 0} })
	addPut("-Inf", errInput, func(p *storekit.EmbeddingPut) { p.Vector = []float32{0, -inf} })
	addPut("bad profile", errInput, func(p *storekit.EmbeddingPut) { p.Profile = "bad profile" })
	addPut("empty profile", errInput, func(p *storekit.EmbeddingPut) { p.Profile = "" })
	addPut("malformed hash", errInput, func(p *storekit.EmbeddingPut) { p.ContentHash = "sha256:zz" })
	addPut("empty hash", errInput, func(p *storekit.EmbeddingPut) { p.ContentHash = "" })
	addPut("bad worker", errInput, func(p *storekit.EmbeddingPut) { p.WorkerID = "worker 1" })
	addPut("bad record id", errInput, func(p *storekit.EmbeddingPut) { p.RecordID = "mem 1" })
	addPut("negative lease token", errInput, func(p *storekit.EmbeddingPut) { p.LeaseToken = -1 })
	for name, s := range badScopes() {
		addPut("scope "+name, errScope, func(p *storekit.EmbeddingPut) { p.Scope = s })
	}
	addRel := func(name string, want error, mutate func(*storekit.EmbeddingRelease)) {
		x := release(task, "embedder-1")
		mutate(&x)
		cases = append(cases, badCase{"ReleaseEmbedding " + name, want, func() error { return e.s.ReleaseEmbedding(e.ctx, x) }})
	}
	for _, code := range []string{"", "Provider_Timeout", "provider-timeout", "provider timeout", "naïve", strings.Repeat("a", 65), "code\x00"} {
		addRel("reason code "+code, errInput, func(x *storekit.EmbeddingRelease) { x.Reason = code })
	}
	addRel("bad worker", errInput, func(x *storekit.EmbeddingRelease) { x.WorkerID = "" })
	addRel("zero lease token", errInput, func(x *storekit.EmbeddingRelease) { x.LeaseToken = 0 })
	addRel("malformed hash", errInput, func(x *storekit.EmbeddingRelease) { x.ContentHash = "md5:abc" })
	addRel("user scope", errScope, func(x *storekit.EmbeddingRelease) { x.Scope = badScopes()["user scope"] })
	addLease := func(name string, l storekit.EmbeddingLease) {
		cases = append(cases, badCase{"LeaseEmbeddings " + name, errInput, func() error { _, err := e.s.LeaseEmbeddings(e.ctx, l); return err }})
	}
	okLease := storekit.EmbeddingLease{Profile: embProfile, WorkerID: "embedder-2", TTL: time.Minute, Max: 5}
	l := okLease
	l.TTL = 0
	addLease("ttl 0", l)
	l = okLease
	l.TTL = -time.Second
	addLease("ttl negative", l)
	l = okLease
	l.Max = 0
	addLease("max 0", l)
	l = okLease
	l.Max = max + 1
	addLease("max above MaxListSize", l)
	l = okLease
	l.WorkerID = ""
	addLease("empty worker", l)
	l = okLease
	l.Profile = "bad profile"
	addLease("bad profile", l)
	cases = append(cases,
		badCase{"PendingEmbeddings bad profile", errInput, func() error { _, err := e.s.PendingEmbeddings(e.ctx, "no spaces allowed"); return err }},
		badCase{"DeleteEmbeddings bad profile", errInput, func() error { _, err := e.s.DeleteEmbeddings(e.ctx, "", e.scope); return err }},
		badCase{"DeleteEmbeddings user scope", errScope, func() error {
			s := badScopes()["user scope"]
			_, err := e.s.DeleteEmbeddings(e.ctx, embProfile, s)
			return err
		}},
		// A zero Scope never means "every Scope": that is DeleteAllEmbeddings.
		badCase{"DeleteEmbeddings zero scope", errScope, func() error {
			_, err := e.s.DeleteEmbeddings(e.ctx, embProfile, memorykit.Scope{})
			return err
		}},
		badCase{"DeleteAllEmbeddings bad profile", errInput, func() error { _, err := e.s.DeleteAllEmbeddings(e.ctx, ""); return err }},
	)
	e.refuseAll(t, cases)
	_ = r
}

func testBadJobs(t *testing.T, e *env) {
	j := e.enqueue("turn-1", 3)
	e.leaseOne("worker-1")
	max := Limits().MaxListSize
	var cases []badCase
	addEnq := func(name string, want error, mutate func(*storekit.NewJob)) {
		n := storekit.NewJob{ID: "job-new", Scope: e.scope, Payload: "turn text " + secretToken, MaxAttempts: 3, MaxReaps: 3}
		mutate(&n)
		cases = append(cases, badCase{"EnqueueJob " + name, want, func() error { _, err := e.s.EnqueueJob(e.ctx, n); return err }})
	}
	addEnq("payload empty", errInput, func(n *storekit.NewJob) { n.Payload = "" })
	addEnq("payload too long", errInput, func(n *storekit.NewJob) {
		n.Payload = secretToken + strings.Repeat("p", Limits().MaxJobPayloadBytes)
	})
	addEnq("payload NUL", errInput, func(n *storekit.NewJob) { n.Payload = secretToken + "\x00" })
	addEnq("payload invalid UTF-8", errInput, func(n *storekit.NewJob) { n.Payload = secretToken + "\xff" })
	addEnq("max attempts 0", errInput, func(n *storekit.NewJob) { n.MaxAttempts = 0 })
	addEnq("max attempts negative", errInput, func(n *storekit.NewJob) { n.MaxAttempts = -2 })
	addEnq("max reaps 0", errInput, func(n *storekit.NewJob) { n.MaxReaps = 0 })
	addEnq("run ref with a space", errInput, func(n *storekit.NewJob) { n.RunRef = "run 1" })
	addEnq("run ref too long", errInput, func(n *storekit.NewJob) { n.RunRef = strings.Repeat("r", storekit.MaxIDBytes+1) })
	for name, id := range badIDs {
		addEnq("id "+name, errInput, func(n *storekit.NewJob) { n.ID = id })
	}
	for name, s := range badScopes() {
		addEnq("scope "+name, errScope, func(n *storekit.NewJob) { n.Scope = s })
	}
	addLease := func(name string, mutate func(*storekit.JobLease)) {
		l := storekit.JobLease{WorkerID: "worker-2", TTL: time.Minute, Max: 5}
		mutate(&l)
		cases = append(cases, badCase{"LeaseJobs " + name, errInput, func() error { _, err := e.s.LeaseJobs(e.ctx, l); return err }})
	}
	addLease("ttl 0", func(l *storekit.JobLease) { l.TTL = 0 })
	addLease("max 0", func(l *storekit.JobLease) { l.Max = 0 })
	addLease("max above MaxListSize", func(l *storekit.JobLease) { l.Max = max + 1 })
	addLease("bad worker", func(l *storekit.JobLease) { l.WorkerID = "worker/2" })
	addFail := func(name string, mutate func(*storekit.JobFailure)) {
		f := storekit.JobFailure{JobID: j.ID, WorkerID: "worker-1", LeaseToken: e.tok(j.ID), Reason: "extract_timeout"}
		mutate(&f)
		cases = append(cases, badCase{"FailJob " + name, errInput, func() error { _, err := e.s.FailJob(e.ctx, f); return err }})
	}
	for _, code := range []string{"", "Timeout", "time out", "time-out", strings.Repeat("t", 65), "t\x00"} {
		addFail("reason code "+code, func(f *storekit.JobFailure) { f.Reason = code })
	}
	addFail("bad job id", func(f *storekit.JobFailure) { f.JobID = "job 1" })
	addFail("bad worker", func(f *storekit.JobFailure) { f.WorkerID = "" })
	addFail("zero lease token", func(f *storekit.JobFailure) { f.LeaseToken = 0 })
	cases = append(cases,
		badCase{"ReleaseJob bad job id", errInput, func() error {
			return e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: "", WorkerID: "worker-1", LeaseToken: e.tok("")})
		}},
		badCase{"ReleaseJob bad worker", errInput, func() error {
			return e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "w 1", LeaseToken: e.tok(j.ID)})
		}},
		badCase{"CompleteJob bad job id", errInput, func() error {
			_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: "job\xff", WorkerID: "worker-1", LeaseToken: e.tok("job\xff")})
			return err
		}},
		badCase{"ReleaseJob zero lease token", errInput, func() error {
			return e.s.ReleaseJob(e.ctx, storekit.JobRelease{JobID: j.ID, WorkerID: "worker-1"})
		}},
		badCase{"CompleteJob zero lease token", errInput, func() error {
			_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "worker-1"})
			return err
		}},
		badCase{"CompleteJob bad worker", errInput, func() error {
			_, err := e.s.CompleteJob(e.ctx, storekit.JobCompletion{JobID: j.ID, WorkerID: "", LeaseToken: e.tok(j.ID)})
			return err
		}},
	)
	e.refuseAll(t, cases)
}

func testBadContext(t *testing.T, e *env) {
	c := e.create(e.candidate(memorykit.KindFact, "cand", "candidate"))
	a := e.create(e.active(memorykit.KindFact, "act", "active"))
	j := e.enqueue("turn-1", 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ops := map[string]func() error{
		"Create": func() error { _, err := e.s.Create(ctx, e.active(memorykit.KindNote, "n", "new")); return err },
		"Activate": func() error {
			_, err := e.s.Activate(ctx, tr(e.scope, c.ID, reviewer))
			return err
		},
		"Correct": func() error {
			_, err := e.s.Correct(ctx, storekit.Correction{Transition: tr(e.scope, a.ID, reviewer), Content: "x"})
			return err
		},
		"Forget": func() error { _, err := e.s.Forget(ctx, tr(e.scope, a.ID, reviewer)); return err },
		"Recall": func() error { _, err := e.s.Recall(ctx, query(e.scope)); return err },
		"LeaseEmbeddings": func() error {
			_, err := e.s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: embProfile, WorkerID: "embedder-1", TTL: time.Minute, Max: 5})
			return err
		},
		"PutEmbedding": func() error {
			return e.s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: e.scope, RecordID: a.ID, Profile: embProfile,
				ContentHash: a.ContentHash, Vector: []float32{1}, WorkerID: "embedder-1"})
		},
		"EnqueueJob": func() error {
			_, err := e.s.EnqueueJob(ctx, storekit.NewJob{ID: "job-ctx", Scope: e.scope, Payload: "p", MaxAttempts: 1, MaxReaps: 1})
			return err
		},
		"LeaseJobs": func() error {
			_, err := e.s.LeaseJobs(ctx, storekit.JobLease{WorkerID: "worker-1", TTL: time.Minute, Max: 5})
			return err
		},
		"ReapJobLeases": func() error { _, err := e.s.ReapJobLeases(ctx); return err },
		"GetJob":        func() error { _, err := e.s.GetJob(ctx, e.scope, j.ID); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			before := e.dump()
			err := op()
			if err == nil || !errorsIsCanceled(err) {
				t.Fatalf("%s with a cancelled context: %v; want an error matching context.Canceled", name, err)
			}
			e.unchanged(t, before, name+" with a cancelled context")
		})
	}
}
