package storekit

import (
	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/textrule"
)

// MaxIDBytes bounds tenant, subject, actor, worker and record identifiers.
const MaxIDBytes = textrule.MaxIDBytes

// MaxReasonBytes is the ceiling on Limits.MaxReasonBytes: no Limits may
// allow a free-text audit reason longer than this, whatever the Host sets.
const MaxReasonBytes = textrule.MaxReasonBytes

// TombstoneKeyPrefix starts every keyed key digest (see
// memorykit.TombstoneKeyer).
const TombstoneKeyPrefix = textrule.KeyDigestPrefix

// ValidateID checks an identifier: 1..MaxIDBytes bytes of ASCII letters,
// digits and ". _ - : @". The error names the field.
func ValidateID(op, field, id string) error {
	if r := textrule.IDProblem(id); r != "" {
		return memorykit.FieldError(op, field, r)
	}
	return nil
}

// ValidateProfile checks an embedding profile name: 1..128 bytes of ASCII
// letters, digits and ". _ - : / @".
func ValidateProfile(op, profile string) error {
	if r := textrule.ProfileProblem(profile); r != "" {
		return memorykit.FieldError(op, "profile", r)
	}
	return nil
}

// CheckReason validates an audit reason: optional, clean text of at most
// the package constant MaxReasonBytes. WriteGuard.CheckReason also applies
// Limits.MaxReasonBytes; stores call that one.
func CheckReason(op, reason string) error {
	if r := textrule.ReasonProblem(reason); r != "" {
		return memorykit.FieldError(op, "reason", r)
	}
	return nil
}

// CheckReasonCode validates a machine reason code: 1..64 bytes of [a-z0-9_].
// Codes are the only free-form strings allowed in events and tombstones.
func CheckReasonCode(op, code string) error {
	if r := textrule.ReasonCodeProblem(code); r != "" {
		return memorykit.FieldError(op, "reason_code", r)
	}
	return nil
}

// IsBlank reports whether text shows nothing: it is empty once white
// space, the characters that render as nothing (format characters such as
// the zero-width space and joiners, the other default-ignorable code points
// such as the Hangul fillers, variation selectors and control characters)
// and the blank-looking symbols U+2800 (braille pattern blank) and U+3164
// (Hangul filler) are set aside. Every write path refuses such content with
// reason "blank", through WriteGuard.CheckContent.
func IsBlank(s string) bool {
	return textrule.IsBlank(s)
}

// IsKeyDigest reports whether s has the shape of a
// memorykit.TombstoneKeyer digest: TombstoneKeyPrefix followed by 64 hex
// digits.
func IsKeyDigest(s string) bool {
	return textrule.IsKeyDigest(s)
}

// EmbeddingText joins a canonical key and content into the embedded text
// (what memorykit.Record.EmbeddingText returns).
func EmbeddingText(key, content string) string {
	return textrule.EmbeddingText(key, content)
}

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
	return textrule.NormalizeKey(key)
}

// SanitizeQuery makes arbitrary query text safe to process: invalid UTF-8
// becomes U+FFFD, NUL and other C0 controls become spaces, and only the last
// maxRunes runes are kept. It never fails, so an oversized or odd query
// degrades instead of failing a turn.
func SanitizeQuery(q string, maxRunes int) string {
	return textrule.SanitizeQuery(q, maxRunes)
}

// IsCJK reports whether r is a Chinese or Japanese character: Han, Hiragana,
// Katakana, the prolonged sound mark and the ideographic iteration marks.
// PostgreSQL's default parser does not segment these scripts, so memorykit
// splits their runs into character grams itself.
func IsCJK(r rune) bool {
	return textrule.IsCJK(r)
}

// SearchTerms splits query text into full-text terms: lower-cased words (as
// PostgreSQL's simple configuration would produce them) and, for each run of
// Chinese or Japanese characters, its overlapping two-character grams (a run
// of one character yields that character). Only content-bearing terms are
// returned (TermsVersion 2): English function words are left out, and a CJK
// run is first cut at its function words and characters (the lists are in
// internal/plumbing/textrule/stopwords.go), grams being taken inside each
// remaining piece. A query with no content
// term at all falls back to every term. Terms are de-duplicated in order of
// first appearance and at most maxTerms are returned.
//
// A record matches a term when the term is one of its IndexTerms, which for
// CJK grams means the gram is a substring of the record's key or content.
func SearchTerms(query string, maxTerms int) []string {
	return textrule.SearchTerms(query, maxTerms)
}

// IndexTerms returns the sorted, de-duplicated terms a record is matched on:
// the words of its key and content, and for CJK runs every single character
// and every two-character gram, so that any query gram contained in the text
// is found. Both stores index exactly these terms.
func IndexTerms(key, content string) []string {
	return textrule.IndexTerms(key, content)
}

// ExactKeys returns the canonical keys the exact channel looks up for a
// query: the whole query, and each white-space separated token with
// surrounding punctuation trimmed. At most max keys are returned.
func ExactKeys(query string, max int) []string {
	return textrule.ExactKeys(query, max)
}

// EstimateTokens is a conservative, tokenizer-free estimate of how many model
// tokens s costs: one per CJK character, and for everything else one per
// started group of three bytes. Real tokenizers usually need fewer, so a
// budget enforced with this estimate holds.
func EstimateTokens(s string) int {
	return textrule.EstimateTokens(s)
}

// TruncateRunes cuts s to at most n runes and reports whether it cut.
func TruncateRunes(s string, n int) (string, bool) {
	return textrule.TruncateRunes(s, n)
}

// TermsVersion versions the rule that turns query text into full-text terms
// (SearchTerms). It is part of the recall contract: the same query and
// records give the same full-text ranking under the same TermsVersion, and
// any change to the word lists below bumps it. recall.Trace records it.
//
//   - 1: every word and every CJK two-character gram was a term.
//   - 2: only content-bearing terms count (function words of English,
//     Chinese and Japanese are left out, lists below); a query with no
//     content term falls back to every term, as in version 1.
const TermsVersion = textrule.TermsVersion
