// Package runtimetest holds test seams for Hosts that test their wiring
// of a memorykit Runtime deterministically. Nothing here belongs in a
// production composition: runtime.Config has no hook fields, and a Config
// nobody passed to WithHooks behaves exactly as in production.
package runtimetest

import (
	"github.com/goagents/memorykit/internal/plumbing/runtimehooks"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// Hooks are the Runtime's test seams; see WithHooks.
//
//   - OnWait, if set, is called on an actor's goroutine (ActorEmbed,
//     ActorExtract or ActorReap of package runtime) right after the timer
//     of one of its waits is armed on the Clock: a test that advances a
//     mock clock only after it has seen the wait is sure to wake that
//     actor, and one that has seen every actor wait idle knows the
//     background work is done. It must not block for long.
//   - Random, if set, is the source of the projector's per-view nonces
//     (crypto/rand otherwise), so a test can pin the rendered view.
type Hooks = runtimehooks.Hooks

// WithHooks attaches h to cfg, replacing any hooks attached before; pass
// the zero Hooks to remove them. runtime.New then wires them into the
// Runtime's actors and projector.
func WithHooks(cfg *mkruntime.Config, h Hooks) {
	runtimehooks.Set(cfg, h)
}
