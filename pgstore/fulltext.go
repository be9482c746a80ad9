package pgstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/goagents/memorykit"
)

// maxLexemeBytes bounds a term stored verbatim as a tsvector lexeme.
// PostgreSQL refuses lexemes of 2 kB and more; a longer term is replaced,
// on both the index and the query side, by a fixed-size surrogate, so it
// still matches exactly the same records.
const maxLexemeBytes = 256

// ftsTerm maps a full-text term to the lexeme stored for it. A surrogate
// starts with '~', which no IndexTerms or SearchTerms term contains.
func ftsTerm(t string) string {
	if len(t) <= maxLexemeBytes {
		return t
	}
	sum := sha256.Sum256([]byte(t))
	return "~" + hex.EncodeToString(sum[:])
}

// ftsTerms maps a record's index terms (already distinct and non-empty)
// to the lexemes stored for it: each prefixed with the scope's tag (see
// scopeTag), so one GIN index serves every scope while each posting list
// holds one scope's records.
func ftsTerms(scope memorykit.Scope, terms []string) []string {
	tag := scopeTag(scope)
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = tag + ftsTerm(t)
	}
	return out
}

// queryLexemes maps a query's terms to distinct, non-empty lexemes of
// scope, in order of first appearance.
func queryLexemes(scope memorykit.Scope, terms []string) []string {
	tag := scopeTag(scope)
	seen := make(map[string]bool, len(terms))
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		if t == "" {
			continue
		}
		l := tag + ftsTerm(t)
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// tsqueryLiteral quotes a lexeme as tsquery input, so the cast to
// tsquery yields exactly that lexeme whatever characters it holds.
func tsqueryLiteral(l string) string {
	return "'" + lexemeQuoter.Replace(l) + "'"
}

// lexemeQuoter escapes backslashes and single quotes inside a quoted
// tsquery or tsvector lexeme.
var lexemeQuoter = strings.NewReplacer(`\`, `\\`, "'", "''")
