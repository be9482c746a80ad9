package textrule

import "strings"

// TermsVersion implements storekit.TermsVersion, whose documentation states the rule.
const TermsVersion = 2

// Why function words are left out: the full-text rule ranks by how many
// distinct query terms a record holds and keeps only records holding more
// than half as many as the best one. In a conversational query most tokens
// are function words ("what did we say about the …", "我们上周说的…"), so a
// record that repeats the question's grammar outranks, and can push below
// the threshold, the record that holds the answer in other words. The
// lists are deliberately small: closed-class words (articles, pronouns,
// auxiliaries, prepositions, conjunctions, question words) and a few verbs
// that only frame a question about memory (remember, mention, say, tell).
// Words that are sometimes content ("may", "march", "new"; 会, 要, 去, 不)
// stay terms.

// englishStopwords are lower-case English function words. Apostrophes split
// words (see segment), so contraction pieces ("don", "t", "ll") are listed.
var englishStopwords = setOf(strings.Fields(`
a an the this that these those
i me my mine myself we us our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
what which who whom whose when where why how whatever whenever
am is are was were be been being
do does did doing done
have has had having
would should could shall might must ought
of in on at by for with about against between into through during before after
above below to from up down out off over under again further
then once here there all any both each few more most other some such
no nor not only own same so than too very just also
and but or if because as until while
s t d ll m re ve don didn doesn isn aren wasn weren hasn haven hadn
won wouldn shouldn couldn cannot
will can much many get got kind thing things happen happened
ok okay oh yeah yes hey hi
remember recall mention mentioned tell told say said says
`))

// cjkFunctionChars are Chinese and Japanese characters that alone carry
// grammar rather than content: particles, pronouns, copulas, aspect and
// question markers.
var cjkFunctionChars = setOf(strings.Fields(`
的 了 是 在 我 你 您 他 她 它 们 吗 呢 吧 啊 呀 哦 嗯 和 与 及 或 也 都 就 还 又 很 这 那 个 么 什 怎 哪 谁 着 过 把 被 给 让 对 从 而 之
の は が を に で と も へ や か ね よ な
`))

// cjkFunctionWords are multi-character function words, matched before the
// single characters (longest first).
var cjkFunctionWords = []string{
	"什么时候", "怎么样", "为什么",
	"でしょう", "について", "ください", "でした", "ました", "ません", "という",
	"时候", "哪里", "哪儿", "哪天", "多少", "多长",
	"です", "ます", "ある", "いる", "する", "した", "して", "ない", "から", "まで", "より",
	"これ", "それ", "あれ", "どれ", "どこ", "なに", "なん", "だれ", "いつ",
	"何", "誰",
}

// cjkFunctionRunes holds cjkFunctionWords as runes, in the same order.
var cjkFunctionRunes = func() [][]rune {
	out := make([][]rune, len(cjkFunctionWords))
	for i, w := range cjkFunctionWords {
		out[i] = []rune(w)
	}
	return out
}()

func setOf(words []string) map[string]struct{} {
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}

// isStopword reports whether a lower-cased word is a function word.
func isStopword(w string) bool {
	_, ok := englishStopwords[w]
	return ok
}

// cjkContentSegments cuts a run of CJK characters at its function words
// and characters and returns the pieces in between. A two-character gram
// that straddles a function character ("决定了什么" → "定了") would only
// match records repeating the question's grammar, so grams are taken
// inside the pieces only.
func cjkContentSegments(run []rune) [][]rune {
	var out [][]rune
	start := 0
	for i := 0; i < len(run); {
		n := cjkFunctionAt(run, i)
		if n == 0 {
			i++
			continue
		}
		if i > start {
			out = append(out, run[start:i])
		}
		i += n
		start = i
	}
	if start < len(run) {
		out = append(out, run[start:])
	}
	return out
}

// cjkFunctionAt returns how many runes of run, from i, form a function word
// or character (0 when run[i] starts content).
func cjkFunctionAt(run []rune, i int) int {
	for _, wr := range cjkFunctionRunes {
		if i+len(wr) <= len(run) && runesEqual(run[i:i+len(wr)], wr) {
			return len(wr)
		}
	}
	if _, ok := cjkFunctionChars[string(run[i])]; ok {
		return 1
	}
	return 0
}

func runesEqual(a, b []rune) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
