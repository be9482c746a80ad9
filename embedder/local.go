package embedder

import (
	"context"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

const (
	// LocalProfile is the embedding profile name of [Local].
	LocalProfile = "memorykit/hash-v1"
	// LocalDimension is the length of every [Local] vector.
	LocalDimension = 384

	// MaxLocalTexts bounds how many texts one [Local.Embed] call accepts.
	MaxLocalTexts = 1024
	// MaxLocalTextBytes bounds the size of one text given to [Local.Embed].
	MaxLocalTextBytes = 1 << 20
	// MaxLocalBatchBytes bounds the summed size of the texts of one
	// [Local.Embed] call.
	MaxLocalBatchBytes = 16 << 20
)

// Feature weights. They are integers so that a vector is accumulated
// exactly: the result does not depend on the order features are added in,
// and no floating-point rounding happens before the final normalisation.
const (
	weightWord       = 4 // a word that is not a stopword
	weightStopWord   = 1 // a stopword
	weightBigram     = 2 // two adjacent words, neither a stopword
	weightStopBigram = 1 // two adjacent words, at least one a stopword
	weightTrigram    = 1 // a character trigram of a non-stopword word
	weightCJKChar    = 2 // one Chinese, Japanese or Korean character
	weightCJKBigram  = 4 // two adjacent Chinese, Japanese or Korean characters
)

// Feature namespaces: the first byte hashed for each kind of feature, so a
// word and a trigram with the same letters land in unrelated buckets.
const (
	nsWord      = 'w'
	nsBigram    = 'b'
	nsTrigram   = 't'
	nsCJKChar   = 'u'
	nsCJKBigram = 'c'
)

// FNV-1a 64-bit parameters.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// stopwords are common English function words. They still count, with a low
// weight, so a text made only of them is not featureless. Only membership
// is ever tested; the map is never iterated.
var stopwords = func() map[string]struct{} {
	words := strings.Fields(`
		a about after all also am an and any are as at be been before but by
		can could did do does doing for from had has have having he her here
		hers him his how i if in into is it its just me more most my no nor
		not now of off on once only or other our ours out over own same she
		should so some such than that the their theirs them then there these
		they this those through to too under until up very was we were what
		when where which while who whom why will with would you your yours`)
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}()

// Local is memorykit's embedded default [memorykit.Embedder]: a
// deterministic, dependency-free bag-of-features embedder with profile
// [LocalProfile] and [LocalDimension] dimensions. It captures lexical
// overlap (shared words, word pairs, word pieces and CJK characters), not
// meaning; texts that share vocabulary score a higher cosine similarity.
//
// A text is embedded like this:
//
//  1. Invalid UTF-8 becomes U+FFFD, then the text is NFKC-normalised and
//     lower-cased.
//  2. It is split into words (runs of letters, digits and combining marks)
//     and runs of Chinese, Japanese or Korean characters
//     ([storekit.IsCJK] plus the Hangul script). Everything else separates.
//  3. Features, each with an integer weight: every word (4, or 1 for an
//     English stopword); every pair of adjacent words, where a CJK run breaks
//     adjacency (2, or 1 when either word is a stopword); the character
//     trigrams of every non-stopword word wrapped in "^" and "$" markers, so
//     "cat" gives "^ca", "cat" and "at$" (1 each); every CJK character (2);
//     every pair of adjacent CJK characters (4).
//  4. Each feature is hashed with 64-bit FNV-1a over a one-byte namespace
//     (w, b, t, u or c for the five kinds above) followed by its UTF-8 bytes
//     (a word pair is "first second" with one space). The hash modulo 384
//     picks the bucket; its top bit picks the sign (set means negative).
//  5. The signed weights are summed per bucket in 64-bit integers, and the
//     vector is divided by its Euclidean norm and rounded to float32.
//
// A text with no features (empty, or only punctuation and spaces) embeds as
// the unit vector whose first component is 1 and all others 0, so Embed never
// returns a zero vector or NaN.
//
// Because the sums are exact integers and the only floating-point steps are
// one square root and one division per component, the same text gives the
// same bits on every platform. The result depends only on the Unicode tables
// of golang.org/x/text (NFKC) and Go's unicode package, which do not change
// for characters that are already assigned.
//
// Local is safe for concurrent use.
type Local struct{}

var _ memorykit.Embedder = (*Local)(nil)

// NewLocal returns the deterministic local embedder.
func NewLocal() *Local { return &Local{} }

// Profile returns [LocalProfile].
func (*Local) Profile() string { return LocalProfile }

// Dimension returns [LocalDimension].
func (*Local) Dimension() int { return LocalDimension }

// Embed returns one unit vector per text, in order. More than
// [MaxLocalTexts] texts, a text over [MaxLocalTextBytes] or a batch over
// [MaxLocalBatchBytes] is ErrInvalidInput and nothing is embedded. A done
// ctx, checked before each text, is ErrUnavailable and recoverable. An empty
// texts slice gives an empty result.
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	const op = "embedder.local.embed"
	if len(texts) > MaxLocalTexts {
		return nil, memorykit.FieldError(op, "texts", "too_many")
	}
	total := 0
	for _, t := range texts {
		if len(t) > MaxLocalTextBytes {
			return nil, memorykit.FieldError(op, "texts", "text_too_long")
		}
		total += len(t)
	}
	if total > MaxLocalBatchBytes {
		return nil, memorykit.FieldError(op, "texts", "batch_too_large")
	}
	out := make([][]float32, len(texts))
	var h hasher
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, contextError(op, ctx)
		}
		out[i] = h.embed(t)
	}
	return out, nil
}

// hasher embeds one text at a time, reusing its buffers.
type hasher struct {
	acc  [LocalDimension]int64
	offs []int // rune start offsets of the current word, plus its end
}

// add hashes one feature (namespace byte then the given parts, back to back)
// and adds its signed weight to the chosen bucket.
func (h *hasher) add(weight int64, ns byte, parts ...string) {
	var x uint64 = fnvOffset64
	x ^= uint64(ns)
	x *= fnvPrime64
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			x ^= uint64(p[i])
			x *= fnvPrime64
		}
	}
	b := x % LocalDimension
	if x>>63 == 1 {
		h.acc[b] -= weight
	} else {
		h.acc[b] += weight
	}
}

// isCJKRune reports whether r is embedded as a single character: Chinese,
// Japanese or Korean.
func isCJKRune(r rune) bool { return storekit.IsCJK(r) || unicode.Is(unicode.Hangul, r) }

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func isStopword(w string) bool {
	_, ok := stopwords[w]
	return ok
}

func (h *hasher) embed(text string) []float32 {
	h.acc = [LocalDimension]int64{}
	s := strings.ToLower(norm.NFKC.String(strings.ToValidUTF8(text, "\uFFFD")))

	features := 0
	prevWord := "" // the previous word, if adjacency has not been broken
	wordStart := -1
	cjkPrev := -1 // byte offset of the previous CJK rune in the current run

	endWord := func(end int) {
		if wordStart < 0 {
			return
		}
		w := s[wordStart:end]
		wordStart = -1
		h.word(w, prevWord)
		prevWord = w
		features++
	}
	for i, r := range s {
		switch {
		case isCJKRune(r):
			endWord(i)
			prevWord = ""
			end := i + utf8.RuneLen(r)
			h.add(weightCJKChar, nsCJKChar, s[i:end])
			if cjkPrev >= 0 {
				h.add(weightCJKBigram, nsCJKBigram, s[cjkPrev:end])
			}
			cjkPrev = i
			features++
		case isWordRune(r):
			cjkPrev = -1
			if wordStart < 0 {
				wordStart = i
			}
		default:
			cjkPrev = -1
			endWord(i)
		}
	}
	endWord(len(s))

	out := make([]float32, LocalDimension)
	if features == 0 {
		out[0] = 1
		return out
	}
	var sumsq int64
	for _, v := range h.acc {
		sumsq += v * v
	}
	if sumsq == 0 {
		// Every bucket cancelled out. Vanishingly unlikely, but a zero
		// vector has no direction, so fall back to the documented one.
		out[0] = 1
		return out
	}
	n := math.Sqrt(float64(sumsq))
	for i, v := range h.acc {
		out[i] = float32(float64(v) / n)
	}
	return out
}

// word adds the features of word w; prev is the word before it, or "".
func (h *hasher) word(w, prev string) {
	stop := isStopword(w)
	if stop {
		h.add(weightStopWord, nsWord, w)
	} else {
		h.add(weightWord, nsWord, w)
	}
	if prev != "" {
		if stop || isStopword(prev) {
			h.add(weightStopBigram, nsBigram, prev, " ", w)
		} else {
			h.add(weightBigram, nsBigram, prev, " ", w)
		}
	}
	if stop {
		return
	}
	// Character trigrams over "^" + w + "$". offs holds the start of each
	// rune of w and, last, len(w); position 0 is "^" and position n+1 "$".
	h.offs = h.offs[:0]
	for i := range w {
		h.offs = append(h.offs, i)
	}
	n := len(h.offs)
	h.offs = append(h.offs, len(w))
	piece := func(p int) string {
		switch p {
		case 0:
			return "^"
		case n + 1:
			return "$"
		}
		return w[h.offs[p-1]:h.offs[p]]
	}
	for p := 0; p+2 <= n+1; p++ {
		h.add(weightTrigram, nsTrigram, piece(p), piece(p+1), piece(p+2))
	}
}
