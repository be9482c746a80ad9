package embedder

import (
	"context"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/unicode/norm"

	"github.com/goagents/memorykit"
)

const (
	// LocalV2Profile is the embedding profile name of [LocalV2].
	LocalV2Profile = "memorykit/hash-v2"
	// LocalV2Dimension is the length of every [LocalV2] vector.
	LocalV2Dimension = 384
)

// hash-v2 feature weights, before sublinear term-frequency scaling.
const (
	v2WeightWord      = 4 // a content word, stemmed
	v2WeightBigram    = 2 // two content words with only function words between
	v2WeightTrigram   = 1 // a character trigram of a content word, unstemmed
	v2WeightCJKChar   = 2 // a Chinese, Japanese or Korean content character
	v2WeightCJKBigram = 4 // two adjacent CJK content characters
)

// v2Stopwords are the English function words hash-v2 leaves out. The list
// is frozen with the profile: changing it changes every vector, which needs
// a new profile name.
var v2Stopwords = wordSet(`
a an the this that these those
i me my mine myself we us our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
what which who whom whose when where why how whatever whenever
am is are was were be been being do does did doing done have has had having
would should could shall might must ought
of in on at by for with about against between into through during before after
above below to from up down out off over under again further
then once here there all any both each few more most other some such
no nor not only own same so than too very just also and but or if because as until while
s t d ll m re ve don didn doesn isn aren wasn weren hasn haven hadn won wouldn shouldn couldn cannot
will can much many get got kind thing things happen happened
ok okay oh yeah yes hey hi remember recall mention mentioned tell told say said says`)

// v2CJKFunction are the Chinese and Japanese characters hash-v2 leaves out
// (frozen with the profile, as v2Stopwords).
var v2CJKFunction = wordSet(`
的 了 是 在 我 你 您 他 她 它 们 吗 呢 吧 啊 呀 哦 嗯 和 与 及 或 也 都 就 还 又 很 这 那 个 么 什 怎 哪 谁 着 过 把 被 给 让 对 从 而 之
の は が を に で と も へ や か ね よ な`)

func wordSet(text string) map[string]struct{} {
	m := make(map[string]struct{})
	for _, w := range strings.Fields(text) {
		m[w] = struct{}{}
	}
	return m
}

// LocalV2 is the second deterministic local embedder, profile
// [LocalV2Profile], [LocalV2Dimension] dimensions. Like [Local] it captures
// lexical overlap, not meaning, but it is built for recall next to a
// full-text channel:
//
//  1. The text is cleaned, NFKC-normalised, lower-cased and split as for
//     [Local].
//  2. Content only: English function words and Chinese/Japanese function
//     characters (lists frozen with the profile) give no feature, and a CJK
//     run is cut at its function characters. A text with no content word
//     or character falls back to using them all, so it is not featureless.
//  3. Features: every content word, stemmed with the Snowball English
//     stemmer when it is plain ASCII letters (4); every pair of content
//     words with only function words between them, stemmed (2); the
//     character trigrams of every content word as written, wrapped in "^"
//     and "$" (1 each); every CJK content character (2) and every pair of
//     adjacent CJK content characters (4).
//  4. Sublinear term frequency: a feature seen tf times weighs
//     weight × (1 + ln tf), so a repeated word does not drown the rest.
//  5. Each feature is hashed with 64-bit FNV-1a over a one-byte namespace
//     (W, B, T, U or C) and its UTF-8 bytes; the hash modulo 384 picks the
//     bucket and its top bit the sign. Weights are summed per bucket in
//     float64 in the order features first appear, then the vector is
//     divided by its norm and rounded to float32.
//
// The same text gives the same bits on every platform that computes
// math.Log and math.Sqrt exactly as Go's portable code does (the golden
// tests pin them). Vectors of hash-v1 and hash-v2 are never compared: the
// profile names differ, so a store holds them apart and the embedding
// worker re-embeds every record for the new profile.
//
// LocalV2 is safe for concurrent use.
type LocalV2 struct{}

var _ memorykit.Embedder = (*LocalV2)(nil)

// NewLocalV2 returns the hash-v2 local embedder.
func NewLocalV2() *LocalV2 { return &LocalV2{} }

// Profile returns [LocalV2Profile].
func (*LocalV2) Profile() string { return LocalV2Profile }

// Dimension returns [LocalV2Dimension].
func (*LocalV2) Dimension() int { return LocalV2Dimension }

// Embed returns one unit vector per text, in order, with the same bounds
// and errors as [Local.Embed].
func (*LocalV2) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	const op = "embedder.local_v2.embed"
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
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, contextError(op, ctx)
		}
		out[i] = embedV2(t)
	}
	return out, nil
}

// v2Feature is one distinct feature and how often it occurred.
type v2Feature struct {
	weight float64
	bucket int
	neg    bool
	tf     int
}

// v2Features counts features in order of first appearance.
type v2Features struct {
	index map[uint64]int
	list  []v2Feature
}

func (f *v2Features) add(weight float64, ns byte, parts ...string) {
	var x uint64 = fnvOffset64
	x ^= uint64(ns)
	x *= fnvPrime64
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			x ^= uint64(p[i])
			x *= fnvPrime64
		}
	}
	// The namespace byte is part of x, so the same bytes under two
	// namespaces are two features; the weight is fixed per namespace.
	if i, ok := f.index[x]; ok {
		f.list[i].tf++
		return
	}
	f.index[x] = len(f.list)
	f.list = append(f.list, v2Feature{weight: weight, bucket: int(x % LocalV2Dimension), neg: x>>63 == 1, tf: 1})
}

// v2Token is a word or a CJK run of the text, in order.
type v2Token struct {
	word string // a word, or "" for a CJK run
	run  []string
}

func embedV2(text string) []float32 {
	s := strings.ToLower(norm.NFKC.String(strings.ToValidUTF8(text, "\uFFFD")))
	var toks []v2Token
	wordStart := -1
	var run []string
	flushWord := func(end int) {
		if wordStart >= 0 {
			toks = append(toks, v2Token{word: s[wordStart:end]})
			wordStart = -1
		}
	}
	flushRun := func() {
		if len(run) > 0 {
			toks = append(toks, v2Token{run: run})
			run = nil
		}
	}
	for i, r := range s {
		switch {
		case isCJKRune(r):
			flushWord(i)
			run = append(run, s[i:i+utf8.RuneLen(r)])
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

	f := v2Features{index: make(map[uint64]int)}
	v2Collect(&f, toks, true)
	if len(f.list) == 0 {
		v2Collect(&f, toks, false)
	}
	out := make([]float32, LocalV2Dimension)
	if len(f.list) == 0 {
		out[0] = 1
		return out
	}
	var acc [LocalV2Dimension]float64
	for _, ft := range f.list {
		w := ft.weight * (1 + math.Log(float64(ft.tf)))
		if ft.neg {
			w = -w
		}
		acc[ft.bucket] += w
	}
	sumsq := 0.0
	for _, v := range acc {
		sumsq += v * v
	}
	if sumsq == 0 {
		out[0] = 1
		return out
	}
	n := math.Sqrt(sumsq)
	for i, v := range acc {
		out[i] = float32(v / n)
	}
	return out
}

// v2Collect adds the features of toks. With contentOnly, function words
// and characters are skipped (they do not break word adjacency; a CJK run
// does).
func v2Collect(f *v2Features, toks []v2Token, contentOnly bool) {
	prev := ""
	for _, t := range toks {
		if t.word == "" {
			prev = ""
			var piece []string
			flush := func() {
				for i, c := range piece {
					f.add(v2WeightCJKChar, 'U', c)
					if i > 0 {
						f.add(v2WeightCJKBigram, 'C', piece[i-1], c)
					}
				}
				piece = piece[:0]
			}
			for _, c := range t.run {
				if _, fn := v2CJKFunction[c]; fn && contentOnly {
					flush()
					continue
				}
				piece = append(piece, c)
			}
			flush()
			continue
		}
		w := t.word
		if _, stop := v2Stopwords[w]; stop && contentOnly {
			continue
		}
		stem := v2Stem(w)
		f.add(v2WeightWord, 'W', stem)
		if prev != "" {
			f.add(v2WeightBigram, 'B', prev, " ", stem)
		}
		prev = stem
		v2Trigrams(f, w)
	}
}

// v2Stem stems plain ASCII words with the Snowball English stemmer and
// leaves every other word as it is.
func v2Stem(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return w
		}
	}
	return english.Stem(w, true)
}

// v2Trigrams adds the character trigrams of w wrapped in "^" and "$".
func v2Trigrams(f *v2Features, w string) {
	pieces := make([]string, 0, len(w)+2)
	pieces = append(pieces, "^")
	for i, r := range w {
		pieces = append(pieces, w[i:i+utf8.RuneLen(r)])
	}
	pieces = append(pieces, "$")
	for p := 0; p+3 <= len(pieces); p++ {
		f.add(v2WeightTrigram, 'T', pieces[p], pieces[p+1], pieces[p+2])
	}
}

// NewLocalProfile returns the local embedder whose profile is given:
// [LocalProfile] (hash-v1) or [LocalV2Profile] (hash-v2). Any other profile
// is ErrInvalidInput.
func NewLocalProfile(profile string) (memorykit.Embedder, error) {
	switch profile {
	case LocalProfile:
		return NewLocal(), nil
	case LocalV2Profile:
		return NewLocalV2(), nil
	}
	return nil, memorykit.FieldError("embedder.new_local_profile", "profile", "not_a_local_profile")
}
