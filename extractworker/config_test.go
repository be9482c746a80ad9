package extractworker_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

func TestBackoffDelay(t *testing.T) {
	b := memorykit.Backoff{Initial: 2 * time.Second, Max: 30 * time.Second, Multiplier: 2.5}
	want := []time.Duration{2 * time.Second, 5 * time.Second, 12500 * time.Millisecond, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := b.Delay(i + 1); got != w {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := b.Delay(0); got != 2*time.Second {
		t.Errorf("Delay(0) = %v, want Initial", got)
	}
	if got := b.Delay(1 << 30); got != 30*time.Second {
		t.Errorf("Delay(huge) = %v, want Max", got)
	}
	flat := memorykit.Backoff{Initial: time.Second, Max: time.Second, Multiplier: 1}
	if got := flat.Delay(7); got != time.Second {
		t.Errorf("constant Delay(7) = %v", got)
	}
}

func TestBackoffValidate(t *testing.T) {
	good := memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}
	if err := storekit.PrefixField("op", "retry", good.Validate()); err != nil {
		t.Fatalf("valid policy: %v", err)
	}
	cases := map[string]func(b *memorykit.Backoff){
		"retry.initial":    func(b *memorykit.Backoff) { b.Initial = 0 },
		"retry.max":        func(b *memorykit.Backoff) { b.Max = time.Millisecond },
		"retry.multiplier": func(b *memorykit.Backoff) { b.Multiplier = 0.5 },
	}
	for field, mutate := range cases {
		b := good
		mutate(&b)
		me := testkit.WantKind(t, storekit.PrefixField("op", "retry", b.Validate()), memorykit.ErrInvalidConfig)
		if me.Field != field {
			t.Errorf("field %q, want %q", me.Field, field)
		}
	}
	for _, m := range []float64{math.NaN(), math.Inf(1)} {
		b := good
		b.Multiplier = m
		testkit.WantKind(t, storekit.PrefixField("op", "retry", b.Validate()), memorykit.ErrInvalidConfig)
	}
	if err := storekit.PrefixField("op", "retry", (memorykit.Backoff{}).Validate()); err == nil {
		t.Fatal("zero policy accepted")
	}
}

func TestWorkerConfigFailsClosed(t *testing.T) {
	e := newEnv(t)
	e.store = testkit.MemStore(t, e.Clock)
	good := e.config("worker-a", newExtractor(e.Clock))
	w, err := extractworker.New(good)
	if err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if w.Name() != "extract:worker-a" {
		t.Fatalf("Name = %q", w.Name())
	}
	cases := []struct {
		field  string
		mutate func(c *extractworker.Config)
	}{
		{"store", func(c *extractworker.Config) { c.Store = nil }},
		{"extractor", func(c *extractworker.Config) { c.Extractor = nil }},
		{"guard", func(c *extractworker.Config) { c.Guard = nil }},
		{"clock", func(c *extractworker.Config) { c.Clock = nil }},
		{"logger", func(c *extractworker.Config) { c.Logger = nil }},
		{"events", func(c *extractworker.Config) { c.Events = nil }},
		{"worker_id", func(c *extractworker.Config) { c.WorkerID = "" }},
		{"worker_id", func(c *extractworker.Config) { c.WorkerID = "has space" }},
		{"worker_id", func(c *extractworker.Config) { c.WorkerID = strings.Repeat("w", storekit.MaxIDBytes+1) }},
		{"lease_ttl", func(c *extractworker.Config) { c.LeaseTTL = 0 }},
		{"lease_ttl", func(c *extractworker.Config) { c.LeaseTTL = c.JobDeadline }},
		{"job_deadline", func(c *extractworker.Config) { c.JobDeadline = 0 }},
		{"batch_size", func(c *extractworker.Config) { c.BatchSize = 0 }},
		{"batch_size", func(c *extractworker.Config) { c.BatchSize = storetest.Limits().MaxListSize + 1 }},
		{"poll_interval", func(c *extractworker.Config) { c.PollInterval = 0 }},
		{"hand_back_timeout", func(c *extractworker.Config) { c.HandBackTimeout = 0 }},
		{"retry.initial", func(c *extractworker.Config) { c.Retry = memorykit.Backoff{} }},
		{"store_backoff.initial", func(c *extractworker.Config) { c.StoreBackoff = memorykit.Backoff{} }},
	}
	for _, c := range cases {
		cfg := good
		c.mutate(&cfg)
		w, err := extractworker.New(cfg)
		if w != nil {
			t.Errorf("%s: got a worker", c.field)
		}
		if me := testkit.WantKind(t, err, memorykit.ErrInvalidConfig); me.Field != c.field {
			t.Errorf("field %q, want %q", me.Field, c.field)
		}
	}
	// A valid identifier that makes the actor name too long.
	long := good
	long.WorkerID = strings.Repeat("w", storekit.MaxIDBytes-len("extract:")+1)
	_, err = extractworker.New(long)
	if me := testkit.WantKind(t, err, memorykit.ErrInvalidConfig); me.Field != "worker_id" || me.Reason != "too_long" {
		t.Fatalf("long worker id: %v", err)
	}
}

func TestReaperAndEnqueuerConfigFailClosed(t *testing.T) {
	e := newEnv(t)
	store := testkit.MemStore(t, e.Clock)
	rgood := extractworker.ReaperConfig{Store: store, Clock: e.Clock, Logger: zap.NewNop(), Events: e.Sink, Interval: time.Second, StoreBackoff: storeBackoff}
	r, err := extractworker.NewReaper(rgood)
	if err != nil || r.Name() != extractworker.ReaperName {
		t.Fatalf("valid reaper: %v", err)
	}
	for field, mutate := range map[string]func(c *extractworker.ReaperConfig){
		"store":                 func(c *extractworker.ReaperConfig) { c.Store = nil },
		"clock":                 func(c *extractworker.ReaperConfig) { c.Clock = nil },
		"logger":                func(c *extractworker.ReaperConfig) { c.Logger = nil },
		"events":                func(c *extractworker.ReaperConfig) { c.Events = nil },
		"interval":              func(c *extractworker.ReaperConfig) { c.Interval = 0 },
		"store_backoff.initial": func(c *extractworker.ReaperConfig) { c.StoreBackoff.Initial = 0 },
	} {
		cfg := rgood
		mutate(&cfg)
		_, err := extractworker.NewReaper(cfg)
		if me := testkit.WantKind(t, err, memorykit.ErrInvalidConfig); me.Field != field {
			t.Errorf("field %q, want %q", me.Field, field)
		}
	}

	qgood := extractworker.EnqueuerConfig{Store: store, Authorizer: testkit.NewAuthorizer(), Clock: e.Clock, Logger: zap.NewNop(), Events: e.Sink, MaxAttempts: 3, MaxReaps: 3}
	if _, err := extractworker.NewEnqueuer(qgood); err != nil {
		t.Fatalf("valid enqueuer: %v", err)
	}
	for field, mutate := range map[string]func(c *extractworker.EnqueuerConfig){
		"store":        func(c *extractworker.EnqueuerConfig) { c.Store = nil },
		"authorizer":   func(c *extractworker.EnqueuerConfig) { c.Authorizer = nil },
		"clock":        func(c *extractworker.EnqueuerConfig) { c.Clock = nil },
		"logger":       func(c *extractworker.EnqueuerConfig) { c.Logger = nil },
		"events":       func(c *extractworker.EnqueuerConfig) { c.Events = nil },
		"max_attempts": func(c *extractworker.EnqueuerConfig) { c.MaxAttempts = 0 },
		"max_reaps":    func(c *extractworker.EnqueuerConfig) { c.MaxReaps = 0 },
	} {
		cfg := qgood
		mutate(&cfg)
		_, err := extractworker.NewEnqueuer(cfg)
		if me := testkit.WantKind(t, err, memorykit.ErrInvalidConfig); me.Field != field {
			t.Errorf("field %q, want %q", me.Field, field)
		}
	}
}
