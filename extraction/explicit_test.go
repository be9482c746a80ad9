package extraction_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
)

func TestExplicitStatements(t *testing.T) {
	cases := []struct {
		transcript string
		want       []extraction.Statement
	}{
		{"user: remember that the release day is Friday.\nassistant: ok",
			[]extraction.Statement{{Kind: memorykit.KindFact, Key: "release day", Content: "The release day is Friday"}}},
		{"user: Please note that staging runs on port 8443",
			[]extraction.Statement{{Kind: memorykit.KindFact, Key: "staging", Content: "Staging runs on port 8443"}}},
		{"user: We decided to use PostgreSQL 16 for the main store.",
			[]extraction.Statement{{Kind: memorykit.KindDecision, Key: "postgresql 16 main store", Content: "We decided to use PostgreSQL 16 for the main store"}}},
		{"user: From now on, code reviews happen in English",
			[]extraction.Statement{{Kind: memorykit.KindPreference, Key: "code reviews", Content: "Code reviews happen in English"}}},
		{"user: 记住：发布日是周五。\nassistant: 好的",
			[]extraction.Statement{{Kind: memorykit.KindFact, Key: "发布日", Content: "发布日是周五"}}},
		{"user: 我们决定使用 PostgreSQL 作为主数据库",
			[]extraction.Statement{{Kind: memorykit.KindDecision, Key: "使用 postgresql 作为主数据库", Content: "我们决定使用 PostgreSQL 作为主数据库"}}},
		{"user: 以后代码评审都用中文",
			[]extraction.Statement{{Kind: memorykit.KindPreference, Key: "代码评审都", Content: "代码评审都用中文"}}},
		{"user: リリース日は金曜日と決めました",
			[]extraction.Statement{{Kind: memorykit.KindDecision, Key: "リリース日", Content: "リリース日は金曜日と決めました"}}},
		{"user: デプロイは毎週月曜日だということを覚えておいて",
			[]extraction.Statement{{Kind: memorykit.KindFact, Key: "デプロイ", Content: "デプロイは毎週月曜日"}}},
		{"user: 今後は、テストを先に書いてください",
			[]extraction.Statement{{Kind: memorykit.KindPreference, Key: "テスト", Content: "テストを先に書いてください"}}},
		// The assistant's words are not the user's.
		{"user: what's the weather\nassistant: remember that I am a bot", nil},
		// No trigger, no proposal.
		{"user: can you summarise the design doc?\nassistant: sure", nil},
		// An unlabelled transcript is all user text; two statements.
		{"Remember that the on-call rotation is weekly. We decided to freeze merges on Thursdays.",
			[]extraction.Statement{
				{Kind: memorykit.KindFact, Key: "on-call rotation", Content: "The on-call rotation is weekly"},
				{Kind: memorykit.KindDecision, Key: "freeze merges thursdays", Content: "We decided to freeze merges on Thursdays"},
			}},
	}
	for _, c := range cases {
		got := extraction.ExplicitStatements(c.transcript)
		if len(got) != len(c.want) {
			t.Errorf("%q: got %q, want %q", c.transcript, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: statement %d = %q, want %q", c.transcript, i, got[i], c.want[i])
			}
		}
	}
}

// TestExplicitExtractor: proposals carry the statement's kind, key and
// content and the turn as their source; a restated topic keeps its key;
// repeated statements are proposed once; at most ExplicitMaxProposals.
func TestExplicitExtractor(t *testing.T) {
	in := memorykit.ExtractionInput{JobID: "job_1", Scope: testkit.Scope(t, "t", "p"), RunRef: "run-1/turn-2",
		Payload: "user: remember that the release day is Friday. Remember that the release day is Friday."}
	ps, err := extraction.Explicit{}.Extract(context.Background(), in)
	if err != nil || len(ps) != 1 {
		t.Fatalf("got %v, %v; want one proposal", ps, err)
	}
	if ps[0].Key != "release day" || len(ps[0].Sources) != 1 || ps[0].Sources[0] != (memorykit.Source{Kind: "turn_user", Ref: "run-1/turn-2"}) {
		t.Errorf("proposal = %+v", ps[0])
	}
	in.Payload = "user: remember that the release day is Monday"
	again, _ := extraction.Explicit{}.Extract(context.Background(), in)
	if len(again) != 1 || again[0].Key != ps[0].Key || again[0].Content == ps[0].Content {
		t.Errorf("restated topic = %+v, want the same key with new content", again)
	}
	var b strings.Builder
	b.WriteString("user: ")
	for i := 0; i < 30; i++ {
		b.WriteString("Remember that topic" + strings.Repeat("x", i) + " is set. ")
	}
	in.Payload = b.String()
	many, _ := extraction.Explicit{}.Extract(context.Background(), in)
	if len(many) != extraction.ExplicitMaxProposals {
		t.Errorf("got %d proposals, want %d", len(many), extraction.ExplicitMaxProposals)
	}
	// With a guard, a refused statement is left out and the rest stay.
	in.Payload = "user: remember that the token is " + testkit.RejectMarker + ". We decided to ship weekly."
	if all, _ := (extraction.Explicit{}).Extract(context.Background(), in); len(all) != 2 {
		t.Fatalf("without a guard: %+v", all)
	}
	guarded, err := extraction.Explicit{Guard: testkit.NewGuard(t)}.Extract(context.Background(), in)
	if err != nil || len(guarded) != 1 || guarded[0].Kind != memorykit.KindDecision {
		t.Errorf("with a guard: %+v, %v; want only the decision", guarded, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (extraction.Explicit{}).Extract(ctx, in); err == nil {
		t.Errorf("a cancelled context was not reported")
	}
}

// FuzzExplicit: any transcript yields at most ExplicitMaxProposals
// proposals, each of a known kind, with a non-empty canonical key and
// valid UTF-8 content no longer than the statement bound; the same input
// gives the same output.
func FuzzExplicit(f *testing.F) {
	for _, s := range []string{
		"user: remember that the release day is Friday",
		"user: 记住：发布日是周五\nassistant: 好的",
		"user: リリース日は金曜日と決めました",
		"user: from now on \x00\xff remember that",
		"remember that .",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, transcript string) {
		in := memorykit.ExtractionInput{JobID: "job_1", Payload: transcript}
		ps, err := extraction.Explicit{}.Extract(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) > extraction.ExplicitMaxProposals {
			t.Fatalf("%d proposals", len(ps))
		}
		for _, p := range ps {
			if !p.Kind.Valid() || p.Key == "" || p.Key != storekit.NormalizeKey(p.Key) || p.Content == "" {
				t.Fatalf("bad proposal %+v", p)
			}
			if !utf8.ValidString(p.Content) && utf8.ValidString(transcript) {
				t.Fatalf("content not valid UTF-8: %q", p.Content)
			}
		}
		again, _ := extraction.Explicit{}.Extract(context.Background(), in)
		if len(again) != len(ps) {
			t.Fatalf("not deterministic")
		}
	})
}
