package embedder

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

func embedOne(t *testing.T, text string) []float32 {
	t.Helper()
	vs, err := NewLocal().Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vs) != 1 || len(vs[0]) != LocalDimension {
		t.Fatalf("Embed returned %d vectors", len(vs))
	}
	return vs[0]
}

func TestLocalProfileAndDimension(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	var _ memorykit.Embedder = l
	if l.Profile() != "memorykit/hash-v1" || l.Dimension() != 384 {
		t.Fatalf("profile %q dimension %d", l.Profile(), l.Dimension())
	}
	if err := storekit.ValidateProfile("test", l.Profile()); err != nil {
		t.Fatalf("profile is not a valid profile name: %v", err)
	}
}

// TestLocalGolden pins exact vectors. If it fails, the embedding changed and
// every stored hash-v1 vector is stale: that needs a new profile name, not a
// new golden value.
func TestLocalGolden(t *testing.T) {
	t.Parallel()
	type nz struct {
		index int
		bits  uint32
	}
	cases := []struct {
		text     string
		first    []nz // the first 8 non-zero components
		checksum string
	}{
		{
			text:     "The cat sat on the mat.",
			first:    []nz{{5, 0xbdeaebf5}, {11, 0xbdeaebf5}, {21, 0x3deaebf5}, {54, 0xbeb030f8}, {61, 0xbe6aebf5}, {78, 0xbdeaebf5}, {95, 0x3deaebf5}, {119, 0xbdeaebf5}},
			checksum: "b5e16513574053e28b214be4771ed56101e8926db5a62672c091bb7d261a3907",
		},
		{
			text:     "我喜欢在周末去公园散步",
			first:    []nz{{31, 0xbe8ca83f}, {48, 0x3e8ca83f}, {51, 0xbe0ca83f}, {69, 0xbe8ca83f}, {72, 0xbe0ca83f}, {87, 0x3e8ca83f}, {119, 0xbe8ca83f}, {131, 0xbe0ca83f}},
			checksum: "8eeb9839aab9aed6c719cccb901b2bdbe68e61ac26f91548296029a2c405b2fb",
		},
		{
			text:     "Ｆｕｌｌwidth ＣＡＦÉ café 東京タワー 서울",
			first:    []nz{{8, 0xbe89c36d}, {25, 0xbd89c36d}, {46, 0x3d89c36d}, {52, 0xbe09c36d}, {69, 0x3e89c36d}, {71, 0x3e89c36d}, {79, 0xbe09c36d}, {113, 0x3d89c36d}},
			checksum: "8a68fe045bb0a768b29dc02ba962dcff55a9da8bdc2a23a6db128078c27a2760",
		},
	}
	for _, c := range cases {
		v := embedOne(t, c.text)
		var got []nz
		for i, x := range v {
			if x != 0 && len(got) < 8 {
				got = append(got, nz{i, math.Float32bits(x)})
			}
		}
		if len(got) != len(c.first) {
			t.Fatalf("case %q: %d non-zero components, want at least %d", c.text, len(got), len(c.first))
		}
		for i := range got {
			if got[i] != c.first[i] {
				t.Errorf("case %q: non-zero component %d = {%d, %#08x}, want {%d, %#08x}",
					c.text, i, got[i].index, got[i].bits, c.first[i].index, c.first[i].bits)
			}
		}
		if sum := vectorChecksum(v); sum != c.checksum {
			t.Errorf("case %q: checksum %s, want %s", c.text, sum, c.checksum)
		}
	}
}

// referenceEmbed is a slow, literal second implementation of the documented
// algorithm (strings, hash/fnv, per-feature lists). Local must agree with it
// bit for bit.
func referenceEmbed(text string) []float32 {
	s := strings.ToLower(norm.NFKC.String(strings.ToValidUTF8(text, "\uFFFD")))
	isCJK := func(r rune) bool { return storekit.IsCJK(r) || unicode.Is(unicode.Hangul, r) }
	isWord := func(r rune) bool {
		return !isCJK(r) && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))
	}
	type feature struct {
		key    string
		weight int64
	}
	var feats []feature
	stop := func(w string) bool {
		for _, x := range strings.Fields(`a about after all also am an and any are as at be been before but by
		can could did do does doing for from had has have having he her here
		hers him his how i if in into is it its just me more most my no nor
		not now of off on once only or other our ours out over own same she
		should so some such than that the their theirs them then there these
		they this those through to too under until up very was we were what
		when where which while who whom why will with would you your yours`) {
			if x == w {
				return true
			}
		}
		return false
	}
	runes := []rune(s)
	prevWord := ""
	for i := 0; i < len(runes); {
		r := runes[i]
		switch {
		case isCJK(r):
			j := i
			for j < len(runes) && isCJK(runes[j]) {
				j++
			}
			run := runes[i:j]
			for k := range run {
				feats = append(feats, feature{"u" + string(run[k]), 2})
				if k > 0 {
					feats = append(feats, feature{"c" + string(run[k-1:k+1]), 4})
				}
			}
			prevWord = ""
			i = j
		case isWord(r):
			j := i
			for j < len(runes) && isWord(runes[j]) {
				j++
			}
			w := string(runes[i:j])
			if stop(w) {
				feats = append(feats, feature{"w" + w, 1})
			} else {
				feats = append(feats, feature{"w" + w, 4})
			}
			if prevWord != "" {
				if stop(w) || stop(prevWord) {
					feats = append(feats, feature{"b" + prevWord + " " + w, 1})
				} else {
					feats = append(feats, feature{"b" + prevWord + " " + w, 2})
				}
			}
			if !stop(w) {
				wrapped := []rune("^" + w + "$")
				for k := 0; k+3 <= len(wrapped); k++ {
					feats = append(feats, feature{"t" + string(wrapped[k:k+3]), 1})
				}
			}
			prevWord = w
			i = j
		default:
			i++
		}
	}
	out := make([]float32, 384)
	if len(feats) == 0 {
		out[0] = 1
		return out
	}
	acc := make([]int64, 384)
	for _, f := range feats {
		h := fnv.New64a()
		h.Write([]byte(f.key))
		x := h.Sum64()
		if x>>63 == 1 {
			acc[x%384] -= f.weight
		} else {
			acc[x%384] += f.weight
		}
	}
	var sumsq int64
	for _, v := range acc {
		sumsq += v * v
	}
	n := math.Sqrt(float64(sumsq))
	for i, v := range acc {
		out[i] = float32(float64(v) / n)
	}
	return out
}

var sampleTexts = []string{
	"",
	"   ",
	"?!…",
	"a",
	"The cat sat on the mat.",
	"Deploy the payment-service to staging every Friday at 17:00 UTC.",
	"Ｆｕｌｌwidth ＣＡＦÉ café 東京タワー 서울",
	"我喜欢在周末去公园散步",
	"项目使用 PostgreSQL 数据库 and Go 1.26",
	"cat 东 dog",
	"naïve coöperation résumé",
	"İstanbul ΣΊΣΥΦΟΣ straße",
	"invalid \xff\xfe utf8 \x00 bytes",
	"emoji 🙂 and symbols ∑ ≠ ∞ mixed with words",
	"カタカナとひらがなの混ざった日本語の文章です",
	"한국어 문장도 잘 처리됩니다",
	strings.Repeat("long text with many repeated words ", 200),
}

func TestLocalMatchesReference(t *testing.T) {
	t.Parallel()
	vs, err := NewLocal().Embed(context.Background(), sampleTexts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range sampleTexts {
		want := referenceEmbed(text)
		for j := range want {
			if math.Float32bits(vs[i][j]) != math.Float32bits(want[j]) {
				t.Errorf("text %d: component %d = %v, reference %v", i, j, vs[i][j], want[j])
				break
			}
		}
	}
}

func TestLocalUnitNormAndFinite(t *testing.T) {
	t.Parallel()
	vs, err := NewLocal().Embed(context.Background(), sampleTexts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var sq float64
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("text %d: non-finite component", i)
			}
			sq += float64(x) * float64(x)
		}
		if math.Abs(math.Sqrt(sq)-1) > 1e-5 {
			t.Errorf("text %d: norm %v, want 1", i, math.Sqrt(sq))
		}
	}
}

func TestLocalFeaturelessTextIsFirstUnitVector(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", " \t\n", "!!! ... ???", "\x00\x01"} {
		v := embedOne(t, text)
		if v[0] != 1 {
			t.Errorf("%q: first component %v, want 1", text, v[0])
		}
		for i, x := range v[1:] {
			if x != 0 {
				t.Errorf("%q: component %d = %v, want 0", text, i+1, x)
				break
			}
		}
	}
}

func TestLocalNormalisesCaseAndWidth(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{
		{"ＣＡＦＥ Ｔｏｋｙｏ", "cafe tokyo"},
		{"Hello World", "hello world"},
		{"ｶﾀｶﾅ", "カタカナ"},
		{"ﬁle", "file"},
	}
	for _, p := range pairs {
		a, b := embedOne(t, p[0]), embedOne(t, p[1])
		if vectorChecksum(a) != vectorChecksum(b) {
			t.Errorf("%q and %q embed differently", p[0], p[1])
		}
	}
	if vectorChecksum(embedOne(t, "cat")) == vectorChecksum(embedOne(t, "dog")) {
		t.Fatal("different words gave the same vector")
	}
}

func TestLocalBatchEqualsSingleAndConcurrent(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	batch, err := l.Embed(context.Background(), sampleTexts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(sampleTexts))
	for i, text := range sampleTexts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := l.Embed(context.Background(), []string{text})
			if err != nil {
				errs <- err.Error()
				return
			}
			if vectorChecksum(v[0]) != vectorChecksum(batch[i]) {
				errs <- "mismatch"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("single vs batch: %s", e)
	}
}

func TestLocalEmptyBatch(t *testing.T) {
	t.Parallel()
	vs, err := NewLocal().Embed(context.Background(), nil)
	if err != nil || len(vs) != 0 {
		t.Fatalf("Embed(nil) = %d vectors, %v", len(vs), err)
	}
}

func TestLocalSemanticSanity(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, query, related, unrelated string
	}{
		{
			name:      "english paraphrase",
			query:     "The deployment pipeline runs database migrations before release",
			related:   "Database migrations run in the release pipeline before deployment",
			unrelated: "My grandmother bakes apple pie every Sunday afternoon",
		},
		{
			name:      "english morphology",
			query:     "configure the embedding worker",
			related:   "configuration of embeddings workers",
			unrelated: "a quiet walk along the river",
		},
		{
			name:      "chinese shared characters",
			query:     "我们的项目使用 PostgreSQL 数据库存储记忆",
			related:   "项目的记忆存储在数据库里",
			unrelated: "今天天气很好适合去公园散步",
		},
		{
			name:      "japanese",
			query:     "東京の会議は来週の月曜日です",
			related:   "来週の月曜日に東京で会議があります",
			unrelated: "猫が庭で寝ている",
		},
		{
			name:      "korean",
			query:     "데이터베이스 마이그레이션을 실행합니다",
			related:   "마이그레이션은 데이터베이스에서 실행됩니다",
			unrelated: "오늘 점심은 김치찌개",
		},
	}
	for _, c := range cases {
		q, r, u := embedOne(t, c.query), embedOne(t, c.related), embedOne(t, c.unrelated)
		cr, cu := cosine(q, r), cosine(q, u)
		if !(cr > cu+0.1) {
			t.Errorf("%s: related cosine %.3f, unrelated %.3f; want related clearly higher", c.name, cr, cu)
		}
		t.Logf("%s: related %.3f unrelated %.3f", c.name, cr, cu)
	}
}

func TestLocalStopwordsWeighLittle(t *testing.T) {
	t.Parallel()
	q := embedOne(t, "the cat is on the mat")
	onlyStop := embedOne(t, "the weather is on the news")
	content := embedOne(t, "a cat")
	if cs, cc := cosine(q, onlyStop), cosine(q, content); !(cc > cs) {
		t.Fatalf("sharing only stopwords scored %.3f, sharing one content word %.3f", cs, cc)
	}
}

func TestLocalWordAdjacency(t *testing.T) {
	t.Parallel()
	same := func(a, b string) bool { return vectorChecksum(embedOne(t, a)) == vectorChecksum(embedOne(t, b)) }
	// Punctuation keeps two words adjacent.
	if !same("cat dog", "cat. dog") {
		t.Error("punctuation between words changed the features")
	}
	// Word order matters only through adjacent pairs.
	if same("cat dog 东", "dog cat 东") {
		t.Error("swapping adjacent words did not change the vector")
	}
	// A CJK character breaks adjacency, so no pair is formed either way and
	// the two texts have identical features.
	if !same("cat 东 dog", "dog 东 cat") {
		t.Error("a CJK character between words did not break adjacency")
	}
}

func TestLocalBounds(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	big := strings.Repeat("x", MaxLocalTextBytes+1)
	cases := []struct {
		name   string
		texts  []string
		reason string
	}{
		{"too many", make([]string, MaxLocalTexts+1), "too_many"},
		{"too long", []string{"ok", big}, "text_too_long"},
		{"batch too large", func() []string {
			one := strings.Repeat("y", MaxLocalTextBytes)
			out := make([]string, MaxLocalBatchBytes/MaxLocalTextBytes+1)
			for i := range out {
				out[i] = one
			}
			return out
		}(), "batch_too_large"},
	}
	for _, c := range cases {
		vs, err := l.Embed(context.Background(), c.texts)
		if vs != nil || !errors.Is(err, memorykit.ErrInvalidInput) || memorykit.IsRecoverable(err) {
			t.Errorf("%s: got %d vectors, err %v; want non-recoverable ErrInvalidInput", c.name, len(vs), err)
			continue
		}
		var me *memorykit.Error
		if !errors.As(err, &me) || me.Reason != c.reason {
			t.Errorf("%s: err %v, want reason %s", c.name, err, c.reason)
		}
	}
	// Exactly at the bounds is fine.
	if _, err := l.Embed(context.Background(), []string{strings.Repeat("z ", MaxLocalTextBytes/2)}); err != nil {
		t.Fatalf("text at the size bound: %v", err)
	}
	if _, err := l.Embed(context.Background(), make([]string, MaxLocalTexts)); err != nil {
		t.Fatalf("batch at the count bound: %v", err)
	}
}

func TestLocalHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	vs, err := NewLocal().Embed(ctx, []string{"hello"})
	if vs != nil || !errors.Is(err, memorykit.ErrUnavailable) || !errors.Is(err, context.Canceled) || !memorykit.IsRecoverable(err) {
		t.Fatalf("got %d vectors, err %v; want recoverable ErrUnavailable wrapping context.Canceled", len(vs), err)
	}
}
