package embedworker_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
)

func TestBackoff(t *testing.T) {
	b := memorykit.Backoff{Initial: time.Second, Max: 20 * time.Second, Multiplier: 3}
	for i, want := range []time.Duration{time.Second, 3 * time.Second, 9 * time.Second, 20 * time.Second, 20 * time.Second} {
		if got := b.Delay(i + 1); got != want {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, want)
		}
	}
	for field, bad := range map[string]memorykit.Backoff{
		"retry.initial":    {Max: time.Second, Multiplier: 2},
		"retry.max":        {Initial: time.Second, Max: time.Millisecond, Multiplier: 2},
		"retry.multiplier": {Initial: time.Second, Max: time.Second, Multiplier: math.NaN()},
	} {
		if me := testkit.WantKind(t, storekit.PrefixField("op", "retry", bad.Validate()), memorykit.ErrInvalidConfig); me.Field != field {
			t.Errorf("field %q, want %q", me.Field, field)
		}
	}
}

// badProfile is an Embedder whose profile or dimension is unusable.
type badProfile struct {
	profile string
	dim     int
}

func (b badProfile) Profile() string { return b.profile }
func (b badProfile) Dimension() int  { return b.dim }
func (badProfile) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("unused")
}

func TestConfigFailsClosed(t *testing.T) {
	e := newEnv(t)
	e.store = testkit.MemStore(t, e.Clock)
	good := e.config("embed-1", newEmbedder(e.Clock))
	w, err := embedworker.New(good)
	if err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if w.Name() != "embed:embed-1" || w.Profile() != "memorykit/hash-v1" {
		t.Fatalf("Name %q Profile %q", w.Name(), w.Profile())
	}
	cases := []struct {
		field  string
		mutate func(c *embedworker.Config)
	}{
		{"store", func(c *embedworker.Config) { c.Store = nil }},
		{"embedder", func(c *embedworker.Config) { c.Embedder = nil }},
		{"clock", func(c *embedworker.Config) { c.Clock = nil }},
		{"logger", func(c *embedworker.Config) { c.Logger = nil }},
		{"events", func(c *embedworker.Config) { c.Events = nil }},
		{"embedder.profile", func(c *embedworker.Config) { c.Embedder = badProfile{profile: "", dim: 3} }},
		{"embedder.profile", func(c *embedworker.Config) { c.Embedder = badProfile{profile: "has space", dim: 3} }},
		{"embedder.dimension", func(c *embedworker.Config) { c.Embedder = badProfile{profile: "p1", dim: 0} }},
		{"worker_id", func(c *embedworker.Config) { c.WorkerID = "" }},
		{"worker_id", func(c *embedworker.Config) { c.WorkerID = "a/b" }},
		{"worker_id", func(c *embedworker.Config) { c.WorkerID = strings.Repeat("w", storekit.MaxIDBytes-len("embed:")+1) }},
		{"lease_ttl", func(c *embedworker.Config) { c.LeaseTTL = 0 }},
		{"lease_ttl", func(c *embedworker.Config) { c.LeaseTTL = c.EmbedDeadline }},
		{"embed_deadline", func(c *embedworker.Config) { c.EmbedDeadline = 0 }},
		{"batch_size", func(c *embedworker.Config) { c.BatchSize = 0 }},
		{"poll_interval", func(c *embedworker.Config) { c.PollInterval = -time.Second }},
		{"hand_back_timeout", func(c *embedworker.Config) { c.HandBackTimeout = 0 }},
		{"retry.multiplier", func(c *embedworker.Config) { c.Retry.Multiplier = 0.9 }},
		{"store_backoff.initial", func(c *embedworker.Config) { c.StoreBackoff = memorykit.Backoff{} }},
	}
	for _, c := range cases {
		cfg := good
		c.mutate(&cfg)
		w, err := embedworker.New(cfg)
		if w != nil {
			t.Errorf("%s: got a worker", c.field)
		}
		if me := testkit.WantKind(t, err, memorykit.ErrInvalidConfig); me.Field != c.field {
			t.Errorf("field %q, want %q (%v)", me.Field, c.field, err)
		}
	}
}

// TestNoContentInLogsOrEvents: a canary in record keys and content, in
// Embedder errors and in a panic never reaches a log entry or an event.
func TestNoContentInLogsOrEvents(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const canary = "CANARY-9b2c-embed"
		for i := 0; i < 4; i++ {
			e.create("secret "+canary+" "+string(rune('a'+i)), "the "+canary+" value is hunter2")
		}
		emb := newEmbedder(e.Clock)
		step := 0
		emb.script(func(ctx context.Context, texts []string) ([][]float32, error) {
			step++
			switch step {
			case 1:
				return nil, memorykit.Recoverable(errors.New("provider echoed: " + strings.Join(texts, "|")))
			case 2:
				return nil, &memorykit.Error{Op: "embed", Kind: memorykit.ErrInvalidInput, Reason: "bad " + canary, Err: errors.New(texts[0])}
			}
			return emb.inner.Embed(ctx, texts)
		})
		cfg := e.config("embed-1", emb)
		cfg.BatchSize = 2
		w := e.worker(cfg)
		for i := 0; i < 3; i++ {
			runOnce(t, w)
		}
		e.Clock.Add(time.Hour)
		for runOnce(t, w).Leased > 0 {
		}
		if e.pending() != 2 {
			t.Fatalf("pending = %d, want the two parked records", e.pending())
		}
		if len(e.Sink.OfKind(memorykit.EventEmbeddingRetry)) != 1 || len(e.Sink.OfKind(memorykit.EventEmbeddingFailed)) != 1 {
			t.Fatalf("events = %+v", e.Sink.Events())
		}
		for _, ev := range e.Sink.Events() {
			if ev.Reason != "" && storekit.CheckReasonCode("", ev.Reason) != nil {
				t.Errorf("event reason %q is not a reason code", ev.Reason)
			}
		}
		e.NoContent(canary)
		e.NoContent("hunter2")
	})
}
