package memorykit_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

func TestScopeValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scope  memorykit.Scope
		reason string
	}{
		{"project", memorykit.Scope{TenantID: "t1", SubjectType: memorykit.SubjectProject, SubjectID: "p1"}, ""},
		{"user rejected", memorykit.Scope{TenantID: "t1", SubjectType: memorykit.SubjectUser, SubjectID: "u1"}, "user_scope_not_supported"},
		{"unknown subject", memorykit.Scope{TenantID: "t1", SubjectType: "team", SubjectID: "p1"}, "unknown"},
		{"empty tenant", memorykit.Scope{SubjectType: memorykit.SubjectProject, SubjectID: "p1"}, "empty"},
		{"empty subject", memorykit.Scope{TenantID: "t1", SubjectType: memorykit.SubjectProject}, "empty"},
		{"bad char", memorykit.Scope{TenantID: "t 1", SubjectType: memorykit.SubjectProject, SubjectID: "p1"}, "bad_character"},
		{"nul", memorykit.Scope{TenantID: "t1", SubjectType: memorykit.SubjectProject, SubjectID: "p\x001"}, "bad_character"},
		{"too long", memorykit.Scope{TenantID: strings.Repeat("a", storekit.MaxIDBytes+1), SubjectType: memorykit.SubjectProject, SubjectID: "p1"}, "too_long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.scope.Validate()
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, memorykit.ErrInvalidScope) {
				t.Fatalf("Validate() = %v, want ErrInvalidScope", err)
			}
			var e *memorykit.Error
			if !errors.As(err, &e) || e.Reason != tc.reason {
				t.Fatalf("reason = %v, want %q", err, tc.reason)
			}
		})
	}
	if _, err := memorykit.ProjectScope("t1", "p1"); err != nil {
		t.Fatalf("ProjectScope: %v", err)
	}
	if _, err := memorykit.ProjectScope("t1", ""); !errors.Is(err, memorykit.ErrInvalidScope) {
		t.Fatalf("ProjectScope with empty project = %v", err)
	}
}

func validLimits() memorykit.Limits {
	return memorykit.Limits{
		Version: 1, MaxKeyBytes: 64, MaxContentBytes: 256, MaxMetadataEntries: 2,
		MaxMetadataBytes: 64, MaxSources: 2, MaxSourceBytes: 64, MaxListSize: 10,
		MaxJobPayloadBytes: 128, MaxReasonBytes: 1024,
	}
}

func TestLimitsValidateRejectsEveryZeroField(t *testing.T) {
	t.Parallel()
	if err := validLimits().Validate(); err != nil {
		t.Fatalf("valid limits: %v", err)
	}
	if err := (memorykit.Limits{}).Validate(); !errors.Is(err, memorykit.ErrInvalidPolicy) {
		t.Fatalf("zero limits = %v, want ErrInvalidPolicy", err)
	}
	above := validLimits()
	above.MaxReasonBytes = storekit.MaxReasonBytes + 1
	if err := above.Validate(); !errors.Is(err, memorykit.ErrInvalidPolicy) {
		t.Fatalf("MaxReasonBytes above the package ceiling = %v, want ErrInvalidPolicy", err)
	}
	v := reflect.ValueOf(validLimits())
	for i := 0; i < v.NumField(); i++ {
		l := validLimits()
		reflect.ValueOf(&l).Elem().Field(i).SetInt(0)
		if err := l.Validate(); !errors.Is(err, memorykit.ErrInvalidPolicy) {
			t.Errorf("limits with %s=0: Validate() = %v", v.Type().Field(i).Name, err)
		}
	}
}

func validPolicy() memorykit.RecallPolicy {
	return memorykit.RecallPolicy{
		Version: 1, ExactLimit: 5, FullTextLimit: 20, VectorLimit: 20, RRFK: 60,
		ExactWeight: 1, FullTextWeight: 1, VectorWeight: 1, MaxItems: 8, MaxTokens: 800,
		MaxEntryRunes: 400, MaxQueryRunes: 500, MaxQueryTerms: 32, Deadline: 200 * time.Millisecond,
		EmbeddingProfile: "memorykit/hash-v1", EmbeddingDimension: 384, MinVectorSimilarity: 0.1,
	}
}

func TestRecallPolicyValidateRejectsPartialPolicies(t *testing.T) {
	t.Parallel()
	if err := validPolicy().Validate(); err != nil {
		t.Fatalf("valid policy: %v", err)
	}
	if err := (memorykit.RecallPolicy{}).Validate(); !errors.Is(err, memorykit.ErrInvalidPolicy) {
		t.Fatalf("zero policy = %v", err)
	}
	v := reflect.ValueOf(validPolicy())
	for i := 0; i < v.NumField(); i++ {
		if v.Type().Field(i).Name == "MinVectorSimilarity" {
			continue // 0 is a valid floor: keep every vector hit
		}
		p := validPolicy()
		f := reflect.ValueOf(&p).Elem().Field(i)
		f.Set(reflect.Zero(f.Type()))
		if err := p.Validate(); !errors.Is(err, memorykit.ErrInvalidPolicy) {
			t.Errorf("policy with zero %s: Validate() = %v", v.Type().Field(i).Name, err)
		}
	}
	bad := []func(*memorykit.RecallPolicy){
		func(p *memorykit.RecallPolicy) { p.VectorWeight = math.NaN() },
		func(p *memorykit.RecallPolicy) { p.ExactWeight = -1 },
		func(p *memorykit.RecallPolicy) { p.FullTextWeight = 101 },
		func(p *memorykit.RecallPolicy) { p.MaxItems = memorykit.MaxPolicyBudget + 1 },
		func(p *memorykit.RecallPolicy) { p.Deadline = -time.Second },
		func(p *memorykit.RecallPolicy) { p.EmbeddingProfile = "has space" },
		func(p *memorykit.RecallPolicy) { p.MinVectorSimilarity = 1 },
		func(p *memorykit.RecallPolicy) { p.MinVectorSimilarity = -0.1 },
		func(p *memorykit.RecallPolicy) { p.MinVectorSimilarity = math.NaN() },
	}
	for i, mutate := range bad {
		p := validPolicy()
		mutate(&p)
		if err := p.Validate(); !errors.Is(err, memorykit.ErrInvalidPolicy) {
			t.Errorf("bad policy %d: Validate() = %v", i, err)
		}
	}
}

type rejectMarker struct{ marker string }

func (r rejectMarker) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if strings.Contains(c.Content, r.marker) {
		return errors.New("content mentions " + c.Content)
	}
	return nil
}

func TestWriteGuardNeedsAValidator(t *testing.T) {
	t.Parallel()
	if _, err := memorykit.NewWriteGuard(validLimits(), nil); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Fatalf("nil validator = %v, want ErrInvalidConfig", err)
	}
	if _, err := memorykit.NewWriteGuard(memorykit.Limits{}, rejectMarker{"x"}); !errors.Is(err, memorykit.ErrInvalidPolicy) {
		t.Fatalf("zero limits = %v, want ErrInvalidPolicy", err)
	}
}

func TestWriteGuardCheckNew(t *testing.T) {
	t.Parallel()
	g, err := memorykit.NewWriteGuard(validLimits(), rejectMarker{"SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	scope, _ := memorykit.ProjectScope("t1", "p1")
	base := func() memorykit.NewRecord {
		return memorykit.NewRecord{
			Scope: scope, Kind: memorykit.KindFact, Key: "  Deploy   Region ", Content: "eu-west-1",
			Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"},
			Metadata: map[string]string{"lang": "en"}, Sources: []memorykit.Source{{Kind: "chat", Ref: "run-1"}},
		}
	}
	got, err := g.CheckNew(context.Background(), "test", base())
	if err != nil {
		t.Fatalf("valid record: %v", err)
	}
	if got.Key != "deploy region" {
		t.Fatalf("key not canonicalised: %q", got.Key)
	}
	tests := []struct {
		name   string
		mutate func(*memorykit.NewRecord)
		kind   error
		reason string
	}{
		{"user scope", func(r *memorykit.NewRecord) { r.Scope.SubjectType = memorykit.SubjectUser }, memorykit.ErrInvalidScope, "user_scope_not_supported"},
		{"unknown kind", func(r *memorykit.NewRecord) { r.Kind = "gossip" }, memorykit.ErrInvalidInput, "unknown"},
		{"bad status", func(r *memorykit.NewRecord) { r.Status = memorykit.StatusErased }, memorykit.ErrInvalidInput, "must_be_active_or_candidate"},
		{"empty key", func(r *memorykit.NewRecord) { r.Key = "   " }, memorykit.ErrInvalidInput, "empty"},
		{"long key", func(r *memorykit.NewRecord) { r.Key = strings.Repeat("k", 65) }, memorykit.ErrInvalidInput, "too_long"},
		{"key invalid utf8", func(r *memorykit.NewRecord) { r.Key = "a\xffb" }, memorykit.ErrInvalidInput, "invalid_utf8"},
		{"key nul", func(r *memorykit.NewRecord) { r.Key = "a\x00b" }, memorykit.ErrInvalidInput, "nul_byte"},
		{"key control", func(r *memorykit.NewRecord) { r.Key = "a\x01b" }, memorykit.ErrInvalidInput, "control_character"},
		{"key only invisible", func(r *memorykit.NewRecord) { r.Key = "\u200b\u00ad\ufeff \u2060" }, memorykit.ErrInvalidInput, "empty"},
		{"empty content", func(r *memorykit.NewRecord) { r.Content = "" }, memorykit.ErrInvalidInput, "empty"},
		{"long content", func(r *memorykit.NewRecord) { r.Content = strings.Repeat("c", 257) }, memorykit.ErrInvalidInput, "too_long"},
		{"content invalid utf8", func(r *memorykit.NewRecord) { r.Content = "\xc3\x28" }, memorykit.ErrInvalidInput, "invalid_utf8"},
		{"content nul", func(r *memorykit.NewRecord) { r.Content = "a\x00" }, memorykit.ErrInvalidInput, "nul_byte"},
		{"content control", func(r *memorykit.NewRecord) { r.Content = "a\x07" }, memorykit.ErrInvalidInput, "control_character"},
		{"content spaces", func(r *memorykit.NewRecord) { r.Content = "   " }, memorykit.ErrInvalidInput, "blank"},
		{"content zero-width", func(r *memorykit.NewRecord) { r.Content = "\u200b\u200b" }, memorykit.ErrInvalidInput, "blank"},
		{"content blank symbols", func(r *memorykit.NewRecord) { r.Content = "\u2800 \u3164\n" }, memorykit.ErrInvalidInput, "blank"},
		{"too many metadata", func(r *memorykit.NewRecord) { r.Metadata = map[string]string{"a": "1", "b": "2", "c": "3"} }, memorykit.ErrInvalidInput, "too_many_entries"},
		{"metadata bytes", func(r *memorykit.NewRecord) { r.Metadata = map[string]string{"a": strings.Repeat("v", 64)} }, memorykit.ErrInvalidInput, "too_long"},
		{"metadata key", func(r *memorykit.NewRecord) { r.Metadata = map[string]string{"Bad Key": "v"} }, memorykit.ErrInvalidInput, "bad_character"},
		{"metadata value nul", func(r *memorykit.NewRecord) { r.Metadata = map[string]string{"a": "\x00"} }, memorykit.ErrInvalidInput, "nul_byte"},
		{"too many sources", func(r *memorykit.NewRecord) {
			r.Sources = []memorykit.Source{{"a", "1"}, {"a", "2"}, {"a", "3"}}
		}, memorykit.ErrInvalidInput, "too_many"},
		{"long source", func(r *memorykit.NewRecord) { r.Sources = []memorykit.Source{{"a", strings.Repeat("r", 64)}} }, memorykit.ErrInvalidInput, "too_long"},
		{"empty source ref", func(r *memorykit.NewRecord) { r.Sources = []memorykit.Source{{"a", ""}} }, memorykit.ErrInvalidInput, "empty"},
		{"source ref utf8", func(r *memorykit.NewRecord) { r.Sources = []memorykit.Source{{"a", "\xff"}} }, memorykit.ErrInvalidInput, "invalid_utf8"},
		{"bad actor", func(r *memorykit.NewRecord) { r.Actor = memorykit.Actor{Kind: "robot", ID: "r"} }, memorykit.ErrInvalidInput, "unknown"},
		{"bad id", func(r *memorykit.NewRecord) { r.ID = "has space" }, memorykit.ErrInvalidInput, "bad_character"},
		{"long reason", func(r *memorykit.NewRecord) { r.Reason = strings.Repeat("r", storekit.MaxReasonBytes+1) }, memorykit.ErrInvalidInput, "too_long"},
		{"bad window", func(r *memorykit.NewRecord) {
			r.EffectiveFrom = time.Unix(100, 0)
			r.EffectiveUntil = time.Unix(50, 0)
		}, memorykit.ErrInvalidInput, "not_after_effective_from"},
		{"expect on candidate", func(r *memorykit.NewRecord) {
			r.Status = memorykit.StatusCandidate
			r.Expect = &memorykit.ActiveExpectation{None: true}
		}, memorykit.ErrInvalidInput, "only_for_active"},
		{"expect both", func(r *memorykit.NewRecord) { r.Expect = &memorykit.ActiveExpectation{None: true, ID: "x", Version: 1} }, memorykit.ErrInvalidInput, "need_none_or_id"},
		{"validator rejects", func(r *memorykit.NewRecord) { r.Content = "my SECRET is hunter2" }, memorykit.ErrInvalidInput, "content_rejected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.mutate(&r)
			_, err := g.CheckNew(context.Background(), "test", r)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("CheckNew() = %v, want %v", err, tc.kind)
			}
			var e *memorykit.Error
			if !errors.As(err, &e) || e.Reason != tc.reason {
				t.Fatalf("CheckNew() = %v, want reason %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error string leaks content: %q", err.Error())
			}
		})
	}
}

func TestCheckReasonCode(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"timeout", "lease_expired", "sqlstate_40001"} {
		if err := storekit.CheckReasonCode("t", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Has Caps", "with space", strings.Repeat("a", 65), "drop;table"} {
		if err := storekit.CheckReasonCode("t", bad); !errors.Is(err, memorykit.ErrInvalidInput) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestSearchTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		query string
		max   int
		want  []string
	}{
		{"english", "Where does the API run? The API!", 10, []string{"api", "run"}},
		{"english contraction", "Didn't we say we'd move the Berlin office?", 10, []string{"move", "berlin", "office"}},
		{"english only function words", "What is it?", 10, []string{"what", "is", "it"}},
		{"chinese", "数据库迁移", 10, []string{"数据", "据库", "库迁", "迁移"}},
		// Cut at 我, 们, 了 and 什么 into 上周决定 and 数据库: no gram
		// straddles a function character (周决 joins two content words).
		{"chinese function chars", "我们上周决定了什么数据库", 10, []string{"上周", "周决", "决定", "数据", "据库"}},
		{"chinese single content char", "她的猫叫什么", 10, []string{"猫叫"}},
		{"chinese lone char between function chars", "我的猫呢", 10, []string{"猫"}},
		{"chinese only function chars", "是我的吗", 10, []string{"是我", "我的", "的吗"}},
		{"japanese", "東京の天気", 10, []string{"東京", "天気"}},
		{"japanese auxiliaries", "先週の会議で何を決めましたか", 10, []string{"先週", "会議", "決め"}},
		{"japanese only function words", "これは何ですか", 10, []string{"これ", "れは", "は何", "何で", "です", "すか"}},
		{"max terms counts content terms", "the one and the two and three", 2, []string{"one", "two"}},
		{"katakana long vowel", "データ", 10, []string{"デー", "ータ"}},
		{"mixed", "Postgres数据库 v15", 10, []string{"postgres", "数据", "据库", "v15"}},
		{"single cjk", "猫 cat", 10, []string{"猫", "cat"}},
		{"full width", "ＡＰＩ Ｋｅｙ", 10, []string{"api", "key"}},
		{"max terms", "one two three four", 2, []string{"one", "two"}},
		{"punctuation only", "?!... ---", 10, nil},
		{"zero max", "one", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := storekit.SearchTerms(tc.query, tc.max)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("SearchTerms(%q) = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}

func TestIndexTermsMakeCJKGramsSubstrings(t *testing.T) {
	t.Parallel()
	got := storekit.IndexTerms("db", "使用数据库 Postgres")
	want := []string{"db", "postgres", "使", "使用", "库", "据", "据库", "数", "数据", "用", "用数"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("IndexTerms = %q, want %q", got, want)
	}
	index := map[string]bool{}
	for _, term := range got {
		index[term] = true
	}
	// Every query gram that is a substring of the content is an index term.
	for _, q := range []string{"数据库", "用数", "库", "使用数据"} {
		for _, term := range storekit.SearchTerms(q, 10) {
			if !index[term] {
				t.Errorf("query %q term %q is a substring but not indexed", q, term)
			}
		}
	}
}

func TestExactKeys(t *testing.T) {
	t.Parallel()
	got := storekit.ExactKeys("What is deploy.region?", 5)
	want := []string{"what is deploy.region", "what", "is", "deploy.region"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ExactKeys = %q, want %q", got, want)
	}
	if got := storekit.ExactKeys("a b c d e f", 3); len(got) != 3 {
		t.Fatalf("ExactKeys max: %q", got)
	}
	if got := storekit.NormalizeKey("  Ｄｅｐｌｏｙ\tREGION  "); got != "deploy region" {
		t.Fatalf("NormalizeKey = %q", got)
	}
}

func TestFuseRRF(t *testing.T) {
	t.Parallel()
	fused := storekit.FuseRRF(60,
		storekit.Ranking{Channel: memorykit.ChannelExact, Weight: 1, IDs: []string{"k"}},
		storekit.Ranking{Channel: memorykit.ChannelFullText, Weight: 1, IDs: []string{"a", "b", "k"}},
		storekit.Ranking{Channel: memorykit.ChannelVector, Weight: 1, IDs: []string{"b", "a", "a"}},
	)
	var got []string
	for _, f := range fused {
		got = append(got, f.ID)
	}
	// a and b tie on score (1/61 + 1/62) and have no effective time, so ID
	// decides; k
	// (1/61 + 1/63) comes last. The duplicate "a" in the vector list counts once.
	if want := []string{"a", "b", "k"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	k := fused[2]
	if k.Ranks[memorykit.ChannelExact] != 1 || k.Ranks[memorykit.ChannelFullText] != 3 || len(k.Ranks) != 2 {
		t.Fatalf("ranks = %v", k.Ranks)
	}
	if want := 1.0/61 + 1.0/63; math.Abs(k.Score-want) > 1e-12 {
		t.Fatalf("score = %v, want %v", k.Score, want)
	}
	if want := 1.0/61 + 1.0/62; math.Abs(fused[0].Score-want) > 1e-12 {
		t.Fatalf("score = %v, want %v", fused[0].Score, want)
	}
	// Weights shift the order.
	fused = storekit.FuseRRF(60,
		storekit.Ranking{Channel: memorykit.ChannelFullText, Weight: 1, IDs: []string{"x", "y"}},
		storekit.Ranking{Channel: memorykit.ChannelVector, Weight: 3, IDs: []string{"y", "x"}},
	)
	if fused[0].ID != "y" {
		t.Fatalf("weighted fusion should prefer the vector channel's top: %v", fused)
	}
}

func TestFuseRRFAtBreaksTiesByRecencyThenID(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	from := map[string]time.Time{"a": base, "b": base.Add(time.Microsecond), "c": base.Add(time.Microsecond), "d": base}
	// All four tie on score: rank 1 in one channel each, equal weights.
	fused := storekit.FuseRRFAt(60, func(id string) time.Time { return from[id] },
		storekit.Ranking{Channel: memorykit.ChannelExact, Weight: 1, IDs: []string{"a"}},
		storekit.Ranking{Channel: memorykit.ChannelFullText, Weight: 1, IDs: []string{"d", "x"}},
		storekit.Ranking{Channel: memorykit.ChannelVector, Weight: 1, IDs: []string{"c"}},
		storekit.Ranking{Channel: memorykit.ChannelVector, Weight: 1, IDs: []string{"b"}},
	)
	var got []string
	for _, f := range fused {
		got = append(got, f.ID)
	}
	// b and c are newer than a and d; ID breaks the remaining ties; x is
	// ranked second and comes last.
	if want := []string{"b", "c", "a", "d", "x"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestTokensAndTruncation(t *testing.T) {
	t.Parallel()
	if got := storekit.EstimateTokens(""); got != 0 {
		t.Fatalf("empty = %d", got)
	}
	if got := storekit.EstimateTokens("abcdef"); got != 2 {
		t.Fatalf("ascii = %d", got)
	}
	if got := storekit.EstimateTokens("数据库"); got != 3 {
		t.Fatalf("cjk = %d", got)
	}
	if s, cut := storekit.TruncateRunes("数据库abc", 4); s != "数据库a" || !cut {
		t.Fatalf("TruncateRunes = %q %v", s, cut)
	}
	if s, cut := storekit.TruncateRunes("abc", 4); s != "abc" || cut {
		t.Fatalf("TruncateRunes short = %q %v", s, cut)
	}
	if got := storekit.SanitizeQuery("数据库abc", 4); got != "库abc" {
		t.Fatalf("SanitizeQuery keeps the last runes = %q", got)
	}
	if q := storekit.SanitizeQuery("bad\xff\x00tail数据", 6); q != "tail数据" {
		t.Fatalf("SanitizeQuery = %q", q)
	}
	if q := storekit.SanitizeQuery("a\xff\x00b", 10); q != "a\uFFFD b" {
		t.Fatalf("SanitizeQuery = %q", q)
	}
}

func TestErrorsAreTypedAndContentFree(t *testing.T) {
	t.Parallel()
	cause := errors.New("duplicate key value (content)=(canary-123)")
	err := memorykit.WrapError("pgstore.create", memorykit.ErrUnavailable, "sqlstate_08006", cause)
	if !errors.Is(err, memorykit.ErrUnavailable) || !errors.Is(err, cause) {
		t.Fatal("kind and cause must both be reachable")
	}
	if strings.Contains(err.Error(), "canary") {
		t.Fatalf("Error() prints the cause: %q", err.Error())
	}
	if memorykit.IsRecoverable(err) {
		t.Fatal("not marked recoverable")
	}
	err.Retry = true
	if !memorykit.IsRecoverable(err) {
		t.Fatal("Retry must make it recoverable")
	}
	wrapped := memorykit.Recoverable(errors.New("provider 429"))
	if !memorykit.IsRecoverable(wrapped) || !memorykit.IsRecoverable(errors.Join(errors.New("x"), wrapped)) {
		t.Fatal("Recoverable marker must survive wrapping and joins")
	}
	if memorykit.Recoverable(nil) != nil || memorykit.IsRecoverable(nil) {
		t.Fatal("nil stays nil")
	}
}

type fixedAuthorizer struct{ err error }

func (f fixedAuthorizer) Authorize(context.Context, memorykit.Principal, memorykit.Permission, memorykit.Scope) error {
	return f.err
}

func TestAuthorizeFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	scope, _ := memorykit.ProjectScope("t1", "p1")
	p := memorykit.Principal{TenantID: "t1", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}
	if err := memorykit.Authorize(ctx, fixedAuthorizer{}, p, memorykit.PermRead, scope); err != nil {
		t.Fatalf("allowed request: %v", err)
	}
	cases := map[string]error{
		"nil authorizer": memorykit.Authorize(ctx, nil, p, memorykit.PermRead, scope),
		"denied":         memorykit.Authorize(ctx, fixedAuthorizer{errors.New("no")}, p, memorykit.PermRead, scope),
		"tenant mismatch": memorykit.Authorize(ctx, fixedAuthorizer{}, memorykit.Principal{TenantID: "t2", Actor: p.Actor},
			memorykit.PermRead, scope),
		"bad principal":  memorykit.Authorize(ctx, fixedAuthorizer{}, memorykit.Principal{TenantID: "t1"}, memorykit.PermRead, scope),
		"bad permission": memorykit.Authorize(ctx, fixedAuthorizer{}, p, "admin", scope),
	}
	for name, err := range cases {
		if !errors.Is(err, memorykit.ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
	userScope := memorykit.Scope{TenantID: "t1", SubjectType: memorykit.SubjectUser, SubjectID: "u"}
	if err := memorykit.Authorize(ctx, fixedAuthorizer{}, p, memorykit.PermRead, userScope); !errors.Is(err, memorykit.ErrInvalidScope) {
		t.Fatalf("user scope: %v", err)
	}
}

func TestDeterministicIDs(t *testing.T) {
	t.Parallel()
	s1, _ := memorykit.ProjectScope("t1", "p1")
	s2, _ := memorykit.ProjectScope("t1", "p2")
	if first, again := storekit.ExtractionJobID(s1, "run-1"), storekit.ExtractionJobID(s1, "run-1"); first != again {
		t.Fatal("job id not deterministic")
	}
	if storekit.ExtractionJobID(s1, "run-1") == storekit.ExtractionJobID(s2, "run-1") {
		t.Fatal("job id must depend on scope")
	}
	a, again := storekit.CandidateID(s1, "job", memorykit.KindFact, "k"), storekit.CandidateID(s1, "job", memorykit.KindFact, "k")
	if a != again || a == storekit.CandidateID(s1, "job", memorykit.KindNote, "k") {
		t.Fatal("candidate id must be deterministic and depend on kind")
	}
	for _, id := range []string{a, storekit.ExtractionJobID(s1, "x")} {
		if err := storekit.ValidateID("t", "id", id); err != nil {
			t.Errorf("generated id %q invalid: %v", id, err)
		}
	}
}

func TestRecordRecallable(t *testing.T) {
	t.Parallel()
	s1, _ := memorykit.ProjectScope("t1", "p1")
	s2, _ := memorykit.ProjectScope("t1", "p2")
	now := time.Unix(1000, 0)
	r := memorykit.Record{Scope: s1, Status: memorykit.StatusActive, EffectiveFrom: now.Add(-time.Hour)}
	if !r.Recallable(s1, now) {
		t.Fatal("active effective record must be recallable")
	}
	if r.Recallable(s2, now) {
		t.Fatal("other scope must not be recallable")
	}
	for _, st := range memorykit.Statuses() {
		r2 := r
		r2.Status = st
		if r2.Recallable(s1, now) != (st == memorykit.StatusActive) {
			t.Errorf("status %s recallable = %v", st, r2.Recallable(s1, now))
		}
	}
	future := r
	future.EffectiveFrom = now.Add(time.Second)
	expired := r
	expired.EffectiveUntil = now
	if future.Recallable(s1, now) || expired.Recallable(s1, now) {
		t.Fatal("records outside their effective window must not be recallable")
	}
}

func FuzzSearchTerms(f *testing.F) {
	for _, s := range []string{"hello world", "数据库迁移", "東京の天気", "\xff\x00abc", "ＡＰＩ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms := storekit.SearchTerms(s, 16)
		if len(terms) > 16 {
			t.Fatalf("%d terms", len(terms))
		}
		seen := map[string]bool{}
		for _, term := range terms {
			if term == "" || !utf8.ValidString(term) || seen[term] {
				t.Fatalf("bad term %q in %q", term, terms)
			}
			seen[term] = true
		}
		idx := map[string]bool{}
		for _, term := range storekit.IndexTerms("", s) {
			idx[term] = true
		}
		for _, term := range storekit.SearchTerms(s, 1<<20) {
			if !idx[term] {
				t.Fatalf("query term %q of a text is not in that text's index terms", term)
			}
		}
	})
}

func TestReasonCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{memorykit.FieldError("op", "content", "too_long"), "too_long"},
		{&memorykit.Error{Kind: memorykit.ErrNotFound, Reason: "Not A Code"}, "not_found"},
		{memorykit.NewError("op", memorykit.ErrForbidden, ""), "forbidden"},
		{context.DeadlineExceeded, "deadline"},
		{errors.New("secret text"), "error"},
	}
	for _, tc := range tests {
		if got := memorykit.ReasonCode(tc.err); got != tc.want {
			t.Errorf("ReasonCode(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	b := memorykit.Backoff{Initial: time.Second, Max: 10 * time.Second, Multiplier: 2}
	if err := storekit.PrefixField("t", "retry", b.Validate()); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for n, w := range want {
		if got := b.Delay(n); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
	}
	if got := b.Delay(1 << 30); got != 10*time.Second {
		t.Errorf("Delay(huge) = %v", got)
	}
	for _, bad := range []memorykit.Backoff{
		{},
		{Initial: time.Second, Max: time.Millisecond, Multiplier: 2},
		{Initial: time.Second, Max: time.Second, Multiplier: 0.5},
		{Initial: time.Second, Max: time.Second, Multiplier: math.Inf(1)},
		{Initial: -time.Second, Max: time.Second, Multiplier: 1},
	} {
		if err := storekit.PrefixField("t", "retry", bad.Validate()); !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v", bad, err)
		}
	}
}

func TestConfigError(t *testing.T) {
	err := memorykit.ConfigError("comp.new", "clock", "missing")
	if !errors.Is(err, memorykit.ErrInvalidConfig) || err.Op != "comp.new" || err.Field != "clock" || err.Reason != "missing" || err.Err != nil {
		t.Fatalf("ConfigError = %+v", err)
	}
}

func TestPrefixField(t *testing.T) {
	t.Parallel()
	if storekit.PrefixField("op", "p", nil) != nil {
		t.Fatal("nil must stay nil")
	}
	plain := errors.New("plain")
	if storekit.PrefixField("op", "p", plain) != plain {
		t.Fatal("an error that is not an *Error must be returned unchanged")
	}
	bad := memorykit.Backoff{Initial: time.Second, Max: time.Millisecond, Multiplier: 2}.Validate()
	var e *memorykit.Error
	if !errors.As(storekit.PrefixField("runtime.new", "outbox.retry", bad), &e) ||
		e.Op != "runtime.new" || e.Field != "outbox.retry.max" || e.Reason != "below_initial" || !errors.Is(e, memorykit.ErrInvalidConfig) {
		t.Fatalf("PrefixField = %#v", e)
	}
	if !errors.As(storekit.PrefixField("", "items[2]", memorykit.NewError("s.create", memorykit.ErrAlreadyExists, "x")), &e) ||
		e.Op != "s.create" || e.Field != "items[2]" {
		t.Fatalf("PrefixField without op or field = %#v", e)
	}
	if e, ok := bad.(*memorykit.Error); !ok || e.Field != "max" {
		t.Fatalf("PrefixField must not change its argument: %v", bad)
	}
}
