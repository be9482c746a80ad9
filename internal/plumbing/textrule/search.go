package textrule

import (
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// NormalizeKey implements storekit.NormalizeKey, whose documentation states the rule.
func NormalizeKey(key string) string {
	s := strings.ToValidUTF8(key, "\uFFFD")
	// Folding can undo NFKC, NFKC can produce what folding changes, and a
	// prototype can be upper case or compose with what follows; a few
	// rounds reach the fixed point (in practice the second round changes
	// nothing).
	for i := 0; i < 8; i++ {
		next := normalizeKeyRound(s)
		if next == s {
			break
		}
		s = next
	}
	return s
}

func normalizeKeyRound(s string) string {
	s = strings.Map(blankToSpace, s)
	s = strings.Map(dropIgnorable, s)
	s = norm.NFKC.String(s)
	// A Caser keeps state, so each call gets its own.
	s = strings.Map(foldCherokee, cases.Fold().String(s))
	s = norm.NFKC.String(s)
	s = confusableFold(s)
	s = strings.Map(blankToSpace, s)
	s = strings.Map(dropIgnorable, s)
	return strings.Join(strings.Fields(s), " ")
}

// blankToSpace maps the characters that render as an empty cell, but are
// neither white space nor default-ignorable in every table, to a space.
func blankToSpace(r rune) rune {
	switch r {
	case 0x2800, 0x115F, 0x1160, 0x3164, 0xFFA0:
		return ' '
	}
	return r
}

// confusableFold replaces each character of s that imitates ASCII by what
// it imitates (asciiPrototype), working on the NFD form, and returns the
// result in NFKC. Everything else is left alone. A combining dot above
// (U+0307) right after a soft-dotted letter ("i", "j" and their kin) is
// dropped: it adds nothing visible.
func confusableFold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	prev := rune(-1)
	for _, r := range d {
		if r == 0x0307 && prev >= 0 && unicode.Is(unicode.Soft_Dotted, prev) {
			continue
		}
		if p, ok := asciiPrototype(r); ok {
			b.WriteString(p)
			prev = rune(p[len(p)-1])
			continue
		}
		b.WriteRune(r)
		prev = r
	}
	return norm.NFKC.String(b.String())
}

// lookAlikeScripts are the scripts whose letters NormalizeKey maps to the
// ASCII character they imitate: those that share glyphs with Latin, and
// the common symbols and punctuation.
var lookAlikeScripts = []*unicode.RangeTable{
	unicode.Latin, unicode.Greek, unicode.Cyrillic, unicode.Armenian, unicode.Cherokee, unicode.Coptic, unicode.Common,
}

// prototypeCache holds prototypeOf's answer for each rune of
// lookAlikeScripts seen so far (a string, "" for none). It is filled on
// use, so no caller pays for runes it never meets, and it is bounded by
// the size of those scripts (about 12,000 runes).
var prototypeCache sync.Map

// asciiPrototype returns the ASCII text r imitates, if any (prototypeOf,
// cached).
func asciiPrototype(r rune) (string, bool) {
	if r < utf8.RuneSelf || !unicode.In(r, lookAlikeScripts...) {
		return "", false
	}
	if v, ok := prototypeCache.Load(r); ok {
		p := v.(string)
		return p, p != ""
	}
	p, _ := prototypeOf(r)
	prototypeCache.Store(r, p)
	return p, p != ""
}

// prototypeOf returns the ASCII text r imitates: its UTS #39 confusable
// prototype, when r is outside ASCII, belongs to one of lookAlikeScripts,
// and its prototype is ASCII. The table's prototype of "m" is "rn"; ASCII
// keeps "m", so what imitates "m" becomes "m" too.
func prototypeOf(r rune) (string, bool) {
	if r < utf8.RuneSelf || !unicode.In(r, lookAlikeScripts...) {
		return "", false
	}
	p := confusables.Skeleton(string(r))
	if p == "" || p == string(r) {
		return "", false
	}
	for i := 0; i < len(p); i++ {
		if p[i] >= utf8.RuneSelf {
			return "", false
		}
	}
	return strings.ReplaceAll(p, "rn", "m"), true
}

// ignorableInKey reports whether NormalizeKey removes r: a character that
// renders as nothing (see NormalizeKey).
func ignorableInKey(r rune) bool {
	if unicode.IsSpace(r) {
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// foldCherokee maps Cherokee small letters to their capitals, which is
// how Unicode case folding treats Cherokee. cases.Fold swaps the two
// cases instead, so without this folding would not be idempotent.
func foldCherokee(r rune) rune {
	switch {
	case r >= 0xAB70 && r <= 0xABBF:
		return r - 0xAB70 + 0x13A0
	case r >= 0x13F8 && r <= 0x13FD:
		return r - 8
	}
	return r
}

func dropIgnorable(r rune) rune {
	if ignorableInKey(r) {
		return -1
	}
	return r
}

// SanitizeQuery implements storekit.SanitizeQuery, whose documentation states the rule.
func SanitizeQuery(q string, maxRunes int) string {
	q = strings.ToValidUTF8(q, "\uFFFD")
	q = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, q)
	return lastRunes(q, maxRunes)
}

// lastRunes returns the last n runes of s (all of s when it is shorter).
func lastRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := len(s)
	for c := 0; c < n && i > 0; c++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

// IsCJK implements storekit.IsCJK, whose documentation states the rule.
func IsCJK(r rune) bool {
	if r < 0x2E80 {
		// Below the first Han, Hiragana or Katakana code point (CJK
		// radicals): the common case, decided without a table lookup.
		return false
	}
	switch r {
	case 0x3005, 0x3006, 0x3007, 0x303B, 0x30FC:
		return true
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
}

func isWordRune(r rune) bool {
	return !IsCJK(r) && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))
}

// segment walks NFKC-lowercased text and reports each word and each run of
// CJK characters.
func segment(text string, word func(string), cjk func([]rune)) {
	s := strings.ToLower(norm.NFKC.String(strings.ToValidUTF8(text, " ")))
	var run []rune
	wordStart := -1
	flushWord := func(end int) {
		if wordStart >= 0 {
			word(s[wordStart:end])
			wordStart = -1
		}
	}
	flushRun := func() {
		if len(run) > 0 {
			cjk(run)
			run = run[:0]
		}
	}
	for i, r := range s {
		switch {
		case IsCJK(r):
			flushWord(i)
			run = append(run, r)
		case isWordRune(r):
			flushRun()
			if wordStart < 0 {
				wordStart = i
			}
		default:
			flushWord(i)
			flushRun()
		}
	}
	flushWord(len(s))
	flushRun()
}

// SearchTerms implements storekit.SearchTerms, whose documentation states the rule.
func SearchTerms(query string, maxTerms int) []string {
	if maxTerms <= 0 {
		return nil
	}
	content, all := newTermList(maxTerms), newTermList(maxTerms)
	grams := func(l *termList, run []rune) {
		if len(run) == 1 {
			l.add(string(run))
			return
		}
		for i := 0; i+1 < len(run); i++ {
			l.add(string(run[i : i+2]))
		}
	}
	segment(query, func(w string) {
		all.add(w)
		if !isStopword(w) {
			content.add(w)
		}
	}, func(run []rune) {
		grams(all, run)
		for _, piece := range cjkContentSegments(run) {
			grams(content, piece)
		}
	})
	if len(content.out) > 0 {
		return content.out
	}
	return all.out
}

// termList collects distinct terms in order, at most max.
type termList struct {
	max  int
	seen map[string]struct{}
	out  []string
}

func newTermList(max int) *termList {
	return &termList{max: max, seen: make(map[string]struct{})}
}

func (l *termList) add(t string) {
	if len(l.out) >= l.max {
		return
	}
	if _, ok := l.seen[t]; ok {
		return
	}
	l.seen[t] = struct{}{}
	l.out = append(l.out, t)
}

// IndexTerms implements storekit.IndexTerms, whose documentation states the rule.
func IndexTerms(key, content string) []string {
	// Sized for a term every 8 bytes or so, so indexing a record rarely
	// grows the set.
	seen := make(map[string]struct{}, (len(key)+len(content))/8+1)
	add := func(t string) { seen[t] = struct{}{} }
	cjk := func(run []rune) {
		for i := range run {
			add(string(run[i]))
			if i+1 < len(run) {
				add(string(run[i : i+2]))
			}
		}
	}
	segment(key, add, cjk)
	segment(content, add, cjk)
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// ExactKeys implements storekit.ExactKeys, whose documentation states the rule.
func ExactKeys(query string, max int) []string {
	if max <= 0 {
		return nil
	}
	seen := make(map[string]struct{})
	var out []string
	add := func(k string) {
		if k == "" || len(out) >= max {
			return
		}
		if _, ok := seen[k]; ok {
			return
		}
		seen[k] = struct{}{}
		out = append(out, k)
	}
	whole := NormalizeKey(strings.ToValidUTF8(query, " "))
	add(NormalizeKey(strings.TrimFunc(whole, isTrimmable)))
	for _, f := range strings.Fields(whole) {
		add(NormalizeKey(strings.TrimFunc(f, isTrimmable)))
	}
	return out
}

func isTrimmable(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) || unicode.IsSymbol(r) }
