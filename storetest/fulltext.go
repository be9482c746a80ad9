package storetest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// weightTolerance allows for the last bit of a float64 after rounding to
// six decimals; stores must agree on RoundWeight'ed weights.
const weightTolerance = 1e-9

// RunFullTextRecallConformance checks the full-text rule shared by every
// store: SearchTerms against IndexTerms, a match on any shared term, the
// "more than half of the best" threshold, ranking by matched terms then
// IDF weight then recency then ID, CJK grams matched as substrings,
// NFKC/case folding, and (storekit.TermsVersion 2) that only content
// terms count unless a query has none.
func RunFullTextRecallConformance(t *testing.T, h Harness) {
	runCases(t, h, []tcase{
		{"English", testFTEnglish},
		{"ThresholdMoreThanHalf", testFTThreshold},
		{"IDFTieBreak", testFTIDF},
		{"RecencyThenIDTieBreak", testFTRecency},
		{"Chinese", testFTChinese},
		{"SingleCJKCharacter", testFTSingleChar},
		{"Japanese", testFTJapanese},
		{"Mixed", testFTMixed},
		{"FoldingNFKCAndCase", testFTFolding},
		{"WholeWordsOnly", testFTWholeWords},
		{"KeyIsIndexed", testFTKey},
		{"NoMatch", testFTNoMatch},
		{"ContentTermsOnly", testFTContentTerms},
		{"FunctionWordsOnlyFallBack", testFTFallback},
	})
}

// ftRecord creates an active note whose key ("kx" + name) shares no term
// with any query the suite sends.
func (e *env) ftRecord(name, content string) memorykit.Record {
	e.t.Helper()
	in := e.active(memorykit.KindNote, "kx"+name, content)
	in.ID = "mem-ft-" + name
	return e.create(in)
}

// ft runs a full-text only recall of text.
func (e *env) ft(text string) storekit.RecallResult {
	e.t.Helper()
	q := query(e.scope)
	q.Terms = storekit.SearchTerms(text, 64)
	res := e.recall(q)
	if len(res.Exact) != 0 || len(res.Vector) != 0 {
		e.t.Fatalf("full-text query %q produced exact/vector hits", text)
	}
	return res
}

// hit is an expected full-text hit: record and matched term count.
type hit struct {
	rec     memorykit.Record
	matched int
}

func checkFT(t testing.TB, what string, got []storekit.Hit, want ...hit) {
	t.Helper()
	wantList := make([]string, len(want))
	for i, w := range want {
		wantList[i] = fmt.Sprintf("%s/%d", w.rec.ID, w.matched)
	}
	gotList := make([]string, len(got))
	for i, g := range got {
		gotList[i] = fmt.Sprintf("%s/%v", g.ID, g.Score)
	}
	wantIDs(t, what+" (id/matched)", gotList, wantList)
	checkRanks(t, what, got)
}

func (e *env) checkFTResult(t testing.TB, text string, kept []hit, below []hit) storekit.RecallResult {
	t.Helper()
	res := e.ft(text)
	checkFT(t, fmt.Sprintf("query %q kept", text), res.FullText, kept...)
	checkFT(t, fmt.Sprintf("query %q below", text), res.FullTextBelow, below...)
	e.checkRecords(t, e.scope, res)
	return res
}

func wantWeight(t testing.TB, h storekit.Hit, want float64) {
	t.Helper()
	if math.Abs(h.Weight-want) > weightTolerance {
		t.Fatalf("hit %s weight %v, want %v", h.ID, h.Weight, want)
	}
}

func testFTEnglish(t *testing.T, e *env) {
	a := e.ftRecord("a", "The deploy pipeline runs nightly")
	e.advance(time.Second)
	b := e.ftRecord("b", "deploy scripts live in ops")
	e.ftRecord("c", "unrelated gardening notes")
	// deploy, pipeline, run ("how", "does", "the" are function words).
	e.checkFTResult(t, "How does the deploy pipeline run?", []hit{{a, 2}}, []hit{{b, 1}})
	// Equal match and weight: the newer record first.
	e.checkFTResult(t, "deploy", []hit{{b, 1}, {a, 1}}, nil)
	e.checkFTResult(t, "gardening pipeline", []hit{{e.get(e.scope, "mem-ft-c"), 1}, {a, 1}}, nil)
}

func testFTThreshold(t *testing.T, e *env) {
	r4 := e.ftRecord("r4", "alpha bravo charlie delta")
	r3 := e.ftRecord("r3", "alpha bravo charlie")
	r2 := e.ftRecord("r2", "alpha bravo")
	r1 := e.ftRecord("r1", "alpha")
	// Best 4: 3 is more than half, 2 is exactly half and dropped.
	e.checkFTResult(t, "alpha bravo charlie delta", []hit{{r4, 4}, {r3, 3}}, []hit{{r2, 2}, {r1, 1}})
	// Best 3: 2 is more than half.
	e.checkFTResult(t, "alpha bravo charlie", []hit{{r3, 3}, {r4, 3}, {r2, 2}}, []hit{{r1, 1}})
	// Best 2: single matches are dropped.
	e.checkFTResult(t, "bravo delta", []hit{{r4, 2}}, []hit{{r2, 1}, {r3, 1}})
	// Best 1: everything matching is kept.
	e.checkFTResult(t, "delta", []hit{{r4, 1}}, nil)
}

func testFTIDF(t *testing.T, e *env) {
	caroline := e.ftRecord("caroline", "caroline sings")
	e.advance(time.Second)
	weather := e.ftRecord("weather", "blue weather is fine")
	e.advance(time.Second)
	sky := e.ftRecord("sky", "blue sky")
	e.advance(time.Second)
	sea := e.ftRecord("sea", "blue sea")
	// Records that are not recallable count toward neither n nor df.
	e.create(e.candidate(memorykit.KindNote, "kxcand", "blue caroline candidate"))
	old := e.create(e.active(memorykit.KindNote, "kxold", "caroline once more"))
	e.must(actForget, tr(e.scope, old.ID, reviewer))
	fut := e.active(memorykit.KindNote, "kxfuture", "caroline later")
	fut.EffectiveFrom = Epoch.Add(time.Hour)
	e.create(fut)
	e.create(newRec(Scope(t, "tenant-a", "project-other"), memorykit.KindNote, "kxother", "blue caroline elsewhere", memorykit.StatusActive))

	res := e.checkFTResult(t, "blue caroline", []hit{{caroline, 1}, {sea, 1}, {sky, 1}, {weather, 1}}, nil)
	rare := storekit.RoundWeight(storekit.IDF(4, 1))
	common := storekit.RoundWeight(storekit.IDF(4, 3))
	wantWeight(t, res.FullText[0], rare)
	for _, h := range res.FullText[1:] {
		wantWeight(t, h, common)
	}
}

func testFTRecency(t *testing.T, e *env) {
	b := e.ftRecord("b", "shared words")
	a := e.ftRecord("a", "shared words")
	e.advance(time.Second)
	c := e.ftRecord("c", "shared words")
	e.checkFTResult(t, "shared words", []hit{{c, 2}, {a, 2}, {b, 2}}, nil)
	e.advance(time.Second)
	if _, err := e.s.Correct(e.ctx, storekit.Correction{Transition: tr(e.scope, b.ID, reviewer), Content: "shared words, reworded"}); err != nil {
		t.Fatal(err)
	}
	e.checkFTResult(t, "shared words", []hit{{b, 2}, {c, 2}, {a, 2}}, nil)
}

func testFTChinese(t *testing.T, e *env) {
	a := e.ftRecord("a", "这个数据库很快")
	b := e.ftRecord("b", "数据分析报告")
	c := e.ftRecord("c", "天气很好")
	// 数据库 -> 数据, 据库: a holds both; b holds only 数据.
	e.checkFTResult(t, "数据库", []hit{{a, 2}}, []hit{{b, 1}})
	e.checkFTResult(t, "数据", []hit{{a, 1}, {b, 1}}, nil)
	e.checkFTResult(t, "数据库的分析", []hit{{a, 2}, {b, 2}}, nil)
	// 今天天气 | 很 | 好 | 吗 -> 今天, 天天, 天气, 好: c holds 天气 and 好.
	e.checkFTResult(t, "今天天气很好吗", []hit{{c, 2}}, nil)
	// One term each: 天气 (one record holds it) outweighs 数据 (two do).
	e.checkFTResult(t, "数据 天气", []hit{{c, 1}, {a, 1}, {b, 1}}, nil)
}

func testFTSingleChar(t *testing.T, e *env) {
	a := e.ftRecord("a", "这个数据库很快")
	e.ftRecord("b", "数据分析报告")
	c := e.ftRecord("c", "天气很好")
	e.checkFTResult(t, "库", []hit{{a, 1}}, nil)
	// 很 is a function character: alone, it falls back to being a term.
	e.checkFTResult(t, "很", []hit{{a, 1}, {c, 1}}, nil)
	// A lone character next to a word still forms its own term.
	e.checkFTResult(t, "api 库", []hit{{a, 1}}, nil)
}

func testFTJapanese(t *testing.T, e *env) {
	a := e.ftRecord("a", "東京タワーに行った")
	b := e.ftRecord("b", "東京駅で待ち合わせ")
	e.ftRecord("c", "大阪城の桜")
	// 東京タワー -> 東京, 京タ, タワ, ワー.
	e.checkFTResult(t, "東京タワー", []hit{{a, 4}}, []hit{{b, 1}})
	e.checkFTResult(t, "東京", []hit{{a, 1}, {b, 1}}, nil)
	e.checkFTResult(t, "待ち合わせ場所", []hit{{b, 4}}, nil)
	e.checkFTResult(t, "データ", nil, nil)
}

func testFTMixed(t *testing.T, e *env) {
	a := e.ftRecord("a", "deploy the 数据库 to 東京 region")
	b := e.ftRecord("b", "deploy only")
	c := e.ftRecord("c", "東京 office")
	d := e.ftRecord("d", "数据库 backup")
	x := e.ftRecord("e", "Deploy 数据库")
	// deploy 数据库 東京 -> deploy, 数据, 据库, 東京.
	res := e.checkFTResult(t, "deploy 数据库 東京", []hit{{a, 4}, {x, 3}}, []hit{{d, 2}, {c, 1}, {b, 1}})
	w3, w2 := storekit.IDF(5, 3), storekit.IDF(5, 2)
	wantWeight(t, res.FullText[0], storekit.RoundWeight(3*w3+w2))
	wantWeight(t, res.FullText[1], storekit.RoundWeight(3*w3))
	wantWeight(t, res.FullTextBelow[0], storekit.RoundWeight(2*w3))
	wantWeight(t, res.FullTextBelow[1], storekit.RoundWeight(w2))
	wantWeight(t, res.FullTextBelow[2], storekit.RoundWeight(w3))
}

func testFTFolding(t *testing.T, e *env) {
	a := e.ftRecord("a", "ＤＡＴＡＢＡＳＥ migration plan")
	b := e.ftRecord("b", "Database TUNING guide")
	e.checkFTResult(t, "database", []hit{{a, 1}, {b, 1}}, nil)
	e.checkFTResult(t, "ＤａｔａＢａｓｅ", []hit{{a, 1}, {b, 1}}, nil)
	e.checkFTResult(t, "MIGRATION", []hit{{a, 1}}, nil)
	e.checkFTResult(t, "tuning Guide", []hit{{b, 2}}, nil)
}

func testFTWholeWords(t *testing.T, e *env) {
	a := e.ftRecord("a", "deployment checklist")
	e.checkFTResult(t, "deploy", nil, nil)
	e.checkFTResult(t, "deployment", []hit{{a, 1}}, nil)
	e.checkFTResult(t, "check", nil, nil)
}

func testFTKey(t *testing.T, e *env) {
	r := e.create(e.active(memorykit.KindProcedure, "Nightly Backup", "runs at two"))
	e.checkFTResult(t, "backup", []hit{{r, 1}}, nil)
	e.checkFTResult(t, "nightly backup runs", []hit{{r, 3}}, nil)
}

func testFTNoMatch(t *testing.T, e *env) {
	e.ftRecord("a", "The deploy pipeline runs nightly")
	e.ftRecord("b", "这个数据库很快")
	for _, text := range []string{"xylophone", "", "!!! ???", "火山"} {
		e.checkFTResult(t, text, nil, nil)
	}
}

// testFTContentTerms: a record that repeats the question's function words
// must not outrank, or push below the threshold, the record holding the
// answer. Under TermsVersion 1 the chatter matched more terms in each case.
func testFTContentTerms(t *testing.T, e *env) {
	ledger := e.ftRecord("ledger", "we picked postgres for the ledger")
	e.ftRecord("chat", "what did you do about the thing we said")
	db := e.ftRecord("db", "数据库迁移到新集群")
	e.ftRecord("zh", "我们说了什么的呢")
	srv := e.ftRecord("srv", "新しいサーバーは大阪に置いた")
	e.ftRecord("ja", "それは何ですか、ですね")
	// ledger, database.
	e.checkFTResult(t, "What did we say about the ledger database?", []hit{{ledger, 1}}, nil)
	// 上周说 | 数据库 -> 上周, 周说, 数据, 据库 (我们, 了, 什么 are cut out).
	e.checkFTResult(t, "我们上周说了什么数据库", []hit{{db, 2}}, nil)
	// サーバー | 置き -> サー, ーバ, バー, 置き (は, どこ, に, ました, か cut out).
	e.checkFTResult(t, "サーバーはどこに置きましたか", []hit{{srv, 3}}, nil)
	if got := storekit.SearchTerms("我们上周说了什么数据库", 64); len(got) != 4 {
		t.Fatalf("terms = %q", got)
	}
}

// testFTFallback: a query made only of function words still matches, on
// every term, as under TermsVersion 1.
func testFTFallback(t *testing.T, e *env) {
	a := e.ftRecord("a", "what is the plan")
	b := e.ftRecord("b", "the plan")
	e.ftRecord("c", "unrelated notes")
	e.checkFTResult(t, "what is the", []hit{{a, 3}}, []hit{{b, 1}})
	zh := e.ftRecord("zh", "是我的")
	e.checkFTResult(t, "我的", []hit{{zh, 1}}, nil)
}
