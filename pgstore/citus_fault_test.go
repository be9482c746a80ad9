package pgstore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/storekit"
)

// envCitusFault, set to 1 with envCitusDir, lets TestCitusWorkerStopped
// stop and restart a worker of the cluster scripts/citus-test-env.sh
// started in that directory. It is opt-in: every other test using the
// cluster at the same time would fail while the worker is down.
const (
	envCitusFault = "MEMORYKIT_CITUS_FAULT"
	envCitusDir   = "MEMORYKIT_CITUS_DIR"
)

// pgCtl runs pg_ctl on the worker named (as the postgres user when the
// test runs as root).
func pgCtl(t *testing.T, dir, node string, args ...string) {
	t.Helper()
	port, err := os.ReadFile(filepath.Join(dir, node+".port"))
	if err != nil {
		t.Fatal(err)
	}
	full := append([]string{"-D", filepath.Join(dir, node), "-l", filepath.Join(dir, node+".log"), "-w",
		"-o", "-p " + strings.TrimSpace(string(port)) + " -k " + dir}, args...)
	name := "/usr/lib/postgresql/15/bin/pg_ctl"
	if os.Geteuid() == 0 {
		full = append([]string{"-u", "postgres", "--", name}, full...)
		name = "runuser"
	}
	if out, err := exec.Command(name, full...).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl %v: %v: %s", args, err, out)
	}
}

// TestCitusWorkerStopped: with one worker stopped, a batch write and a
// recall of a tenant on that worker fail with a recoverable
// ErrUnavailable and the failed batch stores nothing; tenants on the other
// worker keep working; once the worker is back, every acknowledged record
// is there.
func TestCitusWorkerStopped(t *testing.T) {
	dir := os.Getenv(envCitusDir)
	if os.Getenv(envCitusFault) != "1" || dir == "" {
		t.Skipf("set %s=1 and %s (the cluster directory) to stop a worker", envCitusFault, envCitusDir)
	}
	b := setup(t)
	ctx := b.ctx
	conn := adminConn(t)
	// Tenants by the worker port holding their shards.
	byPort := map[int][]memorykit.Scope{}
	for i := 0; len(byPort) < 2 || i < 8; i++ {
		sc, err := memorykit.ProjectScope(fmt.Sprintf("tenant-%02d", i), "p")
		if err != nil {
			t.Fatal(err)
		}
		var port int
		if err := conn.QueryRow(ctx, `SELECT p.nodeport FROM pg_dist_placement pl
			JOIN pg_dist_node p ON p.groupid = pl.groupid
			WHERE pl.shardid = get_shard_id_for_distribution_column($1::regclass, $2::text)`,
			qualified(b.schema, "records"), sc.TenantID).Scan(&port); err != nil {
			t.Fatal(err)
		}
		byPort[port] = append(byPort[port], sc)
		if i > 64 {
			t.Fatal("tenants do not spread over two workers")
		}
	}
	w2port, err := os.ReadFile(filepath.Join(dir, "worker2.port"))
	if err != nil {
		t.Fatal(err)
	}
	var down, up []memorykit.Scope
	for port, scs := range byPort {
		if fmt.Sprint(port) == strings.TrimSpace(string(w2port)) {
			down = scs
		} else {
			up = append(up, scs...)
		}
	}
	if len(down) == 0 || len(up) == 0 {
		t.Fatalf("tenants by port %v", byPort)
	}
	batch := func(sc memorykit.Scope, tag string) ([]memorykit.Record, error) {
		var items []storekit.BatchItem
		for i := range 5 {
			vec := make([]float32, 8)
			vec[i] = 1
			items = append(items, storekit.BatchItem{
				Record: memorykit.NewRecord{Scope: sc, Kind: memorykit.KindFact, Key: fmt.Sprintf("%s key %d", tag, i),
					Content: "deploys go out on tuesdays", Status: memorykit.StatusActive, Actor: author, Reason: "test"},
				Embedding: &storekit.BatchEmbedding{Profile: embedder.LocalProfile, Vector: vec},
			})
		}
		return b.s.CreateBatch(ctx, items)
	}
	var acked []memorykit.Record
	for _, sc := range append(append([]memorykit.Scope(nil), down...), up...) {
		recs, err := batch(sc, "before")
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, recs...)
	}

	pgCtl(t, dir, "worker2", "-m", "immediate", "stop")
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			pgCtl(t, dir, "worker2", "start")
		}
	}
	t.Cleanup(restart)

	recoverable := func(what string, err error) {
		t.Helper()
		var me *memorykit.Error
		if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrUnavailable) || !me.Recoverable() {
			t.Fatalf("%s with the worker stopped: %v, want a recoverable ErrUnavailable", what, err)
		}
	}
	_, err = batch(down[0], "during")
	recoverable("CreateBatch", err)
	_, err = b.s.Recall(ctx, storekit.RecallQuery{Scope: down[0], Terms: []string{"deploys"}, ExactLimit: 3, FullTextLimit: 3, VectorLimit: 3})
	recoverable("Recall", err)
	// A tenant on the running worker is served.
	if _, err := b.s.Recall(ctx, storekit.RecallQuery{Scope: up[0], Terms: []string{"deploys"}, ExactLimit: 3, FullTextLimit: 3, VectorLimit: 3}); err != nil {
		t.Fatalf("Recall of a tenant on the running worker: %v", err)
	}

	restart()
	for _, r := range acked {
		if _, err := b.s.Get(ctx, r.Scope, r.ID); err != nil {
			t.Fatalf("acknowledged record lost: %v", err)
		}
	}
	got, err := b.s.List(ctx, storekit.ListFilter{Scope: down[0], Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("tenant on the stopped worker holds %d records, want the 5 acknowledged (the failed batch stores nothing)", len(got))
	}
}
