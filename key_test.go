package memorykit

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// invisibles are characters that render as nothing; NormalizeKey must drop
// every one of them wherever it appears.
var invisibles = []rune{
	0x200B, 0x200C, 0x200D, 0x2060, 0x00AD, 0xFEFF, // zero-width space, ZWNJ, ZWJ, word joiner, soft hyphen, BOM
	0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, // bidi controls
	0xFE00, 0xFE0F, 0xE0100, 0xE01EF, 0x180B, // variation selectors
	0xE0001, 0xE0020, 0xE0041, 0xE007F, // tag characters
	0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x180E, 0x061C, 0x2061, 0x2064, // CGJ, Hangul fillers, MVS, ALM, invisible operators
	0x0080, 0x009F, // C1 controls that are not spaces
}

// spaces are white space that NormalizeKey turns into one ASCII space.
var spaces = []rune{' ', '\t', '\n', '\r', 0x00A0, 0x2002, 0x2003, 0x2009, 0x202F, 0x205F, 0x3000, 0x0085, 0x2028, 0x2029, 0x1680}

// Issue 10, hole 2: a key that renders exactly like another must be that
// key.
func TestInvisibleCharactersDoNotMakeANewKey(t *testing.T) {
	same := map[string][]string{
		"deployregion": {
			"deploy\u200bregion", "deploy\u00adregion", "deploy\u2060region", "deploy\u200dregion",
			"\ufeffdeployregion", "deployregion\u200e", "deploy\u202eregion\u202c", "deploy\ufe0fregion",
			"DEPLOY\U000E0041REGION", "deploy\u3164region", "ｄｅｐｌｏｙｒｅｇｉｏｎ",
		},
		"deploy region": {
			"deploy region\u200b", "\u200bdeploy region", "deploy\u00a0region", "deploy\u3000region",
			"deploy \u200b region", "Deploy\u2003Region", " deploy\t\n region ", "deploy\u200b\u00a0region",
		},
		"strasse":   {"Straße", "STRASSE", "stra\u00dfe", "ſtraße"},
		"café menu": {"cafe\u0301 menu", "CAFÉ MENU", "café\u034f menu"},
		"σοφια":     {"ΣΟΦΙΑ", "Σοφια"},
		"ασ":        {"ας", "ΑΣ"},
	}
	for want, variants := range same {
		if got := NormalizeKey(want); got != want {
			t.Fatalf("NormalizeKey(%+q) = %+q, want it unchanged", want, got)
		}
		for _, v := range variants {
			if got := NormalizeKey(v); got != want {
				t.Errorf("NormalizeKey(%+q) = %+q, want %+q", v, got, want)
			}
		}
	}
	// A visible space still separates two keys.
	if NormalizeKey("deploy region") == NormalizeKey("deployregion") {
		t.Fatal("a visible space must keep two keys apart")
	}
	for _, r := range invisibles {
		if got := NormalizeKey("deploy" + string(r) + "region"); got != "deployregion" {
			t.Errorf("U+%04X inside a key: %+q, want \"deployregion\"", r, got)
		}
	}
	for _, r := range spaces {
		if got := NormalizeKey("deploy" + string(r) + "region"); got != "deploy region" {
			t.Errorf("U+%04X between words: %+q, want \"deploy region\"", r, got)
		}
	}
	// Exact recall keys are in the same canonical form.
	for _, k := range ExactKeys("what is the deploy\u200bregion\u00ad?", 8) {
		if k != NormalizeKey(k) {
			t.Errorf("exact key %+q is not canonical", k)
		}
	}
	if keys := ExactKeys("deploy\u200bregion", 4); len(keys) == 0 || keys[0] != "deployregion" {
		t.Errorf("ExactKeys = %q, want deployregion first", keys)
	}
}

// FuzzNormalizeKey checks NormalizeKey's properties on arbitrary input:
// valid UTF-8 out; idempotent; no invisible, control or non-ASCII space
// runes, no leading, trailing or doubled space; NFKC and case folded; and
// inserting an invisible character, or swapping one space for another,
// anywhere changes nothing.
func FuzzNormalizeKey(f *testing.F) {
	for _, s := range []string{"deploy region", "deploy\u200bregion", "Straße", "ǅ", "İstanbul", "ﬃ", "\u0345\u0301", "a\u0308\u0301"} {
		f.Add(s, uint8(0), uint16(3))
	}
	f.Fuzz(func(t *testing.T, key string, pick uint8, pos uint16) {
		out := NormalizeKey(key)
		if !utf8.ValidString(out) {
			t.Fatalf("NormalizeKey(%+q) = %+q is not valid UTF-8", key, out)
		}
		if again := NormalizeKey(out); again != out {
			t.Fatalf("not idempotent: %+q -> %+q -> %+q", key, out, again)
		}
		if strings.HasPrefix(out, " ") || strings.HasSuffix(out, " ") || strings.Contains(out, "  ") {
			t.Fatalf("NormalizeKey(%+q) = %+q has stray spaces", key, out)
		}
		for _, r := range out {
			if ignorableInKey(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || (unicode.IsSpace(r) && r != ' ') {
				t.Fatalf("NormalizeKey(%+q) = %+q keeps U+%04X", key, out, r)
			}
		}
		if !norm.NFKC.IsNormalString(out) {
			t.Fatalf("NormalizeKey(%+q) = %+q is not NFKC", key, out)
		}
		if folded := norm.NFKC.String(strings.Map(foldCherokee, cases.Fold().String(out))); folded != out {
			t.Fatalf("NormalizeKey(%+q) = %+q is not case folded (%+q)", key, out, folded)
		}
		if !utf8.ValidString(key) {
			return // insertion below works on rune boundaries of valid text
		}
		// Insert an invisible rune at a rune boundary.
		bounds := []int{0}
		for i := range key {
			if i > 0 {
				bounds = append(bounds, i)
			}
		}
		bounds = append(bounds, len(key))
		at := bounds[int(pos)%len(bounds)]
		inv := string(invisibles[int(pick)%len(invisibles)])
		if got := NormalizeKey(key[:at] + inv + key[at:]); got != out {
			t.Fatalf("inserting U+%04X at %d of %+q changed %+q to %+q", []rune(inv)[0], at, key, out, got)
		}
		// Swap every ASCII space for another kind of space.
		sp := string(spaces[int(pick)%len(spaces)])
		if got := NormalizeKey(strings.ReplaceAll(key, " ", sp)); got != out {
			t.Fatalf("spaces as U+%04X in %+q changed %+q to %+q", []rune(sp)[0], key, out, got)
		}
	})
}
