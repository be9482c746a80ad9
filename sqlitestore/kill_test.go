package sqlitestore_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// child starts the test binary again as a helper process of kind on path.
func child(t *testing.T, kind, path string) (*exec.Cmd, *bufio.Reader, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+kind, helperDBEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	})
	return cmd, bufio.NewReader(out), in
}

// TestKillNineKeepsAcknowledgedWrites: a child process writes records and
// batches with durable commits and prints each one it got success for;
// the test kills it with SIGKILL after a random number of acknowledgements
// (the child is by then in the middle of its next write), reopens the file
// and finds every acknowledged record, every batch whole or absent, and
// the leases the dead process held reaped once they expire.
func TestKillNineKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 20 processes")
	}
	for seed := int64(1); seed <= 20; seed++ {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			killAndCheck(t, seed)
		})
	}
}

func killAndCheck(t *testing.T, seed int64) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(seed))
	path := filepath.Join(t.TempDir(), "k.db")
	cmd, out, _ := child(t, "writer", path)
	killAt := 1 + rng.Intn(40)
	acked := map[string]string{}     // record id -> content
	batches := map[string][]string{} // batch tag -> ids
	lines := 0
	leased := false
	read := func(line string) {
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && f[0] == "leased":
			leased = true
		case len(f) == 3 && f[0] == "ack":
			acked[f[1]] = f[2]
		case len(f) >= 2 && f[0] == "batch":
			batches[strconv.Itoa(lines)] = f[2:]
		default:
			t.Fatalf("child printed %q", line)
		}
		lines++
	}
	for lines < killAt {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("child ended before it was killed: %v", err)
		}
		read(strings.TrimSpace(line))
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	// Lines the child printed before it died were acknowledged too.
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			if !strings.HasSuffix(line, "\n") {
				break // a line cut short by the kill was never acknowledged
			}
		}
		read(strings.TrimSpace(line))
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the child exited cleanly; want killed")
	}
	if !leased {
		t.Fatal("the child never reported its leases")
	}

	clk := storetest.NewClock()
	s := openAt(t, path, clk, sqlitestore.SyncFull)
	for id, content := range acked {
		r, err := s.Get(ctx, killScope, id)
		if err != nil || r.Content != content || r.Status != memorykit.StatusActive {
			t.Fatalf("acknowledged record %s after kill: %+v, %v", id, r, err)
		}
		if revs, err := s.Revisions(ctx, killScope, id); err != nil || len(revs) != 1 {
			t.Fatalf("acknowledged record %s has revisions %v, %v", id, revs, err)
		}
	}
	for _, ids := range batches {
		for _, id := range ids {
			if _, err := s.Get(ctx, killScope, id); err != nil {
				t.Fatalf("record %s of an acknowledged batch after kill: %v", id, err)
			}
		}
	}
	// No partial write: every batch in the file is whole, every record has
	// its create revision and its content.
	perBatch := map[string]int{}
	var all []memorykit.Record
	after := ""
	for {
		page, err := s.List(ctx, storekit.ListFilter{Scope: killScope, Limit: 20, AfterID: after})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 20 {
			break
		}
		after = page[len(page)-1].ID
	}
	for _, r := range all {
		if r.Content == "" || r.ContentHash != storekit.ContentHash(r.Content) {
			t.Fatalf("record %s is torn: %+v", r.ID, r)
		}
		if b := r.Metadata["batch"]; b != "" {
			perBatch[b]++
		}
	}
	for b, n := range perBatch {
		if n != 3 {
			t.Fatalf("batch %s holds %d of its 3 records after kill", b, n)
		}
	}
	if len(all) < len(acked) {
		t.Fatalf("file holds %d records; %d were acknowledged", len(all), len(acked))
	}

	// The dead worker's leases still stand, then expire and are reaped.
	if n, err := s.ReapJobLeases(ctx); err != nil || n != 0 {
		t.Fatalf("reap before expiry = %d, %v", n, err)
	}
	clk.Add(2 * time.Minute)
	if n, err := s.ReapJobLeases(ctx); err != nil || n != 1 {
		t.Fatalf("reap jobs after expiry = %d, %v; want 1", n, err)
	}
	if n, err := s.ReapEmbeddingLeases(ctx); err != nil || n != 1 {
		t.Fatalf("reap embeddings after expiry = %d, %v; want 1", n, err)
	}
	j, err := s.GetJob(ctx, killScope, "job-held")
	if err != nil || j.State != storekit.JobQueued || j.Reaps != 1 {
		t.Fatalf("job after reap = %+v, %v; want queued with one reap", j, err)
	}
	held, err := s.FindActive(ctx, heldScope, memorykit.KindFact, "needs-vector")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p/k", WorkerID: "alive", TTL: time.Minute, Max: 1, Scope: &heldScope})
	if err != nil {
		t.Fatal(err)
	}
	attempt := 0
	for _, task := range tasks {
		if task.RecordID == held.ID {
			attempt = task.Attempt
		}
	}
	if attempt != 2 {
		t.Fatalf("the reaped embedding lease is leased again with attempt %d; want 2", attempt)
	}
}

// TestSecondProcessIsLockedOut: while another process holds the file,
// Open fails with ReasonLocked; once that process closed it, Open works.
func TestSecondProcessIsLockedOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	cmd, out, in := child(t, "holder", path)
	if line, err := out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "open" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	clk := storetest.NewClock()
	_, err := sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: clk, Guard: storetest.NewGuard(t), Tombstones: storetest.NewTombstones(t)})
	if !errors.Is(err, memorykit.ErrUnavailable) || reason(err) != sqlitestore.ReasonLocked {
		t.Fatalf("Open while another process holds the file = %v; want %s", err, sqlitestore.ReasonLocked)
	}
	_ = in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	openAt(t, path, clk, sqlitestore.SyncNormal)
}
