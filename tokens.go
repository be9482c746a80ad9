package memorykit

import "unicode/utf8"

// EstimateTokens is a conservative, tokenizer-free estimate of how many model
// tokens s costs: one per CJK character, and for everything else one per
// started group of three bytes. Real tokenizers usually need fewer, so a
// budget enforced with this estimate holds.
func EstimateTokens(s string) int {
	cjk, other := 0, 0
	for _, r := range s {
		if IsCJK(r) {
			cjk++
		} else {
			other += utf8.RuneLen(r)
		}
	}
	return cjk + (other+2)/3
}

// TruncateRunes cuts s to at most n runes and reports whether it cut.
func TruncateRunes(s string, n int) (string, bool) {
	if n <= 0 {
		return "", s != ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i, c := 0, 0
	for i < len(s) && c < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		c++
	}
	return s[:i], true
}
