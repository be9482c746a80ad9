package embedder

import (
	"context"
	"math"
	"testing"
)

func embedV2One(t *testing.T, text string) []float32 {
	t.Helper()
	vs, err := NewLocalV2().Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vs) != 1 || len(vs[0]) != LocalV2Dimension {
		t.Fatalf("Embed returned %d vectors", len(vs))
	}
	return vs[0]
}

// TestLocalV2Golden pins hash-v2 vectors bit for bit (checksums of the
// float32 bits). If it fails, every stored hash-v2 vector is stale: that
// needs a new profile name, not a new golden value. TestLocalGolden pins
// hash-v1 the same way, unchanged by hash-v2.
func TestLocalV2Golden(t *testing.T) {
	t.Parallel()
	cases := []struct{ text, checksum string }{
		{"The cat sat on the mat.", "e31a932691b2301eb890fb114c946405cba6d23b6c02343ad88c430fa2a58a75"},
		{"We decided to move the meetings to Berlin next week", "56ab7df4626391ba3c0aeccbc6233a3fa943af35e7ec348682a2710d80e21bf7"},
		{"我喜欢在周末去公园散步", "9ada750c5206cd93f98734edec782006b06304da55e9ac48dafede3676ee85b1"},
		{"先週の会議で新しいサーバーを決めました", "a867c8176721a6afd75a2bcb74bf69b39e41c1fd244639a5a7424a361cdb6bcc"},
		{"what is it", "1dc9e74473c7a480b65668725ec94848a864fda4006fdfdc6317cbe1dc5139ad"},
		{"", "373421642a44f7412f4316b06f4e62f24ef7b30c879338577170cfadcf591baa"},
		{"Will we get the new bikes? The bikes, the BIKES!", "db468c10ec6a881b0f08b709f4b0f9003dbe5579352a537a7fc6ed1fa89a3c32"},
	}
	for _, c := range cases {
		if got := vectorChecksum(embedV2One(t, c.text)); got != c.checksum {
			t.Errorf("hash-v2 %q checksum %s, want %s", c.text, got, c.checksum)
		}
	}
}

func TestLocalV2ProfileIsNotV1(t *testing.T) {
	t.Parallel()
	e := NewLocalV2()
	if e.Profile() != "memorykit/hash-v2" || e.Dimension() != 384 || e.Profile() == NewLocal().Profile() {
		t.Fatalf("profile %q dimension %d", e.Profile(), e.Dimension())
	}
	for _, text := range sampleTexts {
		v := embedV2One(t, text)
		sum := 0.0
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%q: non-finite component", text)
			}
			sum += float64(x) * float64(x)
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Fatalf("%q: norm² %v", text, sum)
		}
	}
}

func TestLocalV2ContentTermsOnly(t *testing.T) {
	t.Parallel()
	same := func(a, b string) bool { return vectorChecksum(embedV2One(t, a)) == vectorChecksum(embedV2One(t, b)) }
	// Function words add nothing, and do not break word pairs.
	if !same("the cat and the dog", "cat dog") {
		t.Error("function words changed the vector")
	}
	if !same("我的猫", "猫") || !same("東京の天気", "東京 天気") {
		t.Error("function characters changed the vector")
	}
	// A text of function words only still has features, and they differ.
	if same("what is it", "") || same("what is it", "who are they") {
		t.Error("a function-word-only text fell back to the featureless vector")
	}
}

func TestLocalV2StemsAndWeighsSublinearly(t *testing.T) {
	t.Parallel()
	// Stemming: inflections share their word feature.
	q := embedV2One(t, "meetings moved")
	if c, u := cosine(q, embedV2One(t, "the meeting was moving")), cosine(q, embedV2One(t, "the greeting was loving")); !(c > u+0.2) {
		t.Errorf("stemmed match %.3f, unrelated %.3f", c, u)
	}
	// Sublinear weighting: repeating a word many times does not make a
	// text all about it.
	rep := embedV2One(t, "lunch lunch lunch lunch lunch lunch lunch lunch berlin")
	if c := cosine(rep, embedV2One(t, "berlin")); c < 0.2 {
		t.Errorf("one other word among eight repeats kept cosine %.3f", c)
	}
}

func TestLocalV2SemanticSanity(t *testing.T) {
	t.Parallel()
	cases := []struct{ query, related, unrelated string }{
		{"The deployment pipeline runs database migrations before release", "Database migrations run in the release pipeline before deployment", "My grandmother bakes apple pie every Sunday afternoon"},
		{"configure the embedding worker", "configuration of embeddings workers", "a quiet walk along the river"},
		{"我们的项目使用 PostgreSQL 数据库存储记忆", "项目的记忆存储在数据库里", "今天天气很好适合去公园散步"},
		{"東京の会議は来週の月曜日です", "来週の月曜日に東京で会議があります", "猫が庭で寝ている"},
	}
	for _, c := range cases {
		q := embedV2One(t, c.query)
		if cr, cu := cosine(q, embedV2One(t, c.related)), cosine(q, embedV2One(t, c.unrelated)); !(cr > cu+0.1) {
			t.Errorf("%q: related %.3f unrelated %.3f", c.query, cr, cu)
		}
	}
}

func TestNewLocalProfile(t *testing.T) {
	t.Parallel()
	for _, p := range []string{LocalProfile, LocalV2Profile} {
		e, err := NewLocalProfile(p)
		if err != nil || e.Profile() != p {
			t.Fatalf("NewLocalProfile(%q) = %v, %v", p, e, err)
		}
	}
	if _, err := NewLocalProfile("memorykit/hash-v3"); err == nil {
		t.Fatal("an unknown profile was accepted")
	}
}
