package pgstore

import (
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestTermsValueIsFTSTerms: the lexemes a batch sends are exactly
// ftsTerms' (the tagged terms the recall statements query, surrogates for
// long terms included), in order, whichever Scope came before.
func TestTermsValueIsFTSTerms(t *testing.T) {
	a, err := memorykit.ProjectScope("tenant-a", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	b, err := memorykit.ProjectScope("tenant-b", "beta")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", maxLexemeBytes+1)
	cases := []struct {
		scope memorykit.Scope
		terms []string
	}{
		{a, storekit.IndexTerms("deploy region", "The deploy region is eu-west; 部署区域")},
		{a, []string{"one", long, "two"}},
		{b, []string{"one", long, "two"}},
		{a, nil},
		{b, []string{"é"}},
	}
	var tags scopeTags
	for i, c := range cases {
		got := termsValue(tags.of(c.scope), c.terms)
		want := ftsTerms(c.scope, c.terms)
		if !got.Valid || len(got.Lexemes) != len(want) {
			t.Fatalf("case %d: %d lexemes (valid %v), want %d", i, len(got.Lexemes), got.Valid, len(want))
		}
		for k, l := range got.Lexemes {
			if l.Word != want[k] || len(l.Positions) != 0 {
				t.Fatalf("case %d lexeme %d: %q %v, want %q", i, k, l.Word, l.Positions, want[k])
			}
		}
	}
}
