package storekit_test

import (
	"testing"

	"github.com/goagents/memorykit/storekit"
)

// TestIsBlank pins the one blank-content rule every write path applies:
// text made only of white space, characters that render as nothing and
// blank-looking symbols is blank; one visible character is not.
func TestIsBlank(t *testing.T) {
	t.Parallel()
	blank := []string{
		"", " ", "\t\r\n", "\u200b\u200b", "\u200c\u200d\u2060\ufeff\u00ad",
		"\u2800", "\u3164", "\u115f\u1160\uffa0", "\u3000\u00a0\u2003",
		"\ufe0f\u034f", "\u202e\u2066",
	}
	for _, s := range blank {
		if !storekit.IsBlank(s) {
			t.Errorf("IsBlank(%+q) = false, want true", s)
		}
	}
	shown := []string{"a", "\u200ba", "中", "0", ".", "\u2800x", " \u3164 - ", "🙂", "\u0301"}
	for _, s := range shown {
		if storekit.IsBlank(s) {
			t.Errorf("IsBlank(%+q) = true, want false", s)
		}
	}
}
