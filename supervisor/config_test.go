package supervisor_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

type named string

func (n named) Name() string                       { return string(n) }
func (n named) Run(fetch, _ context.Context) error { <-fetch.Done(); return nil }

type ptrActor struct{ name string }

func (p *ptrActor) Name() string                       { return p.name }
func (p *ptrActor) Run(fetch, _ context.Context) error { <-fetch.Done(); return nil }

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	good := func() supervisor.Config {
		return supervisor.Config{
			Clock:   clock.NewMock(),
			Logger:  zap.NewNop(),
			Events:  memorykit.DiscardEvents{},
			Backoff: memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}, MaxRestarts: 3,
		}
	}
	var typedNil *ptrActor
	tests := []struct {
		name   string
		edit   func(*supervisor.Config)
		actors []supervisor.Actor
		field  string
		reason string
	}{
		{"nil clock", func(c *supervisor.Config) { c.Clock = nil }, nil, "clock", "missing"},
		{"nil logger", func(c *supervisor.Config) { c.Logger = nil }, nil, "logger", "missing"},
		{"nil events", func(c *supervisor.Config) { c.Events = nil }, nil, "events", "missing"},
		{"zero backoff", func(c *supervisor.Config) { c.Backoff = memorykit.Backoff{} }, nil, "backoff.initial", "not_positive"},
		{"zero initial", func(c *supervisor.Config) { c.Backoff.Initial = 0 }, nil, "backoff.initial", "not_positive"},
		{"negative initial", func(c *supervisor.Config) { c.Backoff.Initial = -time.Second }, nil, "backoff.initial", "not_positive"},
		{"zero max", func(c *supervisor.Config) { c.Backoff.Max = 0 }, nil, "backoff.max", "not_positive"},
		{"max below initial", func(c *supervisor.Config) { c.Backoff.Max = time.Millisecond }, nil, "backoff.max", "below_initial"},
		{"zero multiplier", func(c *supervisor.Config) { c.Backoff.Multiplier = 0 }, nil, "backoff.multiplier", "not_positive"},
		{"shrinking multiplier", func(c *supervisor.Config) { c.Backoff.Multiplier = 0.5 }, nil, "backoff.multiplier", "below_one"},
		{"NaN multiplier", func(c *supervisor.Config) { c.Backoff.Multiplier = math.NaN() }, nil, "backoff.multiplier", "not_finite"},
		{"infinite multiplier", func(c *supervisor.Config) { c.Backoff.Multiplier = math.Inf(1) }, nil, "backoff.multiplier", "not_finite"},
		{"zero max restarts", func(c *supervisor.Config) { c.MaxRestarts = 0 }, nil, "max_restarts", "not_positive"},
		{"negative max restarts", func(c *supervisor.Config) { c.MaxRestarts = -1 }, nil, "max_restarts", "not_positive"},
		{"no actors", nil, []supervisor.Actor{}, "actors", "no_actors"},
		{"nil actor", nil, []supervisor.Actor{named("a"), nil}, "actors", "nil_actor"},
		{"typed nil actor", nil, []supervisor.Actor{typedNil}, "actors", "bad_actor"},
		{"empty name", nil, []supervisor.Actor{named("")}, "actors", "bad_name"},
		{"name with space", nil, []supervisor.Actor{named("embed worker")}, "actors", "bad_name"},
		{"duplicate name", nil, []supervisor.Actor{named("a"), named("b"), named("a")}, "actors", "duplicate_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := good()
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			actors := tt.actors
			if actors == nil {
				actors = []supervisor.Actor{named("a")}
			}
			sup, err := supervisor.New(cfg, actors...)
			if sup != nil {
				t.Error("New returned a supervisor along with an error")
			}
			var me *memorykit.Error
			if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrInvalidConfig) {
				t.Fatalf("err %v, want an ErrInvalidConfig *memorykit.Error", err)
			}
			if me.Field != tt.field || me.Reason != tt.reason {
				t.Fatalf("field %q reason %q, want %q %q", me.Field, me.Reason, tt.field, tt.reason)
			}
		})
	}

	sup, err := supervisor.New(good(), named("a"), &ptrActor{name: "b"})
	if err != nil || sup.State() != supervisor.StateNew {
		t.Fatalf("valid config: %v", err)
	}
}

type ctxKey struct{}

// valueActor hands its fetch context to the test.
type valueActor struct{ got chan context.Context }

func (v valueActor) Name() string { return "values" }
func (v valueActor) Run(fetch, _ context.Context) error {
	v.got <- fetch
	<-fetch.Done()
	return nil
}

func TestStartContextCarriesValuesNotLifetime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := valueActor{got: make(chan context.Context, 1)}
	sup, err := supervisor.New(b.cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "trace-1"))
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fetch := recv(t, a.got, "run")
	if v := fetch.Value(ctxKey{}); v != "trace-1" {
		t.Fatalf("value %v", v)
	}
	cancel() // cancellation propagates synchronously, so a derived fetch context would be done now
	if err := fetch.Err(); err != nil {
		t.Fatalf("cancelling Start's ctx ended the fetch context: %v", err)
	}
	if s := sup.State(); s != supervisor.StateRunning {
		t.Fatalf("state %v after cancelling Start's ctx", s)
	}
	if err := sup.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
