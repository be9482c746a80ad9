package textrule

import (
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIDBytes bounds every identifier (tenant, subject, record, actor, job,
// worker) and run reference, in bytes.
const MaxIDBytes = 128

// MaxReasonBytes is the largest audit reason any Limits may allow.
const MaxReasonBytes = 1024

// IDProblem returns "" when id is 1..MaxIDBytes bytes of ASCII letters,
// digits and ". _ - : @", else the reason code: "empty", "too_long" or
// "bad_character".
func IDProblem(id string) string {
	if id == "" {
		return "empty"
	}
	if len(id) > MaxIDBytes {
		return "too_long"
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-', c == ':', c == '@':
		default:
			return "bad_character"
		}
	}
	return ""
}

// ProfileProblem returns "" when profile is 1..MaxIDBytes bytes of ASCII
// letters, digits and ". _ - : / @", else "bad_length" or "bad_character".
func ProfileProblem(profile string) string {
	if profile == "" || len(profile) > MaxIDBytes {
		return "bad_length"
	}
	for i := 0; i < len(profile); i++ {
		c := profile[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-', c == ':', c == '/', c == '@':
		default:
			return "bad_character"
		}
	}
	return ""
}

// RunRefProblem returns "" when ref is 1..MaxIDBytes bytes of ASCII
// letters, digits and ". _ - : @ /", else "empty", "too_long" or
// "bad_character".
func RunRefProblem(ref string) string {
	if ref == "" {
		return "empty"
	}
	if len(ref) > MaxIDBytes {
		return "too_long"
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-', c == ':', c == '@', c == '/':
		default:
			return "bad_character"
		}
	}
	return ""
}

// ReasonCodeProblem returns "" when code is 1..64 bytes of [a-z0-9_],
// else "bad_length" or "bad_character".
func ReasonCodeProblem(code string) string {
	if code == "" || len(code) > 64 {
		return "bad_length"
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "bad_character"
		}
	}
	return ""
}

// ReasonProblem returns "" when reason is a storable audit reason of at
// most MaxReasonBytes bytes, else "too_long" or TextProblem's code.
func ReasonProblem(reason string) string {
	if len(reason) > MaxReasonBytes {
		return "too_long"
	}
	return TextProblem(reason, true)
}

// TextProblem returns a reason code when s is not storable text: invalid
// UTF-8, a NUL byte (PostgreSQL text cannot hold it) or another C0 control
// character. multiline allows tab, newline and carriage return.
func TextProblem(s string, multiline bool) string {
	if !utf8.ValidString(s) {
		return "invalid_utf8"
	}
	for _, r := range s {
		switch {
		case r == 0:
			return "nul_byte"
		case r == '\t' || r == '\n' || r == '\r':
			if !multiline && r != '\t' {
				return "control_character"
			}
		case r < 0x20 || r == 0x7f:
			return "control_character"
		}
	}
	return ""
}

// IsBlank reports whether text shows nothing: it is empty once white
// space, the characters that render as nothing (format characters such as
// the zero-width space and joiners, the other default-ignorable code points
// such as the Hangul fillers, variation selectors and control characters)
// and the blank-looking symbols U+2800 (braille pattern blank) and U+3164
// (Hangul filler) are set aside.
func IsBlank(s string) bool {
	for _, r := range s {
		if !blankRune(r) {
			return false
		}
	}
	return true
}

// blankRune reports a rune IsBlank sets aside.
func blankRune(r rune) bool {
	switch r {
	case 0x2800, 0x3164, 0x115F, 0x1160, 0xFFA0:
		return true
	}
	return unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Cf, unicode.Cc,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// KeyDigestPrefix starts every keyed digest of a key (a tombstone).
const KeyDigestPrefix = "hmac-sha256:"

// IsKeyDigest reports whether s is KeyDigestPrefix followed by 64 hex
// digits.
func IsKeyDigest(s string) bool {
	if !strings.HasPrefix(s, KeyDigestPrefix) || len(s) != len(KeyDigestPrefix)+64 {
		return false
	}
	_, err := hex.DecodeString(s[len(KeyDigestPrefix):])
	return err == nil
}

// EmbeddingText joins a canonical key and content into the embedded text.
func EmbeddingText(key, content string) string {
	return key + "\n" + content
}
