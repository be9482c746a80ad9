package textrule

import "unicode/utf8"

// EstimateTokens implements storekit.EstimateTokens, whose documentation states the rule.
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

// TruncateRunes implements storekit.TruncateRunes, whose documentation states the rule.
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
