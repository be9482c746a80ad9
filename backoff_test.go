package memorykit_test

import (
	"math"
	"testing"
	"time"

	"github.com/goagents/memorykit"
)

func TestBackoffDelayGrowsToMax(t *testing.T) {
	t.Parallel()
	p := memorykit.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 3}
	want := []time.Duration{
		100 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond, 2700 * time.Millisecond,
		5 * time.Second, 5 * time.Second,
	}
	for i, w := range want {
		if got := p.Delay(i + 1); got != w {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := p.Delay(0); got != p.Initial {
		t.Errorf("Delay(0) = %v, want Initial", got)
	}
	if got := p.Delay(1 << 30); got != p.Max {
		t.Errorf("Delay(huge) = %v, want Max", got)
	}
	flat := memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 1}
	if got := flat.Delay(50); got != time.Second {
		t.Errorf("flat Delay(50) = %v", got)
	}
	big := memorykit.Backoff{Initial: time.Hour, Max: time.Duration(math.MaxInt64), Multiplier: 1e9}
	if got := big.Delay(5); got != big.Max || got <= 0 {
		t.Errorf("big Delay(5) = %v, want Max without overflow", got)
	}
}
