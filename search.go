package memorykit

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

// NormalizeKey returns the canonical form of a record key, so that keys
// that look alike are one key:
//
//   - invalid UTF-8 becomes U+FFFD;
//   - characters that render as a blank cell count as white space: the
//     braille blank (U+2800) and the Hangul fillers (U+115F, U+1160,
//     U+3164, U+FFA0);
//   - characters that render as nothing are removed: format characters
//     (Unicode Cf: zero-width space and joiners, word joiner, soft hyphen,
//     byte order mark, bidirectional controls, tag characters), the other
//     default-ignorable code points (such as the combining grapheme
//     joiner), variation selectors, and control characters that are not
//     white space;
//   - NFKC, then full case folding (so "Straße" and "STRASSE" are one key),
//     then NFKC again;
//   - a character outside ASCII that imitates ASCII is replaced by what
//     it imitates: on the NFD form, a letter or symbol of the Latin,
//     Greek, Cyrillic, Armenian, Cherokee or Coptic script or of the
//     common symbols whose prototype in the Unicode confusables table of
//     UTS #39 (the skeleton mapping; confusables.txt of Unicode 13.0.0,
//     from github.com/mtibben/confusables) is ASCII text; so a Cyrillic "е", a
//     Greek "ο" or a dotless "ı" becomes the Latin letter, and accents
//     stay where they were; a combining dot above that follows "i" or
//     "j", which already carry a dot, is removed;
//   - white space (every Unicode space, tabs, line breaks and the blank
//     characters above) is trimmed and inner runs become one ASCII space;
//   - all of this is repeated until nothing changes.
//
// So "deploy region", "dеploy region" (Cyrillic е), "deplοy region"
// (Greek ο), "deploy regıon" (dotless ı), "deploy regi\u0307on" and
// "deploy\u2800region" are one key: "deploy region".
//
// The mapped form renders as the key did, so it is also the form stored
// and shown. ASCII characters are kept as written (after case folding):
// the confusables table's own ASCII pairs, "l" and "1", "o" and "0", "m"
// and "rn", stay different keys, so a Latin key reads back as it was
// typed; characters that imitate "m" map to "m" rather than the table's
// "rn". Characters whose prototype is not ASCII (Cyrillic "и", Greek "φ")
// and the other scripts (Han, Kana, Hangul, Arabic, Hebrew, Indic and the
// rest) are kept as written, so look-alikes inside those scripts (Han "口"
// and Katakana "ロ") stay different keys. Words of Greek, Cyrillic or
// Armenian letters that look Latin become the Latin key (the Cyrillic
// "рор" is the key "pop"), and such a word is stored with the Latin
// letters. That merge is deliberate: a later write to a key that merely
// looks like an existing one follows the rules for that existing key
// (candidate or supersede), it never becomes a second active record.
//
// A visible space still separates: "deploy region" and "deployregion" are
// different keys. Record identity (Scope, kind, key), the model write rule,
// the key owner, the checks of forgotten, rejected and erased keys and the
// exact recall channel all use this form, so every store compares keys
// byte for byte. NormalizeKey(NormalizeKey(k)) == NormalizeKey(k).
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

// SanitizeQuery makes arbitrary query text safe to process: invalid UTF-8
// becomes U+FFFD, NUL and other C0 controls become spaces, and only the last
// maxRunes runes are kept. It never fails, so an oversized or odd query
// degrades instead of failing a turn.
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

// IsCJK reports whether r is a Chinese or Japanese character: Han, Hiragana,
// Katakana, the prolonged sound mark and the ideographic iteration marks.
// PostgreSQL's default parser does not segment these scripts, so memorykit
// splits their runs into character grams itself.
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

// SearchTerms splits query text into full-text terms: lower-cased words (as
// PostgreSQL's simple configuration would produce them) and, for each run of
// Chinese or Japanese characters, its overlapping two-character grams (a run
// of one character yields that character). Only content-bearing terms are
// returned (TermsVersion 2): English function words are left out, and a CJK
// run is first cut at its function words and characters (stopwords.go),
// grams being taken inside each remaining piece. A query with no content
// term at all falls back to every term. Terms are de-duplicated in order of
// first appearance and at most maxTerms are returned.
//
// A record matches a term when the term is one of its IndexTerms, which for
// CJK grams means the gram is a substring of the record's key or content.
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

// IndexTerms returns the sorted, de-duplicated terms a record is matched on:
// the words of its key and content, and for CJK runs every single character
// and every two-character gram, so that any query gram contained in the text
// is found. Both stores index exactly these terms.
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

// ExactKeys returns the canonical keys the exact channel looks up for a
// query: the whole query, and each white-space separated token with
// surrounding punctuation trimmed. At most max keys are returned.
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
