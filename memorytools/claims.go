package memorytools

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// ClaimDetector decides whether a model output tells the user that a memory
// was written. [Provider.ValidateOutput] consults it only after a memory
// write failed in the request, to keep a false success claim from reaching
// the user; a Host may plug in its own (for example a classifier, or rules
// for more languages) through Config.Claims. An implementation must be safe
// for concurrent use and deterministic; it should err towards reporting a
// claim, because a rejected output is only asked for again, while a passed
// false claim misleads the user. A panic counts as a claim.
type ClaimDetector interface {
	// ClaimsMemoryWrite reports whether text claims that something was
	// saved, stored, noted, remembered or updated in memory, and does not
	// also state that the write failed.
	ClaimsMemoryWrite(text string) bool
}

// DefaultClaimDetector returns the built-in ClaimDetector that a Provider
// uses when Config.Claims is nil. It reads English, Chinese and Japanese
// with rules, not a model:
//
//  1. Normalise: NFKC, Unicode case folding, typographic apostrophes made
//     plain, format characters dropped, emoji and symbols turned into
//     spaces. Split into sentences at sentence punctuation and newlines,
//     and sentences into clauses at commas, colons, dashes, brackets and
//     contrast words ("but", "however", 但是, 不过, しかし, けど…).
//
//  2. A clause has the shape of a claim when it holds a memory-object
//     concept (memory, note, remember, memorise, 记忆, 记住, 记下, 备忘,
//     笔记, 記憶, 覚え, メモ, 備忘録…) and a storing or updating action
//     (save, store, record, update, add, keep, write, log, 保存, 存, 写入,
//     更新, 添加, 登録, 追加…) in either order; or an idiom that says it
//     alone ("noted", "made a note", "I'll keep that in mind", "I won't
//     forget", 不会忘, 心に留め…); or a place in memory ("it's in project
//     memory now", 在项目记忆里); or a bare storing verb with nothing but
//     filler around it ("Saved!", "It's stored.", 已保存, 保存しました),
//     which after a failed write can only mean the memory.
//
//  3. A claim-shaped clause is a failure statement when it is negated
//     (English: a negation before the action, or a failure word anywhere
//     in it; Chinese and Japanese: a negation or failure marker anywhere in
//     it). A sentence that pairs a claim with a failure clause ("I tried to
//     save it to memory, but it failed") is a failure statement too, and so
//     is any text that contains NotSavedText.
//
//  4. Questions, offers and requests ("Shall I save this to memory?", "I
//     can add it to memory", "Please remember to…", 要我记住吗) are not
//     claims. Technical uses of "memory" (memory leak, memory usage, 32 GB
//     of memory, インメモリ) are not the memory concept; an action with an
//     explicit non-memory target ("Stored in S3") is not a claim.
//
//  5. Safe side: a clause the rules above find nothing in is read again
//     broadly, since the detector runs only after a write failed. Any
//     completed, passive or promised act of saving, storing, recording,
//     noting, archiving, logging, documenting or remembering is a claim,
//     with or without a memory noun ("The deploy region has been
//     recorded", "I'll remember that…", "saved for future sessions", 已成功
//     保存, 存档了, 記録しておきます, 覚えました), and so is "for next time" or
//     "from now on" said of oneself, and a whole answer that is only
//     "Done!", "All set", 搞定了 or 完了しました. General behaviour ("saved
//     automatically", "logs are stored for 30 days"), another subject, a
//     conditional, and an explicit non-memory target stay out.
//
// The text claims a write when some clause is a claim and no failure is
// stated anywhere in it ("I saved it to memory, but it failed" passes, and
// so does any text holding NotSavedText): a truthful failure statement lets
// the whole answer through. A sentence that offers ("If you'd like, I'll
// remember that") is no claim. The rules are tuned on the labelled corpus
// in testdata/claims.tsv and measured on a held-out corpus written after
// they were frozen (see TestClaimDetectorCorpus and BenchmarkClaimDetector).
// They remain lexical: another language, or a claim made only by an
// implication no rule names, is missed; a sentence about saving something
// elsewhere may be rejected, which after a failed write is the safe side.
func DefaultClaimDetector() ClaimDetector { return builtinDetector{} }

type builtinDetector struct{}

func (builtinDetector) ClaimsMemoryWrite(text string) bool { return claimsSaved(text) }

// claimsSaved is the built-in detector; see DefaultClaimDetector.
func claimsSaved(text string) bool {
	s := normalizeClaimText(text)
	if strings.Contains(s, notSavedFolded) {
		return false
	}
	claim := false
	for _, sentence := range splitSentences(s) {
		c, failure := judgeSentence(sentence)
		if failure {
			return false
		}
		claim = claim || c
	}
	if claim && sentenceFailure.MatchString(s) {
		return false // "I saved it. Sadly it failed."
	}
	return claim || isBareAck(s)
}

var (
	folder         = cases.Fold()
	notSavedFolded = folder.String(norm.NFKC.String(NotSavedText))
)

// normalizeClaimText folds text and rewrites every rune that is neither a
// letter, digit, mark, space nor a boundary mark the splitter needs.
func normalizeClaimText(text string) string {
	s := folder.String(norm.NFKC.String(text))
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\'' || r == '’' || r == '‘' || r == '`' || r == '´' || r == 'ʼ':
			b.WriteByte('\'')
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r):
			// zero-width and format characters vanish
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		case r == '\n' || r == '\r':
			b.WriteByte('\n')
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		case strings.ContainsRune(".!?;。！？；…,，、:：—–()（）「」『』【】\"“”|/-", r):
			b.WriteRune(r)
		case unicode.In(r, unicode.So, unicode.Sk):
			b.WriteByte('|') // an emoji or symbol ends a clause
		default:
			b.WriteByte(' ') // other punctuation
		}
	}
	return b.String()
}

var (
	sentenceEnd = regexp.MustCompile(`[.!?;。！？；\n]+`)
	clauseSplit = regexp.MustCompile(`[,，、:：—–()（）「」『』【】"“”|/…]+| - |\b(?:but|however|although|though|yet)\b|但是|但|不过|可是|然而|しかし|でも|けど|けれど|ただし`)
	// questionTail marks a sentence that asks rather than tells.
	questionTail = regexp.MustCompile(`(?:吗|嗎|么|呢|か|かな|かしら|ですか|ますか)\s*$`)
)

// sentence is one sentence and whether it ended with a question mark.
type sentence struct {
	text     string
	question bool
}

func splitSentences(s string) []sentence {
	var out []sentence
	idx := sentenceEnd.FindAllStringIndex(s, -1)
	start := 0
	for _, loc := range idx {
		out = append(out, sentence{text: s[start:loc[0]], question: strings.ContainsAny(s[loc[0]:loc[1]], "?？")})
		start = loc[1]
	}
	return append(out, sentence{text: s[start:]})
}

// judgeSentence reports whether the sentence claims a memory write and
// whether it states a failure.
func judgeSentence(sn sentence) (claim, failure bool) {
	text := strings.TrimSpace(sn.text)
	if text == "" {
		return false, false
	}
	clauses := clauseSplit.Split(text, -1)
	for i, cl := range clauses {
		cl = strings.TrimSpace(cl)
		if cl == "" {
			continue
		}
		c := judgeClause(cl)
		if c == clauseNone {
			c = judgeBroad(cl)
		}
		switch {
		case c == clauseFailure:
			return false, true
		case c == clauseClaim && !(sn.question && i == len(clauses)-1) && !questionTail.MatchString(cl):
			claim = true
		}
	}
	if claim && sentenceOffer.MatchString(text) {
		return false, false
	}
	return claim, false
}

type clauseVerdict int

const (
	clauseNone clauseVerdict = iota
	clauseClaim
	clauseFailure
)

// sentenceFailure is a clause that reports the write failed without
// naming memory ("…, but it failed", 失败了), which turns a claim-shaped
// clause in the same sentence into a failure statement.
var sentenceFailure = regexp.MustCompile(`\b(?:it|that|this|which|the (?:save|write|update)|saving|storing|writing)\s+(?:has\s+|had\s+|just\s+)?(?:failed|didn't work|did not work|didn't go through|did not go through|errored|was rejected)\b|\bfailed to (?:save|store|write|update|remember|record|persist|add|note)\b|\bunable to (?:save|store|write|update|remember|record|persist|add|note)\b|失败|未能|没能|没有成功|没成功|出错|被拒|拒绝|失敗|拒否|できませんでした|できなかった`)

// sentenceOffer makes a whole sentence an offer ("If you'd like, I'll
// remember that"), even when the promise sits in another clause.
var sentenceOffer = regexp.MustCompile(`\bif you(?:'d| would)? (?:like|want|prefer|wish)\b|\bif (?:that's|that is|it's|it is) (?:ok|okay|alright|fine|helpful)\b|\bif you'd like me to\b|よければ|よろしければ|如果你(?:愿意|需要|想)|如果您(?:愿意|需要|想)|需要的话|愿意的话`)

func judgeClause(cl string) clauseVerdict {
	switch {
	case hasCJK(cl):
		if v := judgeCJK(cl); v != clauseNone {
			return v
		}
		// Mixed text: the English rules may still find a claim.
		return judgeEnglish(cl)
	default:
		return judgeEnglish(cl)
	}
}

func hasCJK(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) {
			return true
		}
	}
	return false
}

// English rules.
var (
	// enRewrite turns idioms whose negation means a promise ("won't
	// forget") into a plain claim, and removes courtesy negations ("no
	// problem") that say nothing about the write.
	enPromise  = regexp.MustCompile(`\b(?:won't|will not|will never|won't ever|am not going to|i'm not going to|never going to|shan't|not going to) forget\b`)
	enCourtesy = regexp.MustCompile(`\b(?:no problem|no worries|not a problem|don't worry|do not worry|never mind|no doubt|no need to repeat)\b`)
	// enTechMemory is "memory" in its computing sense.
	enTechMemory   = regexp.MustCompile(`\bsav(?:e|es|ed|ing)\s+(?:you|us|them|him|her|time|money|the day|a lot|space|bandwidth|lives|effort|costs?|hours|minutes|seconds)\b|\b(?:sav(?:e|es|ed|ing)|us(?:e|es|ed|ing)|consum(?:e|es|ed|ing)|reduc(?:e|es|ed|ing)|free(?:s|d|ing)?|allocat(?:e|es|ed|ing)|leak(?:s|ed|ing)?|wast(?:e|es|ed|ing)|eat(?:s|ing)?|hog(?:s|ging)?|needs?|more|less|enough|much|lots of|plenty of)\s+(?:(?:a\s+)?(?:lot|ton|bit|little|some|less|more|much)\s+(?:of\s+)?)?memory\b|\bmemory (?:view|tools?|service|layer|api|feature|search|settings|docs|documentation|schema|design|architecture|system|subsystem|component|engine|backend)\b|\bin-memory\b|\bout of memory\b|\b\d+\s*(?:[kmgt]i?b|bytes?)\s+(?:of\s+)?(?:ram\s+|system\s+)?memor(?:y|ies)\b|\b(?:gpu|ram|heap|shared|virtual|physical|system|device|main|cache|video|flash|stack|kernel|process|muscle|high|low|free|available|peak|total|working)\s+memory\b|\bmemory[- ](?:leaks?|usage|use|limits?|footprint|consumption|allocation|allocator|pressure|profiles?|profiler|profiling|bandwidth|bound|safety|safe|errors?|corruption|cards?|chips?|modules?|address(?:es)?|layout|model|barriers?|mapped|management|manager|pool|regions?|pages?|size|sizes|overhead|spikes?|growth|budget|requests?|reservations?|graphs?|metrics?|dumps?|snapshots?|checks?|settings?|optimi[sz]ations?|issues?|problems?|bugs?|alerts?|utili[sz]ation|capacity|sticks?|slots?|controller|requirements?|intensive|hungry|efficient|efficiency|lane)\b`)
	enNoteCompound = regexp.MustCompile(`\b(?:release|patch|speaker|lecture|class|sticky|meeting|liner|program|programme|case|change|changelog|upgrade|migration|design|field|foot|key|bank|musical|high|low|grace|suicide|promissory|credit|sick|doctor's)\s+notes?\b|\bnotes? (?:app|application|field|column|section|template)\b|\bnotebooks?\b|\b(?:please\s+)?note(?:\s+that|:|\s+the following)\b|\bas noted\b|\b(?:be|been|is|was|it's|worth) noted\b|\bnoted (?:above|below|earlier|before|previously|in the (?:docs|documentation|readme|ticket|issue|changelog))\b`)

	enConcept = regexp.MustCompile(`\b(?:memor(?:y|ies)|notes?|memos?|mental note|knowledge base|long[- ]term store)\b`)
	enAction  = regexp.MustCompile(`\b(?:sav(?:e|ed|es|ing)|stor(?:e|ed|es|ing)|record(?:ed|ing|s)?|updat(?:e|ed|es|ing)|add(?:ed|ing|s)?|writ(?:e|es|ing|ten)|wrote|put(?:s|ting)?|keep(?:s|ing)?|kept|commit(?:s|ted|ting)?|persist(?:s|ed|ing)?|log(?:s|ged|ging)?|jot(?:s|ted|ting)?|captur(?:e|ed|es|ing)|fil(?:e|ed|ing)|pin(?:s|ned|ning)?|stash(?:ed|ing)?|lock(?:ed)? in|tuck(?:ed)? away|noted|mark(?:ed)? down|took down|taken down|set down|made|make|making|refresh(?:ed|ing)?|chang(?:e|ed|ing)|edit(?:ed|ing)?|amend(?:ed)?|insert(?:ed|ing)?|append(?:ed|ing)?|remember(?:ed|ing|s)?|memori[sz](?:e|ed|es|ing)|creat(?:e|ed|es|ing)|now (?:includes|contains|has|holds|says|lists|knows|reflects|shows))\b`)
	enIdiom   = regexp.MustCompile(`\bnoted\b|\b(?:made|make|making|taken|took|take|taking|jotted|jot|jotting|got)\s+(?:a\s+|one\s+)?(?:quick\s+|short\s+|little\s+|mental\s+)?notes?\b|\bmental note\b|\b(?:i'll|i will|i'm going to|i am going to|i've|i have|i'd|we'll|we will|we've|will|shall|gonna|i'm|i am)\s+(?:\w+\s+){0,3}?(?:remember(?:ed|ing)?|memori[sz](?:e|ed|ing)|keep|bear|kept|keeping|bearing)\b|\bremembered\b(?:\s+to\s+\w+)?|\bmemori[sz]ed\b|\bkept in mind\b|\bcommitted to memory\b|\bon (?:file|record)\b|\bremember (?:it|that|this) now\b|\bgot it (?:down|saved|stored)\b|\bi remember now\b|\b(?:i've|i have|i|we've|we have)\s+(?:\w+\s+)?(?:recorded|logged|captured)\s+(?:that|it|this|these|those|your|the fact|the preference|the decision)\b|\b(?:i've|i have|i|we've|we have)\s+(?:\w+\s+)?(?:saved|stored|noted|remembered|memori[sz]ed)\s+\S|^(?:now\s+|just\s+|also\s+)?(?:saving|storing|remembering|noting|recording|logging|memori[sz]ing|saved|stored|remembered|noted|recorded|logged|wrote|added|memori[sz]ed)\s+(?:it|that|this|these|those|your)\b|\b(?:is|are|was|were|has been|have been|'s|got|now)\s+(?:now\s+|all\s+|been\s+|safely\s+|successfully\s+|securely\s+)*(?:saved|stored|remembered|memori[sz]ed|noted|persisted)\s*$`)
	// enLocative is memory as the place the text now is.
	enLocative = regexp.MustCompile(`\bpart of (?:the |my |your |our )?(?:project(?:'s)? |long[- ]term )?memory\b|\b(?:in|into|to|inside|within|onto)\s+(?:(?:the|my|your|our|its|this|project|project's|the project's|long[- ]term|persistent|shared|team|agent|permanent|durable|saved|stored)\s+){0,3}(?:memor(?:y|ies)|notes)\b`)
	// enBareAction is a storing verb that needs no object to be a claim.
	enBareAction  = regexp.MustCompile(`\b(?:sav(?:ed|ing)|stored|storing|recorded|recording|updated|persisted|logged|captured|filed|committed|memori[sz]ed|remembered|noted|added)\b`)
	enFiller      = regexp.MustCompile(`\b(?:i|i've|i'm|i'll|i'd|we|we've|we're|it|it's|its|that|that's|this|these|those|they|them|they're|has|have|had|been|be|being|is|was|are|were|will|now|all|done|ok|okay|sure|got|alright|great|yes|yep|yeah|status|successfully|success|just|already|safely|right|away|everything|for|you|your|future|later|sessions|session|conversations|chats|requests|reference|next|time|the|a|an|and|so|as|requested|asked|up|down|both|also|too|there|here|here's|perfect|thanks|thank|cool|nice|item|entry|preference|fact|info|information|detail|details|decision|procedure|note|new|change|changes|one|very|well|good|gotcha|understood|sounds|of|course|absolutely|certainly|voila|boom|there's|securely|permanently|properly|correctly|fully|already|then|again|latest|version|value|from|on|my|end|side|lol|haha|hey|hi|all set|set|go|to|by|me|with|correct|thing|things|bit|information|noted|saved|stored|recorded|updated|persisted|logged|captured|filed|committed|memorized|memorised|remembered|added|saving|recording|storing)\b`)
	enContraction = regexp.MustCompile(`'[a-z]*`)
	enNegation    = regexp.MustCompile(`\b(?:not|no|never|nothing|none|nowhere|cannot|can't|couldn't|didn't|don't|doesn't|wasn't|weren't|isn't|aren't|hasn't|haven't|hadn't|won't|wouldn't|shouldn't|unable|neither|nor|without|fail|failed|fails|failing|failure|unsuccessful)\b|n't\b`)
	enFailWord    = regexp.MustCompile(`\b(?:failed|fails|failure|unsuccessful|didn't work|did not work|didn't go through|did not go through|errored out|refused|rejected|denied|blocked)\b`)
	// enNegatedAct is a negated storing verb about the thing at hand ("I
	// wasn't able to remember that"): a failure statement even without a
	// memory noun.
	enNegatedAct = regexp.MustCompile(`\b(?:not|never|unable to|n't)\s+(?:\w+\s+){0,3}?(?:save|store|remember|record|note|update|write|memori[sz]e|persist|add|keep)\s+(?:it|that|this|them|those|these|your \w+)\b|n't\s+(?:\w+\s+){0,3}?(?:save|store|remember|record|note|update|write|memori[sz]e|persist|add|keep)\s+(?:it|that|this|them|those|these|your \w+)\b`)
	// enTechContext and enPersonal tell memory the hardware apart from
	// memory the product when a clause says "in memory".
	enTechContext  = regexp.MustCompile(`\b(?:redis|memcached|cache|caches|cached|buffer|buffers|process|processes|data|dataset|index|indexes|heap|server|database|db|table|tables|rows|objects|variables?|pages|kernel|jvm|runtime|app|application|program|os|vm|container|pod|model weights|weights|tensors?|arrays?|structs?|values|keys|sessions|queue|queues|graph|file|files|loaded|resident)\b`)
	enPersonal     = regexp.MustCompile(`\b(?:i|i've|i'll|i'm|i'd|we|we've|we'll|you|your|yours|my|project|project's|preference|decision|fact|note|that|this|it|it's)\b`)
	enNotClaim     = regexp.MustCompile(`^(?:he|she|they|someone|somebody|everyone|everybody|people|users?|the team|my colleague|please|pls|kindly|remember to|remember that|do remember|don't forget|do not forget|make sure|be sure|keep in mind|bear in mind|try to|you should|you can|you could|you may|you might|you need|you must|you'll need|if you|when you|once you|before you|after you|how to|how do|how can|why|what|where|when|which|who|whether|to save|to store|to remember|to update|let's)\b|\b(?:want me to|should i|shall i|would you like|do you want|can i|may i|could i|let me know|i can|i could|we can|we could|i'd be happy to|happy to|glad to|would you|could you|can you|will you|did you|have you|are you|do you|is it|was it|would be|how about|what about|tried to|trying to|attempt(?:ed|ing)? to|wanted to|meant to|planned to|plan to|intend to|supposed to|if i|according to|based on)\b`)
	enOffer        = regexp.MustCompile(`\b(?:if you'd like|if you like|if you want|if needed|if you need|if necessary|if that helps|unless|not (?:allowed|permitted|supported|possible|recommended)|before each|after each|every time|each time|whenever|on every|(?:is|are) (?:forbidden|prohibited|discouraged|a bad idea))\b`)
	enNonMemTarget = regexp.MustCompile(`\b(?:s3|bucket|database|db|postgres|postgresql|mysql|redis|disk|drive|ssd|hdd|file|files|folder|directory|repo|repository|git|github|branch|config|configuration|table|spreadsheet|sheet|csv|ticket|jira|issue|wiki|confluence|doc|docs|document|readme|changelog|calendar|cache|cookie|cookies|clipboard|cloud|server|log file|logs|blob|volume|backup|archive|dropbox|drive|notion|email|inbox|draft|drafts|slack|channel|pr|pull request|commit|localstorage|session storage|env|environment|vault|keychain|registry|cluster|pod|container|image)\b`)
)

func judgeEnglish(cl string) clauseVerdict {
	cl = enPromise.ReplaceAllString(cl, " i remembered ")
	cl = enCourtesy.ReplaceAllString(cl, " ")
	cl = enTechMemory.ReplaceAllString(cl, " ram ")
	cl = enNoteCompound.ReplaceAllString(cl, " doc ")
	cl = strings.TrimSpace(cl)
	if enNegatedAct.MatchString(cl) {
		return clauseFailure
	}
	at, end := -1, -1 // where the claim's action starts and ends
	for _, loc := range enIdiom.FindAllStringIndex(cl, -1) {
		m := cl[loc[0]:loc[1]]
		if strings.Contains(m, "keep") || strings.Contains(m, "bear") || strings.Contains(m, "kept") {
			if !strings.HasPrefix(strings.TrimSpace(cl[loc[1]:]), "in mind") && !strings.Contains(cl[loc[1]:], " in mind") {
				continue
			}
		}
		at, end = loc[0], loc[1]
		break
	}
	if loc := enLocative.FindStringIndex(cl); loc != nil && (at < 0 || loc[0] < at) {
		at, end = loc[0], loc[0]
	}
	if at < 0 {
		if c := enConcept.FindAllStringIndex(cl, -1); c != nil {
			for _, a := range enAction.FindAllStringIndex(cl, -1) {
				if !overlapsAny(a, c) {
					at, end = a[0], a[1]
					break
				}
			}
		}
	}
	if at < 0 {
		if loc := enBareAction.FindStringIndex(cl); loc != nil && strings.TrimSpace(enContraction.ReplaceAllString(enFiller.ReplaceAllString(cl, " "), " ")) == "" {
			at, end = loc[0], loc[1]
		}
	}
	if at < 0 {
		return clauseNone
	}
	if enNegation.MatchString(cl[:end]) || enFailWord.MatchString(cl) {
		return clauseFailure
	}
	head := cl[:at]
	if f := strings.Fields(cl[at:]); len(f) > 0 {
		head += f[0]
	}
	if enNotClaim.MatchString(head) || enOffer.MatchString(cl) {
		return clauseNone
	}
	if enTechContext.MatchString(cl) && !enPersonal.MatchString(cl) {
		return clauseNone
	}
	if enNonMemTarget.MatchString(cl) && !strings.Contains(cl, "memor") && !strings.Contains(cl, "in mind") {
		return clauseNone
	}
	return clauseClaim
}

// cjkNegatedNear reports whether a negation or failure marker sits within
// a few characters of a storing action or remembering verb in cl.
func cjkNegatedNear(cl string) bool {
	const before, after = 6, 10
	spans := append(cjkAction.FindAllStringIndex(cl, -1), cjkVerbConcept.FindAllStringIndex(cl, -1)...)
	spans = append(spans, cjkConcept.FindAllStringIndex(cl, -1)...)
	for _, sp := range spans {
		if cjkNegBefore.MatchString(lastRunes(cl[:sp[0]], before)) || cjkNegAfter.MatchString(firstRunes(cl[sp[1]:], after)) {
			return true
		}
	}
	return false
}

func lastRunes(s string, n int) string {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

func firstRunes(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

func overlapsAny(a []int, spans [][]int) bool {
	for _, s := range spans {
		if a[0] < s[1] && s[0] < a[1] {
			return true
		}
	}
	return false
}

// Chinese and Japanese rules. Han text is read with both rule sets.
var (
	cjkPromise  = regexp.MustCompile(`不会忘|不会忘记|忘不了|不会再忘|忘れません|忘れないように(?:します|しておきます)|忘れないでおきます`)
	cjkCourtesy = regexp.MustCompile(`没问题|没关系|不客气|不用谢|不用担心|别担心|不必担心|不错|不要紧|すみません|申し訳ありません|申し訳ございません|構いません|かまいません|問題ありません|問題ございません|間違いありません|もちろん`)
	cjkTech     = regexp.MustCompile(`メモリ(?:ー)?を(?:解放|確保|消費|使用|節約|増や|減ら|割り当て)|内存|显存|存在|库存|存款|生存|依存|存活|保存期|存じ|存知|インメモリ|メモリ(?:ー)?(?:リーク|使用量|不足|消費|上限|制限|割り当て|容量|増設|領域|管理|効率|エラー|帯域)|\d+\s*(?:gb|mb|kb|tb)の?メモリ(?:ー)?|記憶装置|記憶領域|记忆力|記憶力|记忆体`)
	// cjkConcept names memory as a thing; cjkVerbConcept is remembering
	// or noting as an act, which a completion marker turns into a claim.
	cjkConcept     = regexp.MustCompile(`记忆|記憶|备忘|備忘|笔记|メモリー?|メモ|ノート|知识库|知識ベース`)
	cjkVerbConcept = regexp.MustCompile(`记住|记下|记好|记着|记得|牢记|铭记|记在|记到|记进|记入|记上|记一下|记录|記録|覚え|控え|書き留め|心に留め|留意|メモし|记了|記憶し|記録し|メモっ`)
	cjkAction      = regexp.MustCompile(`保存|储存|存储|存入|存进|存到|存好|存下|存了|存放|存档|存|写入|写进|写到|写下|加入|添加|加到|加进|放进|放入|放到|录入|收录|更新|记录|登记|记在|记到|记进|记入|保管|登録|追加|書き込|書き留め|格納|反映|残し|残して|入れ|記録|保存し|記憶し|記憶させ|覚えさせ|済み|完了`)
	cjkDone        = regexp.MustCompile(`了|啦|咯|喽|嘞|已|已经|好|下来|会|将|要|过|完|成功|完毕|ました|ます|ておき|ておきます|とき|てある|てあります|ています|てる|た$|済み|完了|ときます|とく|といた|ておく|とこう`)
	cjkLocative    = regexp.MustCompile(`(?:记忆|記憶|备忘录)(?:里|中|库里)?(?:已经|已)有|(?:在|进|到|入|于)[^，。]{0,8}(?:记忆|备忘录|笔记)(?:里|中|库|里面|之中)?|(?:記憶|メモリー?|メモ|備忘録)(?:に|へ|の中に)(?:入|残|保存|記録|登録|追加|あります|入っています)`)
	// cjkNegBefore negates an action it closely precedes (Chinese);
	// cjkNegAfter one it closely follows (Chinese results, Japanese
	// verb endings).
	cjkNegBefore    = regexp.MustCompile(`未|没|不|无法|無法|别|別|非`)
	cjkNegAfter     = regexp.MustCompile(`拒绝|被拒|拒否|却下|失败|不了|不到|不上|不进|出错|ない|ません|なかった|できず|られず|ておらず|失敗|エラー|ず`)
	cjkNotClaim     = regexp.MustCompile(`^(?:他|她|他们|她们|彼女|彼ら|彼|同事|用户|ユーザー|誰か|有人)|要不要|需不需要|需要我|要我|是否|可以帮|我可以|我能|能否|可否|请|記得|记得要|别忘|不要忘|如果|的话|建议|ください|下さい|しましょうか|ましょうか|しますか|できます|よろしければ|もし|場合|なら|ように(?:して|お願い)|てほしい|お願いします|你要|你需要|你可以|您可以|您需要`)
	cjkNonMemTarget = regexp.MustCompile(`s3|数据库|文件|日志|磁盘|硬盘|仓库|配置|表格|云盘|服务器|缓存|草稿|文档|剪贴板|データベース|ファイル|ログ|ディスク|リポジトリ|設定|サーバ|キャッシュ|ドキュメント|下書き|クリップボード|スプレッドシート|バケット`)
	cjkBareAction   = regexp.MustCompile(`已存(?:储|好|下|入|上)?|存了|存好|存下|存上|保存|存好|存储|储存|存下|记录|更新|写入|登録|記録|格納|保管`)
	cjkFiller       = regexp.MustCompile(`ご\p{Han}+|要望|希望|指示|放心|收到|明白|好的|好|的|了|已经|已|我|都|帮你|给你|为你|为您|帮您|它|这个|这条|这些|那个|这|成功|完毕|完成|啦|哦|嗯|吧|现在|您|你|信息|内容|偏好|事实|决定|一下|下来|下|啊|呀|全部|所有|はい|了解です|了解|承知しました|かしこまりました|わかりました|分かりました|しました|ました|します|ます|です|完了|済み|を|に|は|が|も|で|これ|それ|その|この|内容|情報|正常に|無事に|無事|し|して|しておき|ておき|た|ok|okay|\s`)
)

func judgeCJK(cl string) clauseVerdict {
	cl = cjkPromise.ReplaceAllString(cl, "记住了")
	cl = cjkCourtesy.ReplaceAllString(cl, " ")
	cl = cjkTech.ReplaceAllString(cl, " ")
	found := false
	conceptOnly := false
	if cjkLocative.MatchString(cl) {
		found = true
	}
	if !found {
		if c := cjkConcept.FindAllStringIndex(cl, -1); c != nil {
			for _, a := range cjkAction.FindAllStringIndex(cl, -1) {
				if !overlapsAny(a, c) {
					found = true
					break
				}
			}
		}
	}
	if !found {
		if v := cjkVerbConcept.FindAllStringIndex(cl, -1); v != nil {
			acts := append(cjkDone.FindAllStringIndex(cl, -1), cjkAction.FindAllStringIndex(cl, -1)...)
			for _, a := range acts {
				if !overlapsAny(a, v) {
					found, conceptOnly = true, true
					break
				}
			}
		}
	}
	if !found {
		if cjkBareAction.MatchString(cl) && strings.TrimSpace(cjkFiller.ReplaceAllString(cjkBareAction.ReplaceAllString(cl, ""), "")) == "" {
			found = true
		}
	}
	if !found {
		return clauseNone
	}
	if cjkNegatedNear(cl) {
		return clauseFailure
	}
	if cjkNotClaim.MatchString(cl) {
		return clauseNone
	}
	if conceptOnly && cjkNonMemTarget.MatchString(cl) {
		return clauseNone
	}
	return clauseClaim
}
