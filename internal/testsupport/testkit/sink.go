package testkit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
)

// Sink records events and lets a test wait for them. The zero value is
// ready to use; it is safe for concurrent use.
type Sink struct {
	mu      sync.Mutex
	events  []memorykit.Event
	waiters []*waiter
}

// waiter is one pending After or AfterCount.
type waiter struct {
	kind memorykit.EventKind
	want int
	seen int
	// counts makes the waiter sum the events' Count fields instead of
	// counting the events.
	counts bool
	done   chan struct{}
}

// Emit implements memorykit.EventSink.
func (s *Sink) Emit(e memorykit.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.RecordIDs = append([]string(nil), e.RecordIDs...)
	s.events = append(s.events, e)
	live := s.waiters[:0]
	for _, w := range s.waiters {
		if w.kind == e.Kind {
			if w.counts {
				w.seen += e.Count
			} else {
				w.seen++
			}
		}
		if w.seen >= w.want {
			close(w.done)
			continue
		}
		live = append(live, w)
	}
	clear(s.waiters[len(live):])
	s.waiters = live
}

// Events returns a copy of every event so far.
func (s *Sink) Events() []memorykit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]memorykit.Event(nil), s.events...)
}

// OfKind returns the events of one kind.
func (s *Sink) OfKind(k memorykit.EventKind) []memorykit.Event {
	var out []memorykit.Event
	for _, e := range s.Events() {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// After returns a channel closed once n more events of kind have been
// emitted (counting from this call; n <= 0 gives a closed channel).
func (s *Sink) After(kind memorykit.EventKind, n int) <-chan struct{} {
	return s.wait(&waiter{kind: kind, want: n})
}

// AfterCount returns a channel closed once events of kind whose Count
// fields sum to at least n more have been emitted (counting from this
// call; n <= 0 gives a closed channel).
func (s *Sink) AfterCount(kind memorykit.EventKind, n int) <-chan struct{} {
	return s.wait(&waiter{kind: kind, want: n, counts: true})
}

func (s *Sink) wait(w *waiter) <-chan struct{} {
	w.done = make(chan struct{})
	if w.want <= 0 {
		close(w.done)
		return w.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiters = append(s.waiters, w)
	return w.done
}

// AssertNoCanary fails the test if any recorded event, rendered with %+v,
// contains canary.
func (s *Sink) AssertNoCanary(t testing.TB, canary string) {
	t.Helper()
	for _, e := range s.Events() {
		if strings.Contains(fmt.Sprintf("%+v", e), canary) {
			t.Errorf("event %s carries content: %+v", e.Kind, e)
		}
	}
}

// AssertNoCanaryInLogs fails the test if any log entry's message, logger
// name or fields contain canary.
func AssertNoCanaryInLogs(t testing.TB, logs *observer.ObservedLogs, canary string) {
	t.Helper()
	for _, l := range logs.All() {
		line := l.Message + " " + fmt.Sprint(l.ContextMap()) + " " + l.LoggerName
		if strings.Contains(line, canary) {
			t.Errorf("log entry carries content: %q", l.Message)
		}
	}
}

// NoContent fails the test if canary appears in any log entry or in any
// event s recorded: the check that a component keeps content (memory
// text, payloads, queries) out of what it reports.
func NoContent(t testing.TB, logs *observer.ObservedLogs, s *Sink, canary string) {
	t.Helper()
	AssertNoCanaryInLogs(t, logs, canary)
	s.AssertNoCanary(t, canary)
}

// AwaitLimit bounds Await: generous, because it guards against a hung
// test and is never how a test waits for work.
const AwaitLimit = 2 * time.Minute

// Await fails the test if ch is not closed within AwaitLimit of real time.
// what names the awaited thing in the failure.
func Await(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	awaitWithin(t, ch, what, AwaitLimit)
}

func awaitWithin(t testing.TB, ch <-chan struct{}, what string, limit time.Duration) {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
	}
}
