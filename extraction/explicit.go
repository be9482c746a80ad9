package extraction

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Explicit is an offline, deterministic memorykit.Extractor: no model, no
// network. It proposes a candidate for each explicit statement in the
// user's lines of a transcript: "remember that …", "note that …", "from
// now on …", "going forward …", "we decided …", and the Chinese and
// Japanese equivalents (记住…, 请记住…, 以后…, 今后…, 我们决定…, 覚えておいて…,
// 今後は…, …と決めました, …に決定しました). The assistant's lines are
// ignored: the user's explicit words are the evidence.
//
// Each proposal gets a kind from its trigger (a decision for "we decided",
// a preference for "from now on", a fact otherwise), its statement as
// content, and a key derived from the statement's subject, so restating
// the same topic later ("the release day is Monday" after "the release day
// is Friday") proposes an update of the same key. The same transcript
// always yields the same proposals.
//
// The extraction worker applies Limits and the Host's ContentValidator to
// the proposals, as for any Extractor, and fails the attempt on the first
// refused one. With Guard set, Explicit leaves out each statement the guard
// refuses (a credential the user asked to remember, an oversized
// statement), so the rest are still proposed. It proposes at most
// ExplicitMaxProposals, and no statement longer than
// ExplicitMaxStatementRunes.
type Explicit struct {
	// Guard, when set, checks each proposal as the worker will; refused
	// ones are left out.
	Guard *memorykit.WriteGuard
}

var _ memorykit.Extractor = Explicit{}

// Bounds of Explicit.
const (
	// ExplicitMaxProposals is the most proposals Explicit makes per turn.
	ExplicitMaxProposals = 8
	// ExplicitMaxStatementRunes is the longest statement Explicit keeps.
	ExplicitMaxStatementRunes = 500
	// explicitMaxKeyRunes bounds a derived key.
	explicitMaxKeyRunes = 40
)

// Extract implements memorykit.Extractor.
func (x Explicit) Extract(ctx context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
	if err := ctx.Err(); err != nil {
		return nil, memorykit.WrapError("extraction.explicit", memorykit.ErrUnavailable, "context_done", err)
	}
	ref := in.RunRef
	if ref == "" {
		ref = in.JobID
	}
	var out []memorykit.Proposal
	seen := map[string]bool{}
	for _, st := range ExplicitStatements(in.Payload) {
		id := string(st.Kind) + "\x00" + st.Key
		if seen[id] {
			continue
		}
		seen[id] = true
		p := memorykit.Proposal{Kind: st.Kind, Key: st.Key, Content: st.Content}
		if ref != "" {
			p.Sources = []memorykit.Source{{Kind: "turn_user", Ref: ref}}
		}
		if x.Guard != nil {
			_, err := x.Guard.CheckNew(ctx, "extraction.explicit", memorykit.NewRecord{
				ID:    storekit.CandidateID(in.Scope, in.JobID, p.Kind, p.Key),
				Scope: in.Scope, Kind: p.Kind, Key: p.Key, Content: p.Content, Sources: p.Sources,
				Status: memorykit.StatusCandidate, Actor: memorykit.Actor{Kind: memorykit.ActorWorker, ID: "extraction"},
				Reason: storekit.ExtractionCandidateReason(in.JobID),
			})
			switch {
			case err != nil && errors.Is(err, memorykit.ErrInvalidInput):
				continue
			case err != nil:
				return nil, err
			}
		}
		out = append(out, p)
		if len(out) == ExplicitMaxProposals {
			break
		}
	}
	return out, nil
}

// Statement is one explicit statement found in a transcript.
type Statement struct {
	Kind    memorykit.Kind
	Key     string
	Content string
}

// trigger is one explicit-statement pattern. The statement is the
// pattern's "s" group.
type trigger struct {
	re   *regexp.Regexp
	kind memorykit.Kind
}

var triggers = []trigger{
	// English, the statement after the trigger.
	{regexp.MustCompile(`(?i)^(?:ok(?:ay)?[,.!]?\s+|so[,]?\s+|also[,]?\s+|and\s+)?(?:please\s+)?(?:we(?:'ve| have)?\s+decided|the decision is|decision:)\s*(?:that\s+|on\s+|:\s*)?(?P<s>.+)$`), memorykit.KindDecision},
	{regexp.MustCompile(`(?i)^(?:ok(?:ay)?[,.!]?\s+|also[,]?\s+|and\s+)?(?:from now on|going forward|in the future)[,:]?\s+(?P<s>.+)$`), memorykit.KindPreference},
	{regexp.MustCompile(`(?i)^(?:ok(?:ay)?[,.!]?\s+|also[,]?\s+|and\s+)?(?:please\s+)?(?:remember|note|keep in mind|don't forget|do not forget)(?:\s+that|\s*:|,)\s*(?P<s>.+)$`), memorykit.KindFact},
	// Chinese.
	{regexp.MustCompile(`^(?:好的?[，,]?\s*)?(?:我们|咱们)(?:已经)?决定(?:了)?[:：，,]?\s*(?P<s>.+)$`), memorykit.KindDecision},
	{regexp.MustCompile(`^(?:好的?[，,]?\s*)?(?:以后|今后|从现在起|从现在开始)[，,：:]?\s*(?P<s>.+)$`), memorykit.KindPreference},
	{regexp.MustCompile(`^(?:好的?[，,]?\s*)?(?:请)?(?:记住|记一下|记下|注意)[：:，,]?\s*(?P<s>.+)$`), memorykit.KindFact},
	// Japanese, the statement after the trigger.
	{regexp.MustCompile(`^(?:今後は|これからは)[、，,]?\s*(?P<s>.+)$`), memorykit.KindPreference},
	{regexp.MustCompile(`^(?:覚えておいて(?:ください|下さい)?|メモして(?:ください)?)[：:、，,]\s*(?P<s>.+)$`), memorykit.KindFact},
	// Japanese, the statement before the trigger.
	{regexp.MustCompile(`^(?P<s>.+?)(?:ことに|と|に)(?:決めました|決定しました|決まりました)$`), memorykit.KindDecision},
	{regexp.MustCompile(`^(?P<s>.+?)(?:ことを|のを|を|と)?(?:覚えておいて(?:ください|下さい)?|覚えて(?:おいて)?ね)$`), memorykit.KindFact},
}

// ExplicitStatements returns the explicit statements of a transcript's
// user lines, in order, with their derived kinds and keys.
func ExplicitStatements(transcript string) []Statement {
	var out []Statement
	for _, sentence := range sentences(userText(transcript)) {
		for _, tr := range triggers {
			m := tr.re.FindStringSubmatch(sentence)
			if m == nil {
				continue
			}
			s := cleanStatement(m[tr.re.SubexpIndex("s")])
			if s == "" || utf8.RuneCountInString(sentence) > ExplicitMaxStatementRunes {
				break
			}
			key := deriveKey(s)
			if key == "" {
				break
			}
			content := upperFirst(s)
			if tr.kind == memorykit.KindDecision {
				// "We decided to …" reads better whole than its tail.
				content = cleanStatement(leadFiller.ReplaceAllString(sentence, ""))
			}
			out = append(out, Statement{Kind: tr.kind, Key: key, Content: content})
			break
		}
	}
	return out
}

var roleLabel = regexp.MustCompile(`(?i)^\s*(user|assistant|system|tool)\s*[:：]\s?`)

// userText returns the user's lines of a "user: … / assistant: …"
// transcript; a transcript with no role label is all user text.
func userText(t string) string {
	lines := strings.Split(strings.ReplaceAll(t, "\r\n", "\n"), "\n")
	labelled := false
	for _, l := range lines {
		if roleLabel.MatchString(l) {
			labelled = true
			break
		}
	}
	if !labelled {
		return t
	}
	var b strings.Builder
	user := false
	for _, l := range lines {
		if m := roleLabel.FindStringSubmatch(l); m != nil {
			user = strings.EqualFold(m[1], "user")
			l = l[len(m[0]):]
		}
		if user {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// sentences splits text at line breaks and sentence-ending punctuation.
func sentences(t string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if s := strings.TrimSpace(b.String()); s != "" {
			out = append(out, s)
		}
		b.Reset()
	}
	rs := []rune(t)
	for i, r := range rs {
		switch {
		case r == '\n' || r == '。' || r == '！' || r == '？' || r == '!' || r == '?' || r == '；' || r == ';':
			flush()
		case r == '.' && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])):
			flush()
		default:
			b.WriteRune(r)
		}
	}
	flush()
	return out
}

// leadFiller is the conversational opening a statement drops.
var leadFiller = regexp.MustCompile(`(?i)^(?:ok(?:ay)?[,.!]?\s+|so[,]?\s+|also[,]?\s+|and\s+|好的?[，,]?\s*)`)

// cleanStatement trims a statement and its trailing particles.
func cleanStatement(s string) string {
	s = strings.Trim(strings.TrimSpace(s), " ,，、:：")
	for _, suffix := range []string{"ということ", "という", "ってこと", "こと", "だ"} {
		if t := strings.TrimSuffix(s, suffix); t != "" {
			s = t
		}
	}
	return strings.TrimSpace(s)
}

// subjectSplit finds where a statement's subject ends: a copula or a
// main verb. The text before it names the topic.
var subjectSplit = regexp.MustCompile(`(?i)\s(is|are|was|were|will be|should be|must be|stays|remains|uses|use|runs on|run on|lives in|live in|goes|go|happens|happen|means|=)\s|是|用|使用|采用|改为|改成|定在|放在|在|为|は|が|を|で`)

var englishFiller = map[string]bool{
	"the": true, "a": true, "an": true, "our": true, "we": true, "to": true, "that": true, "this": true,
	"of": true, "for": true, "and": true, "all": true, "always": true, "never": true, "please": true,
	"should": true, "will": true, "must": true, "i": true, "you": true, "my": true, "your": true, "it": true,
	"in": true, "on": true, "at": true, "be": true, "let's": true, "lets": true, "us": true,
}

// deriveKey names a statement's topic: its subject (the words before a
// copula or main verb) or, without one, its first content words,
// lower-cased and at most explicitMaxKeyRunes runes.
func deriveKey(s string) string {
	subject := s
	if loc := subjectSplit.FindStringIndex(s); loc != nil && loc[0] > 0 {
		subject = s[:loc[0]]
	}
	key := contentWords(subject)
	if key == "" {
		key = contentWords(s)
	}
	if key == "" {
		return ""
	}
	key, _ = cutRunes(key, explicitMaxKeyRunes)
	return storekit.NormalizeKey(key)
}

// leadVerbs are verbs that open a statement without naming its topic
// ("use PostgreSQL", "switch to Go").
var leadVerbs = map[string]bool{
	"use": true, "using": true, "switch": true, "move": true, "adopt": true, "go": true, "keep": true,
	"make": true, "do": true, "have": true, "start": true, "stop": true, "put": true,
}

// contentWords returns up to four lower-cased words of s that are not
// filler (and, first, not an opening verb), joined by spaces.
func contentWords(s string) string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '\'')
	})
	var kept []string
	for _, w := range words {
		if englishFiller[w] || (len(kept) == 0 && leadVerbs[w]) {
			continue
		}
		kept = append(kept, w)
		if len(kept) == 4 {
			break
		}
	}
	return strings.TrimSpace(strings.Join(kept, " "))
}

// upperFirst capitalises a leading ASCII letter ("the release day …"
// becomes "The release day …").
func upperFirst(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
