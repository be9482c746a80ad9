package bench

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/goagents/memorykit/storekit"
	"golang.org/x/text/unicode/norm"
)

// BM25 is a plain Okapi BM25 ranker over a fixed set of documents, the
// baseline recall is measured against. It is a benchmark helper, not a
// recall channel: documents are tokenised into NFKC-lower-cased words and,
// for runs of Chinese or Japanese characters, their overlapping
// two-character grams (single characters for a one-character run), with
// no stopword list and no stemming; a query is tokenised the same way.
type BM25 struct {
	k1, b  float64
	ids    []string
	tf     []map[string]int
	length []int
	avg    float64
	df     map[string]int
}

// NewBM25 indexes docs (parallel to ids) with the usual parameters k1 and b
// (1.2 and 0.75 are the customary choice).
func NewBM25(k1, b float64, ids, docs []string) *BM25 {
	m := &BM25{k1: k1, b: b, ids: ids, df: make(map[string]int)}
	total := 0
	for _, d := range docs {
		toks := BM25Tokens(d)
		tf := make(map[string]int, len(toks))
		for _, t := range toks {
			tf[t]++
		}
		for t := range tf {
			m.df[t]++
		}
		m.tf = append(m.tf, tf)
		m.length = append(m.length, len(toks))
		total += len(toks)
	}
	if len(docs) > 0 {
		m.avg = float64(total) / float64(len(docs))
	}
	return m
}

// Rank returns the ids of the best limit documents for query, best first;
// equal scores go by id. Documents sharing no token are left out.
func (m *BM25) Rank(query string, limit int) []string {
	n := float64(len(m.ids))
	seen := make(map[string]bool)
	var terms []string
	for _, t := range BM25Tokens(query) {
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	type scored struct {
		id string
		s  float64
	}
	var out []scored
	for i, tf := range m.tf {
		s := 0.0
		for _, t := range terms {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			df := float64(m.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * f * (m.k1 + 1) / (f + m.k1*(1-m.b+m.b*float64(m.length[i])/m.avg))
		}
		if s > 0 {
			out = append(out, scored{m.ids[i], s})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].s != out[j].s {
			return out[i].s > out[j].s
		}
		return out[i].id < out[j].id
	})
	if len(out) > limit {
		out = out[:limit]
	}
	ids := make([]string, len(out))
	for i, o := range out {
		ids[i] = o.id
	}
	return ids
}

// BM25Tokens is the BM25 baseline's tokeniser (with repeats).
func BM25Tokens(text string) []string {
	s := strings.ToLower(norm.NFKC.String(strings.ToValidUTF8(text, " ")))
	var out []string
	var word []rune
	var run []rune
	flush := func() {
		if len(word) > 0 {
			out = append(out, string(word))
			word = word[:0]
		}
		if len(run) == 1 {
			out = append(out, string(run))
		}
		for i := 0; i+1 < len(run); i++ {
			out = append(out, string(run[i:i+2]))
		}
		run = run[:0]
	}
	for _, r := range s {
		switch {
		case storekit.IsCJK(r):
			if len(word) > 0 {
				out = append(out, string(word))
				word = word[:0]
			}
			run = append(run, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			if len(run) > 0 {
				flush()
			}
			word = append(word, r)
		default:
			flush()
		}
	}
	flush()
	return out
}
