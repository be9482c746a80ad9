package memorykit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

func TestTombstoneKeyerNeedsASecret(t *testing.T) {
	for name, secret := range map[string][]byte{"missing": nil, "short": []byte("thirty-one bytes is not enough!")} {
		if k, err := memorykit.NewTombstoneKeyer(secret); k != nil || !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("%s secret: %v, %v; want ErrInvalidConfig", name, k, err)
		}
	}
	secret := []byte("a secret of thirty-two bytes ok!")
	k, err := memorykit.NewTombstoneKeyer(secret)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := memorykit.ProjectScope("acme", "apollo")
	b, _ := memorykit.ProjectScope("acme", "hermes")
	d := k.Digest(a, "jane doe")
	secret[0] = 'X' // the keyer keeps its own copy
	if !storekit.IsKeyDigest(d) || d != k.Digest(a, "jane doe") {
		t.Fatalf("digest %q is not stable", d)
	}
	if d == k.Digest(b, "jane doe") || d == k.Digest(a, "john roe") {
		t.Fatal("digests of another Scope or key collide")
	}
	other, _ := memorykit.NewTombstoneKeyer([]byte("another secret of thirty-two b!!"))
	if other.Digest(a, "jane doe") == d {
		t.Fatal("the digest does not depend on the secret")
	}
}

func TestPurgeReportDigestCoversEveryField(t *testing.T) {
	scope, _ := memorykit.ProjectScope("acme", "apollo")
	at := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	base := memorykit.PurgeReport{Scope: scope, Actor: memorykit.Actor{Kind: memorykit.ActorOperator, ID: "ops"},
		Reason: "project_closed", Records: 2, RecordIDs: []string{"a", "b"}, Revisions: 5, Embeddings: 1,
		Jobs: 1, QueueEntries: 1, StartedAt: at, FinishedAt: at}
	d := storekit.PurgeReportDigest(base)
	for name, mutate := range map[string]func(*memorykit.PurgeReport){
		"records":  func(r *memorykit.PurgeReport) { r.Records++ },
		"ids":      func(r *memorykit.PurgeReport) { r.RecordIDs = []string{"a", "c"} },
		"jobs":     func(r *memorykit.PurgeReport) { r.Jobs++ },
		"finished": func(r *memorykit.PurgeReport) { r.FinishedAt = at.Add(time.Second) },
		"actor":    func(r *memorykit.PurgeReport) { r.Actor.ID = "other" },
	} {
		r := base
		mutate(&r)
		if storekit.PurgeReportDigest(r) == d {
			t.Errorf("changing %s leaves the digest", name)
		}
	}
}
