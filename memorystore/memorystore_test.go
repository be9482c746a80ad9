package memorystore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func harness() storetest.Harness {
	return storetest.Harness{
		New: func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) memorykit.Store {
			s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: guard})
			if err != nil {
				t.Fatalf("memorystore.New: %v", err)
			}
			return s
		},
		Dump: func(t *testing.T, s memorykit.Store) string {
			return s.(*memorystore.Store).Dump()
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.RunAll(t, harness())
}

func TestNewRequiresClockAndGuard(t *testing.T) {
	guard := storetest.NewGuard(t)
	cases := map[string]memorystore.Config{
		"no clock": {Guard: guard},
		"no guard": {Clock: clock.NewMock()},
		"nothing":  {},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := memorystore.New(cfg)
			if s != nil || !errors.Is(err, memorykit.ErrInvalidConfig) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", s, err)
			}
		})
	}
}

func TestDumpIsDeterministic(t *testing.T) {
	clk := storetest.NewClock()
	s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: storetest.NewGuard(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scope := storetest.Scope(t, "tenant-a", "project-1")
	for _, key := range []string{"b", "a", "c"} {
		r, err := s.Create(ctx, memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: key, Content: "content " + key,
			Status: memorykit.StatusActive, Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "u1"},
			Metadata: map[string]string{"x": "1", "y": "2", "z": "3"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"p/one", "p/two"} {
			if err := s.PutEmbedding(ctx, memorykit.EmbeddingPut{Scope: scope, RecordID: r.ID, Profile: p,
				ContentHash: r.ContentHash, Vector: []float32{1, 2}, WorkerID: "w1"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := s.Dump()
	for i := 0; i < 20; i++ {
		if again := s.Dump(); again != first {
			t.Fatalf("Dump differs between calls:\n%s\n---\n%s", first, again)
		}
	}
}
