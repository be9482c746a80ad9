package memorytools

import (
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// claimsSaved reports whether text claims that a memory was saved. It is
// the heuristic behind Provider.ValidateOutput.
//
// The text is NFKC-normalised, lower-cased and split into clauses at
// sentence punctuation (Latin and CJK), commas, and the words "but", "但是",
// "但" and "不过". A clause claims success when it holds a success phrase
// with no negation before it in the same clause:
//
//   - English phrases: saved, stored, remembered, memorised/memorized,
//     noted, recorded, logged, persisted, "will remember" / "'ll remember",
//     "committed to memory", "added … to memory", "kept in mind";
//     negations: not, no, never, nothing, without, cannot, unable, failed,
//     and any word ending in "n't".
//   - Chinese phrases: 已保存, 保存好, 保存成功, 已经保存, 已记住, 记住了,
//     已经记住, 记下了, 已记下, 已存储, 已储存, 存储成功, 已记录, 记录好,
//     已经记录, 已存入, 存好了, 已写入, 会记住, 已添加到记忆;
//     negations: 未, 没, 不, 无, 失败.
//
// Limits: it is lexical, not semantic. It misses paraphrases ("it's in my
// notes now"), other languages, and claims made only by implication; and it
// rejects some honest outputs that use a success word about something else
// ("the file is stored in S3") or put a negation before the claim for
// another reason. Once a write has failed it errs towards rejecting, which
// is the safe side: the Host asks the model again, and a truthful answer
// ("项目记忆未保存", "the memory was not saved") passes.
func claimsSaved(text string) bool {
	s := strings.ToLower(norm.NFKC.String(text))
	s = strings.NewReplacer("’", "'", "‘", "'", "`", "'").Replace(s)
	for _, clause := range clauseSplit.Split(s, -1) {
		if clauseClaims(clause) {
			return true
		}
	}
	return false
}

var (
	clauseSplit = regexp.MustCompile(`[.!?;:\n,。！？；：，、…]+|\bbut\b|但是|但|不过`)

	englishClaim = regexp.MustCompile(`\b(saved|stored|remembered|memori[sz]ed|noted|recorded|logged|persisted|will remember|'ll remember|committed to memory|kept in mind|added\b[^.]{0,40}\bto (?:(?:the|your|my|our|project)\s+){0,2}memory)\b`)
	englishNeg   = regexp.MustCompile(`\b(not|no|never|nothing|without|cannot|unable|failed|fail|fails)\b|n't\b`)

	chineseClaims = []string{
		"已保存", "保存好", "保存成功", "已经保存", "已记住", "记住了", "已经记住", "记下了", "已记下",
		"已存储", "已储存", "存储成功", "已记录", "记录好", "已经记录", "已存入", "存好了", "已写入",
		"会记住", "已添加到记忆",
	}
	chineseNeg = []string{"未", "没", "不", "无", "失败"}
)

func clauseClaims(clause string) bool {
	for _, loc := range englishClaim.FindAllStringIndex(clause, -1) {
		if !englishNeg.MatchString(clause[:loc[0]]) {
			return true
		}
	}
	for _, phrase := range chineseClaims {
		for from := 0; ; {
			i := strings.Index(clause[from:], phrase)
			if i < 0 {
				break
			}
			at := from + i
			negated := false
			for _, n := range chineseNeg {
				if strings.Contains(clause[:at], n) {
					negated = true
					break
				}
			}
			if !negated {
				return true
			}
			from = at + len(phrase)
		}
	}
	return false
}
