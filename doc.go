// Package memorykit is the domain of governed, long-term memory for LLM agents.
//
// A Host program embeds memorykit. The Host authenticates callers, owns the
// database, the model providers, the clocks, the worker identities and
// shutdown; memorykit enforces the rules:
//
//   - who may read and write which [Scope] (see [Authorizer] and [Authorize]);
//   - which records may ever reach a model: only active, currently effective,
//     same-Scope records (see [Record.Recallable]);
//   - how model-proposed memory waits for review as a candidate;
//   - how recall stays inside one deadline and a token budget
//     (see [RecallPolicy]);
//   - how background workers embed and extract without losing or duplicating
//     work (see storekit.EmbeddingStore and storekit.JobStore).
//
// This package holds what a Host author touches: the value types, the
// validation rules, the Host's ports ([Authorizer], [ContentValidator],
// [Embedder], [Extractor], [EventSink]), the typed errors and the
// content-free [Event]. The interfaces a store implements and the helpers
// store authors share live in package storekit. Nothing in it has a permissive default: a zero or
// partially filled [Limits] or [RecallPolicy] is an error, never a fallback.
//
// Every configuration and value type checks itself with one shape,
// Validate() error: the first problem comes back as a typed *Error (kind
// ErrInvalidConfig, ErrInvalidPolicy, ErrInvalidScope or ErrInvalidInput)
// whose Field names the offending field. A type nested in a larger
// configuration reports the field under the container's name through
// storekit.PrefixField. The checks a store runs on the arguments of each Store
// call name the calling operation instead, and live with the other store
// helpers in package storekit.
//
// Error strings, events and logs produced by memorykit carry identifiers,
// counts and reason codes only. They never carry memory content, query text,
// vectors, headers or provider payloads.
package memorykit
