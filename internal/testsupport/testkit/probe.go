package testkit

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Probe is a testing.TB for testing test helpers: failures, skips and logs
// are recorded instead of reaching the real test, so a helper's own test
// can check that the helper fails (or skips) when it should. Methods Probe
// does not override go to the real test it wraps.
type Probe struct {
	testing.TB

	mu       sync.Mutex
	failed   bool
	skipped  bool
	out      []string
	cleanups []func()
}

// RunProbe runs fn with a Probe on a goroutine of its own (Fatal and Skip
// end that goroutine, as they end a real test's), then runs the cleanups fn
// registered, last first, and returns the Probe.
func RunProbe(t testing.TB, fn func(tb testing.TB)) *Probe {
	t.Helper()
	p := &Probe{TB: t}
	p.run(func() { fn(p) })
	for {
		p.mu.Lock()
		n := len(p.cleanups)
		if n == 0 {
			p.mu.Unlock()
			return p
		}
		c := p.cleanups[n-1]
		p.cleanups = p.cleanups[:n-1]
		p.mu.Unlock()
		p.run(c)
	}
}

func (p *Probe) run(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

func (p *Probe) record(failed, skipped bool, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = p.failed || failed
	p.skipped = p.skipped || skipped
	if msg != "" {
		p.out = append(p.out, msg)
	}
}

// Failed reports whether the helper failed the probe.
func (p *Probe) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// Skipped reports whether the helper skipped the probe.
func (p *Probe) Skipped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.skipped
}

// Messages returns every message logged, failed or skipped with, one a line.
func (p *Probe) Messages() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.out, "\n")
}

// Helper implements testing.TB.
func (p *Probe) Helper() {}

// Cleanup implements testing.TB; RunProbe runs the functions.
func (p *Probe) Cleanup(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanups = append(p.cleanups, fn)
}

// Log implements testing.TB.
func (p *Probe) Log(args ...any) { p.record(false, false, fmt.Sprint(args...)) }

// Logf implements testing.TB.
func (p *Probe) Logf(format string, args ...any) {
	p.record(false, false, fmt.Sprintf(format, args...))
}

// Fail implements testing.TB.
func (p *Probe) Fail() { p.record(true, false, "") }

// Error implements testing.TB.
func (p *Probe) Error(args ...any) { p.record(true, false, fmt.Sprint(args...)) }

// Errorf implements testing.TB.
func (p *Probe) Errorf(format string, args ...any) {
	p.record(true, false, fmt.Sprintf(format, args...))
}

// FailNow implements testing.TB.
func (p *Probe) FailNow() {
	p.record(true, false, "")
	runtime.Goexit()
}

// Fatal implements testing.TB.
func (p *Probe) Fatal(args ...any) {
	p.record(true, false, fmt.Sprint(args...))
	runtime.Goexit()
}

// Fatalf implements testing.TB.
func (p *Probe) Fatalf(format string, args ...any) {
	p.record(true, false, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// SkipNow implements testing.TB.
func (p *Probe) SkipNow() {
	p.record(false, true, "")
	runtime.Goexit()
}

// Skip implements testing.TB.
func (p *Probe) Skip(args ...any) {
	p.record(false, true, fmt.Sprint(args...))
	runtime.Goexit()
}

// Skipf implements testing.TB.
func (p *Probe) Skipf(format string, args ...any) {
	p.record(false, true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
