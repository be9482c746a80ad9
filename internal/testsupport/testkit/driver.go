package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/supervisor"
)

// Driver moves a mock clock for a set of actors (workers, reapers, a
// supervisor's restart backoff) so that tests never sleep. Each actor
// reports, through a hook, that it has armed a timer on the clock. Once
// every one of the actors the Driver was made for has reported, the Driver
// advances the clock to the earliest instant one of them waits for, and
// forgets the reports that instant satisfies. No actor is ever mid-work
// when time moves, so a lease never expires under a live worker, and an
// Add is never made before the timer it should fire exists.
type Driver struct {
	clk  *clock.Mock
	want int

	mu   sync.Mutex
	wake map[string]time.Time
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewDriver starts a Driver for actors actors on clk. It stops when the
// test ends, or earlier on Halt.
func NewDriver(t testing.TB, clk *clock.Mock, actors int) *Driver {
	d := &Driver{
		clk: clk, want: actors, wake: make(map[string]time.Time),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go d.loop()
	t.Cleanup(d.Halt)
	return d
}

// Hook returns an OnWait hook (workers, the reaper) that reports actor
// name's waits.
func (d *Driver) Hook(name string) func(supervisor.Wait) {
	return func(w supervisor.Wait) { d.Armed(name, w.Delay) }
}

// OnBackoff is a supervisor.Config.OnBackoffArmed hook: a restart backoff
// of the named actor is a wait like any other.
func (d *Driver) OnBackoff(name string, _ int, delay time.Duration) { d.Armed(name, delay) }

// Armed reports that actor name has armed a timer of delay on the clock.
// A later report from the same actor replaces an earlier one.
func (d *Driver) Armed(name string, delay time.Duration) {
	d.mu.Lock()
	d.wake[name] = d.clk.Now().Add(delay)
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *Driver) loop() {
	defer close(d.done)
	for {
		select {
		case <-d.stop:
			return
		case <-d.kick:
		}
		for {
			select {
			case <-d.stop:
				return
			default:
			}
			d.mu.Lock()
			if len(d.wake) < d.want {
				d.mu.Unlock()
				break
			}
			var next time.Time
			for _, at := range d.wake {
				if next.IsZero() || at.Before(next) {
					next = at
				}
			}
			for name, at := range d.wake {
				if !at.After(next) {
					delete(d.wake, name)
				}
			}
			now := d.clk.Now()
			d.mu.Unlock()
			d.clk.Add(next.Sub(now))
		}
	}
}

// Halt stops the Driver and waits for it; it is idempotent. After Halt the
// clock no longer moves, which lets a test drain actors in peace.
func (d *Driver) Halt() {
	d.mu.Lock()
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	d.mu.Unlock()
	<-d.done
}

// SupervisorBackoff and SupervisorMaxRestarts are the restart policy
// NewSupervisor uses.
var SupervisorBackoff = memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}

// SupervisorMaxRestarts: see SupervisorBackoff.
const SupervisorMaxRestarts = 5

// NewSupervisor builds (but does not start) a supervisor of actors on clk,
// logging to log and emitting to events, with SupervisorBackoff. With d
// non-nil, its restart backoffs are reported to d. The supervisor is
// stopped when the test ends; a failing Stop fails the test.
func NewSupervisor(t testing.TB, clk clock.Clock, log *zap.Logger, events memorykit.EventSink, d *Driver, actors ...supervisor.Actor) *supervisor.Supervisor {
	t.Helper()
	cfg := supervisor.Config{Clock: clk, Logger: log, Events: events, Backoff: SupervisorBackoff, MaxRestarts: SupervisorMaxRestarts}
	if d != nil {
		cfg.OnBackoffArmed = d.OnBackoff
	}
	s, err := supervisor.New(cfg, actors...)
	if err != nil {
		t.Fatalf("supervisor.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}
