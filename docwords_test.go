package memorykit_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// historyWords match text that tells the story of how the code was made
// (work rounds, working sessions, issue numbers) instead of what is true
// now. "session" alone stays allowed: runtime.Session and PostgreSQL
// sessions are part of the API.
var historyWords = regexp.MustCompile(`(?i)\bissues? #?[0-9]+|(?:^|[\s(])#[0-9]+\b|\bround [0-9]+\b|\b(?:this|previous|last|earlier|later|next) (?:round|session)\b|\bcoordinator\b|\bhelper session\b`)

// historyHits returns each line of text that historyWords match, as
// "line: match".
func historyHits(text string) []string {
	var out []string
	for i, l := range strings.Split(text, "\n") {
		// Unicode Technical Standards are numbered too: UTS #39.
		if m := historyWords.FindString(strings.ReplaceAll(l, "UTS #", "UTS ")); m != "" {
			out = append(out, strings.TrimSpace(m)+" (line "+strconv.Itoa(i+1)+")")
		}
	}
	return out
}

// TestDocsSayWhatIsTrueNow: the README, the docs, the example Host's
// README and the CHANGELOG speak of the code as it is, not of the rounds,
// sessions or issues it came from.
func TestDocsSayWhatIsTrueNow(t *testing.T) {
	files := append(docFiles(t), "CHANGELOG.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range historyHits(string(b)) {
			t.Errorf("%s: history instead of what is true now: %s", f, h)
		}
	}
}

// TestHistoryWordsCanFail: the check finds what it is for and lets the
// API's own words pass.
func TestHistoryWordsCanFail(t *testing.T) {
	for _, s := range []string{"measured at the end of this round", "see issue 19", "fixed in #42", "(#7)", "as in the previous session", "round 3 of the work", "the coordinator re-ran it"} {
		if len(historyHits(s)) == 0 {
			t.Errorf("%q passed the check", s)
		}
	}
	for _, s := range []string{"Session.FinishTurn", "every session of the pool", "a round trip", "mem_#1", "rounds of the embedding worker", "the same session", "the UTS #39 skeleton"} {
		if h := historyHits(s); len(h) != 0 {
			t.Errorf("%q was refused: %v", s, h)
		}
	}
}
