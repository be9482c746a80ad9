package testkit

import (
	"testing"
	"time"
)

// AwaitWithin exposes Await's timeout path to the package's tests.
var AwaitWithin = awaitWithin

// WaitHeldWithin exposes WaitHeld's timeout path to the package's tests.
func (g *Gate) WaitHeldWithin(t testing.TB, limit time.Duration, workers ...string) {
	g.waitHeldWithin(t, limit, workers...)
}
