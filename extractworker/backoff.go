package extractworker

import "github.com/goagents/memorykit"

// Backoff is the exponential wait policy shared with the rest of
// memorykit (see memorykit.Backoff): the wait before retry number n
// (counting from 1) is Initial * Multiplier^(n-1), capped at Max, measured
// on the worker's injected clock. Every field is required; Validate
// rejects a zero or partial policy rather than filling it in.
type Backoff = memorykit.Backoff
