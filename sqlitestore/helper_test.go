package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// Environment of the child process a durability test starts by running
// the test binary again.
const (
	helperEnv   = "SQLITESTORE_TEST_HELPER"
	helperDBEnv = "SQLITESTORE_TEST_DB"
)

// helperMain runs the child side of a test that re-executes the test
// binary, and reports whether it did; the child never returns to the
// tests.
func helperMain() bool {
	switch os.Getenv(helperEnv) {
	case "":
		return false
	case "writer":
		os.Exit(writerChild(os.Getenv(helperDBEnv)))
	case "holder":
		os.Exit(holderChild(os.Getenv(helperDBEnv)))
	}
	os.Exit(2)
	return true
}

// openChild opens path with durable commits, on a mock clock at
// storetest.Epoch, with the guard and tombstone secret the tests use.
func openChild(path string) (*sqlitestore.Store, error) {
	guard, err := memorykit.NewWriteGuard(storetest.Limits(), storetest.MarkerValidator{Marker: storetest.RejectMarker})
	if err != nil {
		return nil, err
	}
	keys, err := memorykit.NewTombstoneKeyer([]byte(storetest.TestTombstoneSecret))
	if err != nil {
		return nil, err
	}
	return sqlitestore.Open(context.Background(), path, sqlitestore.Config{Clock: storetest.NewClock(), Guard: guard, Tombstones: keys, Sync: sqlitestore.SyncFull})
}

// The Scopes of the kill test: the writes, and the record whose embedding
// lease the child holds when it dies.
var (
	killScope = memorykit.Scope{TenantID: "tenant-k", SubjectType: memorykit.SubjectProject, SubjectID: "p"}
	heldScope = memorykit.Scope{TenantID: "tenant-k", SubjectType: memorykit.SubjectProject, SubjectID: "held"}
)

// writerChild leases a job and an embedding (which it never hands back),
// then writes records and batches until it is killed, printing one line
// per acknowledged write:
//
//	ack <id> <content>            a Create that returned success
//	batch <n> <id>...             a CreateBatch of n records
//	leased                        the job and embedding leases are taken
func writerChild(path string) int {
	ctx := context.Background()
	s, err := openChild(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: "job-held", Scope: killScope, Payload: "turn", MaxAttempts: 3, MaxReaps: 3}); err != nil {
		fmt.Fprintln(os.Stderr, "enqueue:", err)
		return 1
	}
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: heldScope, Kind: memorykit.KindFact, Key: "needs-vector", Content: "embed me",
		Status: memorykit.StatusActive, Actor: actor}); err != nil {
		fmt.Fprintln(os.Stderr, "create:", err)
		return 1
	}
	if j, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: "doomed", TTL: time.Minute, Max: 1}); err != nil || len(j) != 1 {
		fmt.Fprintln(os.Stderr, "lease job:", err)
		return 1
	}
	if e, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: "p/k", WorkerID: "doomed", TTL: time.Minute, Max: 1, Scope: &heldScope}); err != nil || len(e) != 1 {
		fmt.Fprintln(os.Stderr, "lease embedding:", err)
		return 1
	}
	fmt.Println("leased")
	for i := 0; ; i++ {
		if i%4 == 3 {
			items := make([]storekit.BatchItem, 3)
			for k := range items {
				items[k] = storekit.BatchItem{Record: memorykit.NewRecord{Scope: killScope, Kind: memorykit.KindFact,
					Key: "b" + strconv.Itoa(i) + "-" + strconv.Itoa(k), Content: "batch " + strconv.Itoa(i),
					Status: memorykit.StatusActive, Actor: actor, Metadata: map[string]string{"batch": strconv.Itoa(i)}}}
			}
			recs, err := s.CreateBatch(ctx, items)
			if err != nil {
				fmt.Fprintln(os.Stderr, "batch:", err)
				return 1
			}
			line := "batch " + strconv.Itoa(len(recs))
			for _, r := range recs {
				line += " " + r.ID
			}
			fmt.Println(line)
			continue
		}
		content := "note" + strconv.Itoa(i)
		r, err := s.Create(ctx, memorykit.NewRecord{Scope: killScope, Kind: memorykit.KindFact, Key: "k" + strconv.Itoa(i), Content: content,
			Status: memorykit.StatusActive, Actor: actor})
		if err != nil {
			fmt.Fprintln(os.Stderr, "create:", err)
			return 1
		}
		fmt.Println("ack", r.ID, content)
	}
}

// holderChild opens the file, says so, and holds it until its stdin
// closes.
func holderChild(path string) int {
	s, err := openChild(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	fmt.Println("open")
	buf := make([]byte, 1)
	_, _ = os.Stdin.Read(buf)
	_ = s.Close()
	return 0
}
