package textrule

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
	0x034F, 0x180E, 0x061C, 0x2061, 0x2064, // CGJ, MVS, ALM, invisible operators
	0x0080, 0x009F, // C1 controls that are not spaces
}

// spaces are white space that NormalizeKey turns into one ASCII space.
// The blank-looking braille blank and Hangul fillers count as spaces.
var spaces = []rune{' ', '\t', '\n', '\r', 0x00A0, 0x2002, 0x2003, 0x2009, 0x202F, 0x205F, 0x3000, 0x0085, 0x2028, 0x2029, 0x1680,
	0x2800, 0x115F, 0x1160, 0x3164, 0xFFA0}

// Issue 10, hole 2: a key that renders exactly like another must be that
// key.
func TestInvisibleCharactersDoNotMakeANewKey(t *testing.T) {
	same := map[string][]string{
		"deployregion": {
			"deploy\u200bregion", "deploy\u00adregion", "deploy\u2060region", "deploy\u200dregion",
			"\ufeffdeployregion", "deployregion\u200e", "deploy\u202eregion\u202c", "deploy\ufe0fregion",
			"DEPLOY\U000E0041REGION", "ｄｅｐｌｏｙｒｅｇｉｏｎ",
		},
		"deploy region": {
			"deploy region\u200b", "\u200bdeploy region", "deploy\u00a0region", "deploy\u3000region",
			"deploy \u200b region", "Deploy\u2003Region", " deploy\t\n region ", "deploy\u200b\u00a0region",
			"deploy\u3164region", "\u2800deploy region\uffa0",
		},
		"strasse":   {"Straße", "STRASSE", "stra\u00dfe", "ſtraße"},
		"café menu": {"cafe\u0301 menu", "CAFÉ MENU", "café\u034f menu"},
		// Greek letters that imitate Latin ones take the Latin form (σ
		// and ς look like o; φ imitates no ASCII letter and stays), so
		// the cases still meet.
		"ooφia": {"σοφια", "ΣΟΦΙΑ", "Σοφια"},
		"ao":    {"ας", "ΑΣ", "ασ"},
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
// anywhere changes nothing; and swapping letters for characters that
// imitate them gives the same key.
func FuzzNormalizeKey(f *testing.F) {
	for _, s := range []string{"deploy region", "deploy\u200bregion", "Straße", "ǅ", "İstanbul", "ﬃ", "\u0345\u0301", "a\u0308\u0301"} {
		f.Add(s, uint8(0), uint16(3))
	}
	for _, s := range lookAlikes {
		f.Add(s, uint8(1), uint16(2))
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
		// Swap the letters of the canonical key for look-alikes: the same
		// skeleton must be the same key.
		n := 0
		alike := strings.Map(func(r rune) rune {
			if c := confusableOf[r]; len(c) > 0 {
				n++
				if (n+int(pick))%2 == 0 {
					return c[(n+int(pos))%len(c)]
				}
			}
			return r
		}, out)
		if got := NormalizeKey(alike); got != out {
			t.Fatalf("look-alike %+q of %+q is %+q, want %+q", alike, key, got, out)
		}
	})
}

// lookAlikes are keys an attacker wrote to sit beside "deploy region":
// each renders like it, and each must be that key.
var lookAlikes = []string{
	"d\u0435ploy region",                // Cyrillic е
	"depl\u03bfy region",                // Greek ο
	"deploy reg\u0131on",                // dotless ı
	"deploy regi\u0307on",               // i and a combining dot above
	"deploy\u2800region",                // braille blank
	"d\u0435pl\u043ey r\u0435gi\u043en", // Cyrillic е and о throughout
	"\u0501eploy region",                // Cyrillic komi de
	"deploy\u3164region",                // Hangul filler
	"\u2800deploy region\uffa0",
	"DEPLOY REG\u0130ON", // capital I with a dot above
	"deploy regi\u0307\u0307on",
}

func TestLookAlikeKeysAreOneKey(t *testing.T) {
	const want = "deploy region"
	if got := NormalizeKey(want); got != want {
		t.Fatalf("NormalizeKey(%q) = %+q, want it unchanged", want, got)
	}
	for _, k := range lookAlikes {
		if got := NormalizeKey(k); got != want {
			t.Errorf("NormalizeKey(%+q) = %+q, want %q", k, got, want)
		}
	}
	// ASCII is kept as written: the ASCII pairs of the confusables table
	// stay apart, so a Latin key reads back as typed.
	for _, pair := range [][2]string{{"v1", "vl"}, {"region 0", "region o"}, {"team", "tearn"}} {
		if NormalizeKey(pair[0]) == NormalizeKey(pair[1]) {
			t.Errorf("%q and %q became one key", pair[0], pair[1])
		}
		if got := NormalizeKey(pair[0]); got != pair[0] {
			t.Errorf("NormalizeKey(%q) = %+q, want it unchanged", pair[0], got)
		}
	}
	// What imitates "m" becomes "m", not the table's "rn".
	if got := NormalizeKey("tea\u217f"); got != "team" {
		t.Errorf("small roman numeral one thousand: %+q, want \"team\"", got)
	}
	// The merge is conservative: a Cyrillic word that is written with
	// letters looking Latin is the Latin-looking key.
	if a, b := NormalizeKey("\u0440\u043e\u0440"), NormalizeKey("pop"); a != b {
		t.Errorf("Cyrillic pop = %+q, Latin pop = %+q; want one key", a, b)
	}
	// Scripts that share no glyphs with Latin, and letters whose
	// prototype is not ASCII, are kept as written.
	for _, k := range []string{"プロジェクト設定", "カメラ", "一般设置", "〇号", "배포 지역", "مرحبا", "שלום", "नमस्ते", "\u0438\u0439", "\u03c6"} {
		if got := NormalizeKey(k); got != k {
			t.Errorf("NormalizeKey(%+q) = %+q, want it unchanged", k, got)
		}
	}
	// Exact recall finds the look-alike under the one key.
	if keys := ExactKeys("d\u0435ploy\u2800region", 4); len(keys) == 0 || keys[0] != want {
		t.Errorf("ExactKeys = %q, want %q first", keys, want)
	}
}

// confusableOf maps ASCII letters to a character that imitates them.
var confusableOf = map[rune][]rune{
	'a': {0x0430, 0x0251}, 'c': {0x0441}, 'e': {0x0435, 0x04BD}, 'i': {0x0131, 0x0456},
	'j': {0x0458}, 'o': {0x043E, 0x03BF, 0x0585}, 'p': {0x0440, 0x03C1}, 's': {0x0455},
	'x': {0x0445}, 'y': {0x0443}, 'h': {0x04BB}, 'm': {0x217F},
}

// BenchmarkNormalizeKey measures NormalizeKey on an ASCII key, a key with
// one look-alike, and a long mixed key.
func BenchmarkNormalizeKey(b *testing.B) {
	for _, c := range []struct{ name, key string }{
		{"ascii", "Deploy Region"},
		{"lookalike", "d\u0435ploy\u2800region"},
		{"mixed", "Straße café deploy region 日本語 キー σοφια \u200b İstanbul"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				NormalizeKey(c.key)
			}
		})
	}
}

// TestASCIIPrototypeTableMatchesTheRule: the cache answers exactly what
// the rule computes, asked twice (filled, then from the cache), for every
// rune of the first two planes.
func TestASCIIPrototypeTableMatchesTheRule(t *testing.T) {
	n := 0
	for pass := 0; pass < 2; pass++ {
		n = 0
		for r := rune(0); r <= 0x1FFFF; r++ {
			want, wantOK := prototypeOf(r)
			got, ok := asciiPrototype(r)
			if got != want || ok != wantOK {
				t.Fatalf("pass %d, U+%04X: cache %q %v, rule %q %v", pass, r, got, ok, want, wantOK)
			}
			if ok {
				n++
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d runes imitate ASCII; the table is not loaded", n)
	}
	t.Logf("%d runes imitate ASCII", n)
}
