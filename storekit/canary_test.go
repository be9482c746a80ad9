package storekit_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goagents/memorykit/storekit"
)

// canaryEncodings are the ways a store can write s, each of which the
// Canary of s must match: JSON (HTML-safe and not) as a string and inside
// an object as key and value, SQL and COPY quoting, an array literal.
func canaryEncodings(t testing.TB, s string) map[string]string {
	quoted, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"note": s, "list": []string{"x", s}}); err != nil {
		t.Fatal(err)
	}
	obj, err := json.Marshal(map[string]string{s: "value"})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"json":       `{"content":` + string(quoted) + `}`,
		"json plain": plain.String(),
		"json key":   string(obj),
		"sql":        "'" + strings.ReplaceAll("pre "+s+" post", "'", "''") + "'",
		"copy":       strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`).Replace("a\t" + s + "\tb"),
		"copy out":   strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, "\b", `\b`, "\f", `\f`, "\v", `\v`).Replace("a\t" + s + "\tb"),
		"array":      `{"x","` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"}`,
		"upper":      strings.ToUpper(s),
		"as is":      "before " + s + " after",
	}
}

// TestCanaryMatchesEveryEncoding: a canary holding each special character
// class is found in every encoding a store gives it, and a different text
// is not.
func TestCanaryMatchesEveryEncoding(t *testing.T) {
	for _, s := range []string{
		`Tom & Jerry <script>`, `it's`, `say "hi"`, `back\slash`, "tab\there", "line\nbreak",
		"sep\u2028arator", "para\u2029graph", "smile \U0001F600 now", "记忆 数据", "cafe\u0301", `</end>`,
		"\u0345", "ypogegrammeni \u0345 and long \u017f", "Kelvin \u212a",
	} {
		c := storekit.NewCanary(s)
		for name, enc := range canaryEncodings(t, s) {
			if !c.MatchValue(enc) {
				t.Errorf("%q not found in its %s encoding %q", s, name, enc)
			}
		}
		if c.MatchValue(`{"content":"something else entirely"}`) {
			t.Errorf("%q matched an unrelated value", s)
		}
	}
	// Every non-ASCII character as \uXXXX, surrogate pairs included.
	if !storekit.NewCanary("smile \U0001F600 记").Match(`smile \ud83d\ude00 \u8bb0`) {
		t.Error("an ASCII-only JSON encoding was not found")
	}
}

// FuzzCanaryFindsItsEncodings: for any text without NUL, the Canary of the
// text finds it in every encoding canaryEncodings gives.
func FuzzCanaryFindsItsEncodings(f *testing.F) {
	for _, s := range []string{`Tom & Jerry <script>`, "a\tb\n'\"\\", "\u2028\u2029", "\U0001F600记", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.TrimSpace(s) == "" || strings.ContainsRune(s, 0) || len(s) > 200 {
			return
		}
		c := storekit.NewCanary(s)
		for name, enc := range canaryEncodings(t, s) {
			if !c.MatchValue(enc) {
				t.Fatalf("%q not found in its %s encoding %q", s, name, enc)
			}
		}
	})
}
