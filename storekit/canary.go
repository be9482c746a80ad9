package storekit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"

	unorm "golang.org/x/text/unicode/norm"
)

// Canary matches a text an erasure verifier looks for against what a
// store holds, in every form the text can take there: as written, in its
// NFKC form (full-width letters, say), ignoring case, and in each encoding
// a store or its files can give it. A verifier that compares the stored
// bytes with the text alone misses it wherever storage escaped a
// character: JSON (Go's HTML-safe \u003c, \u0026, \u2028; \" and \\; \t
// and \n or their \u0009 forms; every non-ASCII character as \uXXXX with
// surrogate pairs, as ASCII-only encoders write it; an escaped slash), SQL
// string literals (a doubled quote), COPY text (\\, \t, \n, \r) and array
// or composite literals (\" and \\), and SQL literals of each JSON form.
type Canary struct {
	// forms are the lower-cased encodings of the text, without repeats.
	forms []string
}

// NewCanary builds the matcher of text.
func NewCanary(text string) *Canary {
	set := map[string]bool{}
	base := []string{text, unorm.NFKC.String(text)}
	var forms []string
	for _, b := range base {
		forms = append(forms, b)
		forms = append(forms, jsonForms(b)...)
	}
	for _, f := range append([]string(nil), forms...) {
		forms = append(forms, sqlQuote(f), copyEscape(f), copyEscapeMinimal(f), arrayEscape(f), copyEscape(arrayEscape(f)))
	}
	for _, f := range forms {
		if f = FoldCase(f); f != "" {
			set[f] = true
		}
	}
	c := &Canary{}
	for f := range set {
		c.forms = append(c.forms, f)
	}
	sort.Strings(c.forms)
	return c
}

// Forms returns the case-folded encodings the canary is searched in, for a
// verifier that scans raw bytes (compare them with FoldCaseBytes of the
// bytes).
func (c *Canary) Forms() []string { return append([]string(nil), c.forms...) }

// Match reports whether s holds the canary in any of its forms, ignoring
// case, also after s is brought to NFKC form.
func (c *Canary) Match(s string) bool {
	if s == "" {
		return false
	}
	low := FoldCase(s)
	for _, f := range c.forms {
		if strings.Contains(low, f) {
			return true
		}
	}
	if unorm.NFKC.IsNormalString(s) {
		return false
	}
	folded := FoldCase(unorm.NFKC.String(s))
	for _, f := range c.forms {
		if strings.Contains(folded, f) {
			return true
		}
	}
	return false
}

// MatchValue reports whether a stored value holds the canary: the value
// as stored (Match), and, when it is JSON, every string and object key
// inside it once decoded, at any depth.
func (c *Canary) MatchValue(s string) bool {
	if c.Match(s) {
		return true
	}
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[' && t[0] != '"') {
		return false
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return false
	}
	return c.matchDecoded(v)
}

func (c *Canary) matchDecoded(v any) bool {
	switch x := v.(type) {
	case string:
		// A string may itself hold JSON (a job body inside a column).
		return c.MatchValue(x)
	case []any:
		for _, e := range x {
			if c.matchDecoded(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if c.MatchValue(k) || c.matchDecoded(e) {
				return true
			}
		}
	}
	return false
}

// FoldCase maps every character of s to one representative of its case:
// the lower case of its upper case. Lower-casing alone is not enough: a
// character whose upper case lower-cases to another character (the Greek
// ypogegrammeni U+0345 upper-cases to U+0399, which lower-cases to U+03B9;
// the long s U+017F to S, then s) would not match the text upper-cased by
// a store. The map is rune by rune, so a substring stays a substring.
func FoldCase(s string) string { return strings.ToLower(strings.ToUpper(s)) }

// FoldCaseBytes is FoldCase of raw bytes (invalid UTF-8 becomes U+FFFD).
func FoldCaseBytes(b []byte) []byte { return bytes.ToLower(bytes.ToUpper(b)) }

// jsonForms are the ways a JSON encoder can write s inside a string
// literal (without the quotes).
func jsonForms(s string) []string {
	var out []string
	marshal := func(html bool) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		q := strings.TrimSuffix(b.String(), "\n")
		return q[1 : len(q)-1]
	}
	out = append(out, marshal(true), marshal(false))
	// Hand-rolled encoders: short escapes or \u00XX for control
	// characters, non-ASCII raw or as \uXXXX, the slash escaped or not.
	for _, ascii := range []bool{false, true} {
		for _, short := range []bool{false, true} {
			e := jsonEscape(s, ascii, short)
			out = append(out, e, strings.ReplaceAll(e, "/", `\/`))
		}
	}
	return out
}

// jsonEscape writes s as the inside of a JSON string: quote and backslash
// escaped; control characters as \b \f \n \r \t (short) or \u00XX; with
// ascii, every other non-ASCII character as \uXXXX (surrogate pairs
// beyond the Basic Multilingual Plane).
func jsonEscape(s string, ascii, short bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 && short && strings.ContainsRune("\b\f\n\r\t", r):
			b.WriteString(map[rune]string{'\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}[r])
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case ascii && r > 0x7e:
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sqlQuote doubles single quotes, as inside a SQL string literal.
func sqlQuote(s string) string { return strings.ReplaceAll(s, "'", "''") }

// copyEscape escapes s as COPY's text format does.
func copyEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, "\b", `\b`, "\f", `\f`, "\v", `\v`).Replace(s)
}

// copyEscapeMinimal escapes only what COPY's text format requires
// (backslash, tab, newline, carriage return): the form COPY FROM accepts
// from a writer that leaves \b, \f and \v raw.
func copyEscapeMinimal(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// arrayEscape escapes s as an element of an array or composite literal.
func arrayEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
