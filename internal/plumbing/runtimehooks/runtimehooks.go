// Package runtimehooks holds the runtime's test seams, out of its public
// API: package runtime keeps them in an unexported Config field and
// installs Set, and package runtime/runtimetest is the only way a test
// reaches it. Production code never sets them.
package runtimehooks

import (
	"io"

	"github.com/goagents/memorykit/supervisor"
)

// Hooks are the runtime's optional seams for deterministic tests. Leaving
// them nil changes nothing in how a Runtime behaves.
type Hooks struct {
	// OnWait, if set, is called on an actor's goroutine (the actor names
	// are runtime.ActorEmbed, ActorExtract and ActorReap) right after the
	// timer of one of its waits is armed on the Clock: a test that
	// advances a mock clock only after it has seen the wait is sure to
	// wake that actor, and one that has seen every actor wait idle knows
	// the background work is done. It must not block for long.
	OnWait func(actor string, w supervisor.Wait)
	// Random, if set, is the source of the projector's per-view nonces
	// (crypto/rand otherwise), so a test can pin the rendered view.
	Random io.Reader
}

// Set attaches h to a *runtime.Config passed as cfg. Package runtime
// installs it when it is initialised.
var Set func(cfg any, h Hooks)
