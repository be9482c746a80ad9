package memorystore

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
)

// TestNewSnapshotYields: building a snapshot lets other goroutines run
// while it indexes, so a recall made runnable meanwhile does not wait for
// the build to end (or for the scheduler to preempt it). With one P, a
// goroutine started before the build runs before the build returns.
func TestNewSnapshotYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sc, _ := memorykit.ProjectScope("tenant-y", "yield")
	recs := make([]memorykit.Record, 4*yieldEvery)
	for i := range recs {
		recs[i] = memorykit.Record{ID: fmt.Sprintf("rec_%04d", i), Scope: sc, Kind: memorykit.KindNote, Status: memorykit.StatusActive,
			Key: fmt.Sprintf("key %d", i), Content: fmt.Sprintf("turn %d of a conversation about the eu region", i)}
	}
	for try := 0; try < 5; try++ {
		var ran atomic.Bool
		done := make(chan struct{})
		go func() {
			ran.Store(true)
			close(done)
		}()
		NewSnapshot(clock.New(), recs, nil)
		ranDuring := ran.Load()
		<-done
		if !ranDuring {
			t.Fatalf("try %d: a runnable goroutine waited for the whole snapshot build", try)
		}
	}
}
