package testkit

import (
	"errors"
	"sync"
	"testing"

	"github.com/goagents/memorykit"
)

// WantKind fails the test unless err is a *memorykit.Error matching kind
// (errors.Is), and returns it.
func WantKind(t testing.TB, err, kind error) *memorykit.Error {
	t.Helper()
	var me *memorykit.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *memorykit.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want kind %v", err, kind)
	}
	return me
}

// DBDown is a recoverable store error of the kind a lost database
// connection gives, for fault injection.
var DBDown = &memorykit.Error{Op: "test.store", Kind: memorykit.ErrUnavailable, Reason: "connection_lost", Retry: true}

// Faults decides which calls of a fault-injecting double fail. A double
// embeds it and asks Fault(method) at the top of each method it wraps.
// The zero value fails nothing; it is safe for concurrent use.
type Faults struct {
	mu   sync.Mutex
	left map[string]int // method -> calls left to fail
	err  error
}

// FailCalls makes the next n calls of method fail with err. The error is
// shared: the last FailCalls sets it for every method.
func (f *Faults) FailCalls(method string, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.left == nil {
		f.left = make(map[string]int)
	}
	f.left[method] = n
	f.err = err
}

// Fault returns the error method's call must fail with, or nil, and
// counts the call against FailCalls.
func (f *Faults) Fault(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.left[method] > 0 {
		f.left[method]--
		return f.err
	}
	return nil
}
