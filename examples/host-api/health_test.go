package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
)

// workerOutage makes the workers' store calls fail recoverably while down
// is set; the request path keeps its store.
type workerOutage struct{ down atomic.Bool }

func (o *workerOutage) err() error {
	if !o.down.Load() {
		return nil
	}
	return &memorykit.Error{Op: "test.worker_store", Kind: memorykit.ErrUnavailable, Reason: "store_down", Retry: true}
}

type outageEmbeddings struct {
	storekit.EmbeddingStore
	o *workerOutage
}

func (s outageEmbeddings) LeaseEmbeddings(ctx context.Context, p storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	if err := s.o.err(); err != nil {
		return nil, err
	}
	return s.EmbeddingStore.LeaseEmbeddings(ctx, p)
}

// healthSteps advances the Host's clock a second at a time, asking
// /healthz after each step, until it answers want (at most n steps).
func (e *env) healthUntil(want, n int) resp {
	e.t.Helper()
	var r resp
	for i := 0; i < n; i++ {
		if r = e.do("", "GET", "/healthz", ""); r.status == want {
			return r
		}
		e.clk.Add(time.Second)
	}
	e.t.Fatalf("/healthz never answered %d; last %d %s", want, r.status, r.raw)
	return r
}

// checkDegraded checks a 503 health report: status degraded, ok false, and
// some actor backing off with reason.
func checkDegraded(t *testing.T, r resp, reasons ...string) {
	t.Helper()
	if r.str("status") != "degraded" || r.get("ok") != false || r.str("state") != "running" {
		t.Fatalf("health report %s", r.raw)
	}
	actors, _ := r.get("actors").([]any)
	if len(actors) != 3 {
		t.Fatalf("health report has %d actors: %s", len(actors), r.raw)
	}
	for i := range actors {
		p := fmt.Sprintf("actors.%d.", i)
		if r.str(p+"state") == "backing_off" && slices.Contains(reasons, r.str(p+"reason")) && r.str(p+"since") != "" {
			return
		}
	}
	t.Fatalf("no actor backing off with one of %q in %s", reasons, r.raw)
}

// TestHealthzIs503WhileAnActorBacksOff is hole 7 of issue 10 at the Host:
// while the workers' store fails recoverably, /healthz answers 503 with the
// content-free health report; once it works again, 200, and the record
// written meanwhile is embedded.
func TestHealthzIs503WhileAnActorBacksOff(t *testing.T) {
	t.Run("memorystore", func(t *testing.T) {
		o := &workerOutage{}
		b := backend{name: "memorystore", options: func(*testing.T) Options {
			return Options{TombstoneSecret: testTombstoneSecret, workerStores: func(s storekit.Store) mkruntime.Stores {
				st := mkruntime.StoresOf(s)
				st.Embeddings = outageEmbeddings{EmbeddingStore: s, o: o}
				return st
			}}
		}}
		e := newEnv(t, b, nil)
		r := e.must(http.StatusOK, "", "GET", "/healthz", "")
		if r.str("status") != "ok" || r.get("ok") != true || r.str("actors.0.state") != "running" {
			t.Fatalf("healthy report %s", r.raw)
		}
		o.down.Store(true)
		e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in eu-west-1.")
		checkDegraded(t, e.healthUntil(http.StatusServiceUnavailable, 100), "store_down")
		// An hour later it still backs off: it never gave up.
		for i := 0; i < 60; i++ {
			e.clk.Add(time.Minute)
		}
		checkDegraded(t, e.must(http.StatusServiceUnavailable, "", "GET", "/healthz", ""), "store_down")
		o.down.Store(false)
		e.healthUntil(http.StatusOK, 200)
		e.settle()
	})
	t.Run("pgstore", func(t *testing.T) {
		b := postgresBackend(t)
		var dsn, schema string
		b0 := b.options
		b.options = func(t *testing.T) Options {
			o := b0(t)
			dsn, schema = o.DSN, o.Schema
			return o
		}
		e := newEnv(t, b, nil)
		e.must(http.StatusOK, "", "GET", "/healthz", "")
		admin := pgtest.Connect(t, dsn)
		ctx := context.Background()
		hidden := schema + "_hidden"
		if _, err := admin.Exec(ctx, "ALTER SCHEMA "+schema+" RENAME TO "+hidden); err != nil {
			t.Fatal(err)
		}
		restored := false
		restore := func() {
			if !restored {
				restored = true
				if _, err := admin.Exec(context.Background(), "ALTER SCHEMA "+hidden+" RENAME TO "+schema); err != nil {
					t.Error(err)
				}
			}
		}
		t.Cleanup(restore)
		// A statement naming a table of the hidden schema fails with 42P01
		// (undefined table), one calling its functions or sequences with
		// 3F000 (invalid schema name); which the worker meets first
		// depends on where its round was.
		checkDegraded(t, e.healthUntil(http.StatusServiceUnavailable, 100), "sqlstate_42p01", "sqlstate_3f000")
		restore()
		e.healthUntil(http.StatusOK, 200)
		e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in eu-west-1.")
		e.settle()
	})
}
