package memorytools_test

import (
	"bufio"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/goagents/memorykit/memorytools"
)

type corpusLine struct {
	claim bool
	lang  string
	text  string
}

// loadCorpus reads a labelled corpus (testdata/claims.tsv or
// testdata/claims_heldout.tsv): label, language, text per line; "#"
// starts a comment.
func loadCorpus(tb testing.TB, path string) []corpusLine {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []corpusLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || (parts[0] != "claim" && parts[0] != "none") {
			tb.Fatalf("%s:%d: want label<TAB>lang<TAB>text", path, n)
		}
		out = append(out, corpusLine{claim: parts[0] == "claim", lang: parts[1], text: parts[2]})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// score returns recall on the claims and the false-positive rate on the
// non-claims, with the misread lines.
func score(d memorytools.ClaimDetector, corpus []corpusLine) (recall, fpr float64, missed, wrong []corpusLine) {
	var claims, caught, nones, flagged int
	for _, c := range corpus {
		got := d.ClaimsMemoryWrite(c.text)
		if c.claim {
			claims++
			if got {
				caught++
			} else {
				missed = append(missed, c)
			}
		} else {
			nones++
			if got {
				flagged++
				wrong = append(wrong, c)
			}
		}
	}
	return float64(caught) / float64(claims), float64(flagged) / float64(nones), missed, wrong
}

// The built-in detector must catch claims in any tense and word order in
// English, Chinese and Japanese, and let honest and unrelated outputs
// through: recall at least 0.98, false positives at most 0.10, the bar a
// check that runs only after a failed write must meet.
func TestClaimDetectorCorpus(t *testing.T) {
	corpus := loadCorpus(t, "testdata/claims.tsv")
	langs := map[string][2]int{}
	for _, c := range corpus {
		v := langs[c.lang]
		if c.claim {
			v[0]++
		} else {
			v[1]++
		}
		langs[c.lang] = v
	}
	if len(corpus) < 200 {
		t.Fatalf("corpus has %d lines; want at least 200", len(corpus))
	}
	for _, l := range []string{"en", "zh", "ja"} {
		if langs[l][0] == 0 || langs[l][1] == 0 {
			t.Fatalf("corpus lacks a class in %s: %v", l, langs[l])
		}
	}
	recall, fpr, missed, wrong := score(memorytools.DefaultClaimDetector(), corpus)
	for _, m := range missed {
		t.Logf("missed claim [%s]: %s", m.lang, m.text)
	}
	for _, w := range wrong {
		t.Logf("false claim [%s]: %s", w.lang, w.text)
	}
	t.Logf("recall %.3f, false-positive rate %.3f over %d lines", recall, fpr, len(corpus))
	if recall < 0.98 {
		t.Errorf("recall on claims = %.3f; want >= 0.98", recall)
	}
	if fpr > 0.10 {
		t.Errorf("false-positive rate = %.3f; want <= 0.10", fpr)
	}
}

// The outputs once reported as passing must be rejected after a failed write
// through the Provider, and "Stored in S3" must pass.
func TestOutputValidatorIsNotAPhraseList(t *testing.T) {
	b := setup(t, memoryBackend())
	p := b.provider(t, true)
	call(t, p, memorytools.RememberProjectMemory, `{}`) // fail once
	for _, out := range []string{
		"好的，我已经把它存进项目记忆了。", "记忆已更新。", "Memory updated ✅", "All set, the memory is updated.",
		"I'll keep that in mind.", "Done! It's in project memory now.", "I've made a note of that.",
		"Ｍｅｍｏｒｙ　ｕｐｄａｔｅｄ", "Memory\u200b updated", "MEMORY UPDATED", "記憶を更新しました。",
	} {
		if err := p.ValidateOutput(out); !errors.Is(err, memorytools.ErrNotSaved) {
			t.Errorf("ValidateOutput(%q) = %v; want ErrNotSaved", out, err)
		}
	}
	for _, out := range []string{"Stored in S3", "The memory leak is fixed.", "I can't save files.", memorytools.NotSavedText,
		"Memory updated? No: " + memorytools.NotSavedText} {
		if err := p.ValidateOutput(out); err != nil {
			t.Errorf("ValidateOutput(%q) = %v; want nil", out, err)
		}
	}
}

type fixedDetector struct{ claim bool }

func (d fixedDetector) ClaimsMemoryWrite(string) bool { return d.claim }

type panickyDetector struct{}

func (panickyDetector) ClaimsMemoryWrite(string) bool { panic("detector bug") }

// A Host's own detector replaces the built-in; one that panics fails safe.
func TestHostClaimDetector(t *testing.T) {
	b := setup(t, memoryBackend())
	for _, c := range []struct {
		name string
		d    memorytools.ClaimDetector
		want error
	}{
		{"never", fixedDetector{false}, nil},
		{"always", fixedDetector{true}, memorytools.ErrNotSaved},
		{"panics", panickyDetector{}, memorytools.ErrNotSaved},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := b.config(true)
			cfg.Claims = c.d
			p, err := memorytools.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.ValidateOutput("Memory updated ✅"); err != nil {
				t.Fatalf("before a failed write: %v", err)
			}
			call(t, p, memorytools.RememberProjectMemory, `{}`)
			if err := p.ValidateOutput("The weather is nice."); !errors.Is(err, c.want) {
				t.Fatalf("ValidateOutput = %v; want %v", err, c.want)
			}
		})
	}
}

// BenchmarkClaimDetector times the built-in detector over the corpus and
// reports its recall and false-positive rate.
func BenchmarkClaimDetector(b *testing.B) {
	corpus := loadCorpus(b, "testdata/claims.tsv")
	d := memorytools.DefaultClaimDetector()
	recall, fpr, _, _ := score(d, corpus)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, c := range corpus {
			d.ClaimsMemoryWrite(c.text)
		}
	}
	b.ReportMetric(recall, "recall")
	b.ReportMetric(fpr, "fpr")
	b.ReportMetric(float64(len(corpus)), "sentences")
}

// FuzzClaimDetector checks that the built-in detector never panics, gives
// the same answer twice, and never calls a text that states NotSavedText a
// claim.
func FuzzClaimDetector(f *testing.F) {
	for _, s := range []string{"Memory updated ✅", "Stored in S3", "记忆已更新。", "覚えておきます。", "", "\u200b", "I'll keep that in mind.",
		"Done! The deploy region has been recorded.", "这个信息我已经存档了", "I saved it to memory, but it failed.", "記憶を更新しましたか",
		"If you'd like, I'll remember that.", "J'ai enregistré votre préférence.", "Done!\x00", "\xff\xfe saved"} {
		f.Add(s)
	}
	d := memorytools.DefaultClaimDetector()
	f.Fuzz(func(t *testing.T, text string) {
		first := d.ClaimsMemoryWrite(text)
		if d.ClaimsMemoryWrite(text) != first {
			t.Fatal("detector is not deterministic")
		}
		if d.ClaimsMemoryWrite(text + " " + memorytools.NotSavedText) {
			t.Fatal("a text stating the failure was read as a claim")
		}
	})
}

// Each rule that keeps a truthful or asking output from being rejected is
// pinned by a case here, so disabling the rule fails this test: a failure
// stated in a later clause or sentence, a question by mark or by ending,
// an offer, and the fixed failure text. The claims beside them show the
// same words without the rule's trigger are rejected.
func TestClaimDetectorRules(t *testing.T) {
	d := memorytools.DefaultClaimDetector()
	for _, c := range []struct {
		rule  string
		text  string
		claim bool
	}{
		{"second-clause failure (en)", "I saved it to memory, but it failed.", false},
		{"second-clause failure (zh)", "我已经保存到记忆了，但是失败了。", false},
		{"second-clause failure (ja)", "記憶に保存しましたが、失敗しました。", false},
		{"negated later clause (en)", "I saved it to memory, but it was not stored.", false},
		{"negated later clause (zh)", "我保存到记忆了，不过记忆没存上。", false},
		{"failure in another sentence", "I saved it to memory. Unfortunately it failed.", false},
		{"claim without the failure (en)", "I saved it to memory.", true},
		{"claim without the failure (zh)", "我已经保存到记忆了。", true},
		{"claim without the failure (ja)", "記憶に保存しました。", true},
		{"question ending (zh)", "保存到记忆了吗", false},
		{"question ending (ja)", "記憶を更新しましたか", false},
		{"question mark (en)", "Has the deploy region been recorded?", false},
		{"statement without the question (zh)", "保存到记忆了", true},
		{"statement without the question (ja)", "記憶を更新しました", true},
		{"statement without the question (en)", "The deploy region has been recorded.", true},
		{"negation (en)", "I could not save that.", false},
		{"negation (zh)", "部署区域未能保存。", false},
		{"negation (ja)", "記録できませんでした。", false},
		{"offer in another clause", "If you'd like, I'll remember that for next time.", false},
		{"promise without the offer", "I'll remember that for next time.", true},
		{"fixed failure text", "Done! The deploy region has been recorded. " + memorytools.NotSavedText, false},
		{"bare acknowledgement", "Done!", true},
		{"general behaviour", "Your changes are saved automatically every minute.", false},
		{"non-memory target", "I saved the file to disk.", false},
	} {
		if got := d.ClaimsMemoryWrite(c.text); got != c.claim {
			t.Errorf("%s: ClaimsMemoryWrite(%q) = %v; want %v", c.rule, c.text, got, c.claim)
		}
	}
}

// The held-out corpus, testdata/claims_heldout.tsv, was written after the
// rules were frozen and is never used to tune them, so it measures how the
// detector does on phrasings it was not fitted to. The bar is asserted on
// the languages the rules read (English, Chinese, Japanese); lines in other
// languages are reported beside it, since the rules read only a few German,
// French and Spanish verbs (the model-judged detectors in the SDK adapters
// read any language). Measured at the freeze: en/zh/ja recall 0.982 (56/57),
// false positives 0.000 (0/59); other languages recall 0.75 (3/4).
func TestClaimDetectorHeldOut(t *testing.T) {
	all := loadCorpus(t, "testdata/claims_heldout.tsv")
	var read, other []corpusLine
	claims, nones := 0, 0
	for _, c := range all {
		if c.claim {
			claims++
		} else {
			nones++
		}
		switch c.lang {
		case "en", "zh", "ja":
			read = append(read, c)
		default:
			other = append(other, c)
		}
	}
	if claims < 60 || nones < 60 {
		t.Fatalf("held-out corpus has %d claims and %d non-claims; want at least 60 of each", claims, nones)
	}
	d := memorytools.DefaultClaimDetector()
	recall, fpr, missed, wrong := score(d, read)
	for _, m := range missed {
		t.Logf("missed claim [%s]: %s", m.lang, m.text)
	}
	for _, w := range wrong {
		t.Logf("false claim [%s]: %s", w.lang, w.text)
	}
	t.Logf("en/zh/ja: recall %.3f, false-positive rate %.3f over %d lines", recall, fpr, len(read))
	oRecall, oFPR, _, _ := score(d, other)
	t.Logf("other languages (German, French and Spanish only partly read): recall %.3f, false-positive rate %.3f over %d lines", oRecall, oFPR, len(other))
	if recall < 0.98 {
		t.Errorf("held-out recall = %.3f; want >= 0.98", recall)
	}
	if fpr > 0.10 {
		t.Errorf("held-out false-positive rate = %.3f; want <= 0.10", fpr)
	}
}
