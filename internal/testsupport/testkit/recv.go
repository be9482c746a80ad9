package testkit

import (
	"testing"
	"time"
)

// RecvLimit bounds Recv. It is short on purpose: a test that waits on the
// code under test (a result channel, a "blocked" signal) must fail in
// seconds when a regression means the answer never comes, not hang to the
// test binary's timeout. It guards against a hang and is never how a test
// waits for work: the mock clock, not real time, decides when work is due.
const RecvLimit = 10 * time.Second

// Recv returns the next value from ch, or fails the test if none arrives
// within RecvLimit of real time. what names the awaited thing in the
// failure.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(RecvLimit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("nothing from %s within %v", what, RecvLimit)
		var zero T
		return zero
	}
}
