package memorystore

import (
	"context"
	"sync/atomic"

	"github.com/goagents/memorykit"
)

// scanChunk is how many records a recall scan visits between two looks at
// its context: often enough that a scan stops within a fraction of a
// millisecond of its deadline, rarely enough that the look costs nothing.
const scanChunk = 256

// scanGuard stops a recall scan once the caller's context has ended. Each
// channel's scan owns one (the parallel vector scan runs on a goroutine of
// its own), so no state is shared between goroutines but the context.
type scanGuard struct {
	ctx     context.Context
	visited int
	stopped bool
}

func newScanGuard(ctx context.Context) *scanGuard { return &scanGuard{ctx: ctx} }

// stop counts one visited record and reports whether the scan must stop:
// every scanChunk records it checks the context.
func (g *scanGuard) stop() bool {
	if g.stopped {
		return true
	}
	g.visited++
	if g.visited%scanChunk != 0 {
		return false
	}
	if h := scanHook.Load(); h != nil {
		(*h)(g.visited)
	}
	g.stopped = g.ctx.Err() != nil
	return g.stopped
}

// scanHook, when set (by tests), is called at every context check of a
// recall scan with the number of records that scan has visited so far.
var scanHook atomic.Pointer[func(visited int)]

// interrupted is the error of a recall whose scans stopped at the caller's
// deadline: recoverable, with the context's error underneath.
func interrupted(op string, ctx context.Context) error {
	return &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "context_done", Err: ctx.Err()}
}
