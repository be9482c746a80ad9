package bench

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// evalK is how many results every recaller returns and is scored on.
const evalK = 10

// evalConv is one Scope's records and the questions asked of them.
type evalConv struct {
	set, name string
	keys      []string
	contents  []string
	at        []time.Time // EffectiveFrom; zero means the write time
	questions []evalQ
}

type evalQ struct {
	text, qtype, lang string
	evidence          []int
}

// qualityConvs turns NewQualitySet into one conversation of single-fact
// questions.
func qualityConvs(set QualitySet) []evalConv {
	c := evalConv{set: "quality", name: "quality"}
	for _, t := range set.Turns {
		c.keys = append(c.keys, t.Key)
		c.contents = append(c.contents, t.Content)
		c.at = append(c.at, time.Time{})
	}
	for _, q := range set.Questions {
		lang := "en"
		if q.Chinese {
			lang = "zh"
		}
		c.questions = append(c.questions, evalQ{text: q.Text, qtype: QSingle, lang: lang, evidence: []int{q.Answer}})
	}
	return []evalConv{c}
}

// dialogConvs turns NewDialogSet into its conversations.
func dialogConvs(set DialogSet) []evalConv {
	var out []evalConv
	for _, conv := range set.Conversations {
		c := evalConv{set: "dialog", name: conv.Name}
		for _, t := range conv.Turns {
			c.keys = append(c.keys, t.Key)
			c.contents = append(c.contents, t.Content)
			c.at = append(c.at, t.At)
		}
		for _, q := range conv.Questions {
			c.questions = append(c.questions, evalQ{text: q.Text, qtype: q.Type, lang: q.Lang, evidence: q.Evidence})
		}
		out = append(out, c)
	}
	return out
}

// scores accumulates Recall@5, Recall@10 and MRR@10 over questions. A
// question needing several turns scores the share of them found at k, and
// the reciprocal rank of the first one found.
type scores struct {
	r5, r10, rr float64
	n           int
}

func (s *scores) add(ranked []string, evidence map[string]bool) {
	s.n++
	found5, found10 := 0, 0
	first := 0
	for i, id := range ranked {
		if i == evalK {
			break
		}
		if evidence[id] {
			if i < 5 {
				found5++
			}
			found10++
			if first == 0 {
				first = i + 1
			}
		}
	}
	s.r5 += float64(found5) / float64(len(evidence))
	s.r10 += float64(found10) / float64(len(evidence))
	if first > 0 {
		s.rr += 1 / float64(first)
	}
}

func (s scores) R5() float64  { return s.r5 / float64(max(s.n, 1)) }
func (s scores) R10() float64 { return s.r10 / float64(max(s.n, 1)) }
func (s scores) MRR() float64 { return s.rr / float64(max(s.n, 1)) }

// evalChannels are the recallers scored, in report order.
var evalChannels = []string{"exact", "full_text", "vector", "fused", "bm25"}

// evalReport maps a group ("quality/all", "dialog/lang=zh", ...) to each
// recaller's scores.
type evalReport map[string]map[string]*scores

func (r evalReport) add(group, channel string, ranked []string, evidence map[string]bool) {
	g := r[group]
	if g == nil {
		g = make(map[string]*scores)
		r[group] = g
	}
	s := g[channel]
	if s == nil {
		s = &scores{}
		g[channel] = s
	}
	s.add(ranked, evidence)
}

// allowAll is the evaluation's Authorizer.
type allowAll struct{}

func (allowAll) Authorize(context.Context, memorykit.Principal, memorykit.Permission, memorykit.Scope) error {
	return nil
}

// evalClock is after every dialog session, so every turn is in effect.
func evalClock() *clock.Mock {
	c := clock.NewMock()
	c.Set(benchEpoch)
	return c
}

// evaluate loads every conversation into its own Scope of s (one record per
// turn, embedded with emb, in one batch so turns keep their order) and
// scores the exact, full-text and vector channels (each alone, at evalK),
// the recall engine's fused result under policy, and BM25 over the turns'
// contents.
func evaluate(tb testing.TB, s storekit.Store, clk clock.Clock, emb memorykit.Embedder, policy memorykit.RecallPolicy, convs []evalConv) evalReport {
	tb.Helper()
	ctx := context.Background()
	policy.MaxItems, policy.MaxTokens = evalK, memorykit.MaxPolicyBudget // budgets raised to return evalK
	eng, err := recall.New(recall.Config{Store: s, Embedder: emb, Authorizer: allowAll{}, Policy: policy,
		Clock: clk, Events: &testkit.Sink{}, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	rep := evalReport{}
	for ci, c := range convs {
		sc := scopeOf(tb, fmt.Sprintf("%s-%s-%d", c.set, c.name, ci))
		texts := make([]string, len(c.keys))
		for i := range c.keys {
			texts[i] = storekit.EmbeddingText(storekit.NormalizeKey(c.keys[i]), c.contents[i])
		}
		vecs := embedWith(tb, emb, texts)
		ids := make([]string, len(c.keys))
		its := make([]storekit.BatchItem, len(c.keys))
		for i := range c.keys {
			ids[i] = fmt.Sprintf("c%d-turn-%04d", ci, i)
			its[i] = storekit.BatchItem{
				Record: memorykit.NewRecord{ID: ids[i], Scope: sc, Kind: memorykit.KindNote, Key: c.keys[i], Content: c.contents[i],
					Status: memorykit.StatusActive, Actor: author, EffectiveFrom: c.at[i]},
				Embedding: &storekit.BatchEmbedding{Profile: emb.Profile(), Vector: vecs[i]},
			}
		}
		bc := s.(storekit.BatchCreator)
		for start := 0; start < len(its); start += batchSize {
			if _, err := bc.CreateBatch(ctx, its[start:min(start+batchSize, len(its))]); err != nil {
				tb.Fatal(err)
			}
		}
		bm := NewBM25(1.2, 0.75, ids, c.contents)
		qtexts := make([]string, len(c.questions))
		for i, q := range c.questions {
			qtexts[i] = q.text
		}
		qvecs := embedWith(tb, emb, qtexts)
		principal := memorykit.Principal{TenantID: sc.TenantID, Actor: memorykit.Actor{Kind: memorykit.ActorModel, ID: "bench"}}
		for qi, q := range c.questions {
			ev := make(map[string]bool, len(q.evidence))
			for _, e := range q.evidence {
				ev[ids[e]] = true
			}
			res, err := s.Recall(ctx, storekit.RecallQuery{Scope: sc,
				ExactKeys: storekit.ExactKeys(q.text, policy.MaxQueryTerms),
				Terms:     storekit.SearchTerms(q.text, policy.MaxQueryTerms),
				Vector:    qvecs[qi], Profile: emb.Profile(),
				ExactLimit: evalK, FullTextLimit: evalK, VectorLimit: evalK})
			if err != nil {
				tb.Fatal(err)
			}
			fused, err := eng.Recall(ctx, recall.Request{Principal: principal, Scope: sc, Query: q.text})
			if err != nil || fused.Degraded {
				tb.Fatalf("recall: %v (degraded %v)", err, fused.Degraded)
			}
			var fusedIDs []string
			for _, en := range fused.Entries {
				fusedIDs = append(fusedIDs, en.ID)
			}
			ranked := map[string][]string{
				"exact": hitIDs(res.Exact), "full_text": hitIDs(res.FullText), "vector": hitIDs(res.Vector),
				"fused": fusedIDs, "bm25": bm.Rank(q.text, evalK),
			}
			for _, group := range []string{"all", "lang=" + q.lang, "type=" + q.qtype} {
				for ch, list := range ranked {
					rep.add(c.set+"/"+group, ch, list, ev)
				}
			}
		}
	}
	return rep
}

// embedWith embeds texts with emb in calls it accepts.
func embedWith(tb testing.TB, emb memorykit.Embedder, texts []string) [][]float32 {
	tb.Helper()
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += embedder.MaxLocalTexts {
		vs, err := emb.Embed(context.Background(), texts[start:min(start+embedder.MaxLocalTexts, len(texts))])
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, vs...)
	}
	return out
}

// markdown renders the report as one table per set, for docs/benchmarks.md.
func (r evalReport) markdown() string {
	var groups []string
	for g := range r {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var b strings.Builder
	b.WriteString("| set / group | questions |")
	for _, ch := range evalChannels {
		fmt.Fprintf(&b, " %s R@5 / R@10 / MRR |", ch)
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" --- |", len(evalChannels)) + "\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "| %s | %d |", g, r[g]["fused"].n)
		for _, ch := range evalChannels {
			s := r[g][ch]
			fmt.Fprintf(&b, " %.3f / %.3f / %.3f |", s.R5(), s.R10(), s.MRR())
		}
		b.WriteString("\n")
	}
	return b.String()
}

// devSets are the development sets the recall preset is held to.
func devSets() map[string][]evalConv {
	return map[string][]evalConv{
		"quality": qualityConvs(NewQualitySet(1, qualitySessions, qualityTurns)),
		"dialog":  append(append(dialogConvs(NewDialogSet(1)), dialogConvs(NewDialogSet(2))...), dialogConvs(NewDialogSet(3))...),
	}
}

func newMemStore(tb testing.TB, clk clock.Clock) storekit.Store {
	tb.Helper()
	s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: benchGuard(tb), Tombstones: benchTombstones(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestFusedRecallBeatsEveryChannelAndBM25 holds the default local setup
// (the hash-v2 embedder under memorykit.RecallPolicyV1) to the bar
// on every development set, on memorystore: fused Recall@5 and Recall@10
// at least the best single channel's, and fused Recall@5, Recall@10 and
// MRR at least BM25's. Run with -v to print the table docs/benchmarks.md
// quotes.
func TestFusedRecallBeatsEveryChannelAndBM25(t *testing.T) {
	t.Parallel()
	emb := embedder.NewLocalV2()
	policy := memorykit.RecallPolicyV1(emb.Profile(), emb.Dimension())
	sets := devSets()
	names := []string{"quality", "dialog"}
	var all []evalConv
	for _, n := range names {
		all = append(all, sets[n]...)
	}
	clk := evalClock()
	rep := evaluate(t, newMemStore(t, clk), clk, emb, policy, all)
	t.Logf("hash-v2, RecallPolicyV1, memorystore:\n%s", rep.markdown())
	for _, n := range names {
		g := rep[n+"/all"]
		f := g["fused"]
		for _, ch := range []string{"exact", "full_text", "vector", "bm25"} {
			c := g[ch]
			if f.R5() < c.R5() || f.R10() < c.R10() {
				t.Errorf("%s: fused R@5 %.3f R@10 %.3f below %s's %.3f / %.3f", n, f.R5(), f.R10(), ch, c.R5(), c.R10())
			}
		}
		if b := g["bm25"]; f.MRR() < b.MRR() {
			t.Errorf("%s: fused MRR %.3f below BM25's %.3f", n, f.MRR(), b.MRR())
		}
	}
}

// TestDialogSetIsDeterministic checks the generator: the same seed gives
// the same conversations, every question's evidence turns hold a fact
// (not small talk), and every type and language is present.
func TestDialogSetIsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := NewDialogSet(1), NewDialogSet(1)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed built two different sets")
	}
	if reflect.DeepEqual(a, NewDialogSet(2)) {
		t.Fatal("another seed built the same set")
	}
	types, langs := map[string]int{}, map[string]int{}
	for _, c := range a.Conversations {
		if len(c.Turns) < 200 {
			t.Fatalf("%s: only %d turns", c.Name, len(c.Turns))
		}
		for _, q := range c.Questions {
			types[q.Type]++
			langs[q.Lang]++
			if len(q.Evidence) == 0 || (q.Type == QMultiHop) != (len(q.Evidence) == 2) {
				t.Fatalf("%s: question %q has evidence %v", c.Name, q.Text, q.Evidence)
			}
			for _, e := range q.Evidence {
				if e < 0 || e >= len(c.Turns) {
					t.Fatalf("%s: question %q: evidence %d out of range", c.Name, q.Text, e)
				}
			}
		}
	}
	if types[QSingle] == 0 || types[QTemporal] == 0 || types[QMultiHop] == 0 || langs["en"] == 0 || langs["zh"] == 0 {
		t.Fatalf("types %v, languages %v", types, langs)
	}
}

// BenchmarkRecallQuality scores the development sets (NewQualitySet and
// three seeds of NewDialogSet) on each store with the default local setup
// (hash-v2 under memorykit.RecallPolicyV1): Recall@5, Recall@10 and MRR@10
// of each channel alone, of the fused result and of the BM25 baseline,
// reported as metrics per set. The scores do not depend on b.N.
//
//	go test ./internal/testsupport/bench -run '^$' -bench 'BenchmarkRecallQuality' -benchtime 1x
func BenchmarkRecallQuality(b *testing.B) {
	emb := embedder.NewLocalV2()
	policy := memorykit.RecallPolicyV1(emb.Profile(), emb.Dimension())
	sets := devSets()
	var all []evalConv
	all = append(all, sets["quality"]...)
	all = append(all, sets["dialog"]...)
	for _, kind := range []string{"memory", "postgres"} {
		b.Run("store="+kind, func(b *testing.B) {
			var rep evalReport
			for i := 0; i < b.N; i++ {
				clk := evalClock()
				var s storekit.Store
				if kind == "memory" {
					s = newMemStore(b, clk)
				} else {
					s = writeStoreOn(b, kind, clk)
				}
				rep = evaluate(b, s, clk, emb, policy, all)
			}
			b.Logf("store=%s:\n%s", kind, rep.markdown())
			for _, set := range []string{"quality", "dialog"} {
				for _, ch := range evalChannels {
					s := rep[set+"/all"][ch]
					b.ReportMetric(s.R5(), set+"-"+ch+"-R@5")
					b.ReportMetric(s.R10(), set+"-"+ch+"-R@10")
					b.ReportMetric(s.MRR(), set+"-"+ch+"-MRR")
				}
			}
		})
	}
}
