// Package recall is memorykit's recall engine: it answers one query for one
// Scope under the Host's RecallPolicy, and is shared by the projector
// (automatic recall before a model call) and the search_memory tool.
//
// One call to [Engine.Recall] does, in order:
//
//  1. authorize PermRead for the principal on the Scope (fail closed);
//  2. sanitize the query and keep only its last MaxQueryRunes runes; its
//     full-text terms are [storekit.SearchTerms] (content terms only,
//     [storekit.TermsVersion], recorded in the Trace);
//  3. start one deadline of RecallPolicy.Deadline on the injected clock,
//     covering the query embedding and the store call together;
//  4. embed the query; a recoverable embedder failure drops only the
//     vector channel;
//  5. ask the RecallStore for the exact, full-text and vector channels in
//     one call; a recoverable vector failure drops only that channel;
//  6. check the store's answer: every record must be active, effective and
//     in the requested Scope, and every hit must name a returned record,
//     otherwise the call fails closed with ErrIntegrity;
//  7. fuse the channels with weighted Reciprocal Rank Fusion
//     ([storekit.FuseRRFAt]): equal scores go newer EffectiveFrom first,
//     then by record ID, so the same data gives the same order every run;
//  8. apply the item budget, cut long entries to MaxEntryRunes (marking
//     them truncated) and apply the token budget, skipping entries that do
//     not fit and trying smaller ones after them;
//  9. return the kept entries and a content-free [Trace].
//
// # Degradation and failure
//
// A recoverable failure of the whole store, or the recall deadline passing
// while the caller's context is still alive, is not an error: the Result is
// empty with Degraded set, a content-free event is emitted, and the caller's
// turn goes on. When the caller's own context ends, its error is returned.
// Invalid Scope, a denied authorization, invalid caps, store integrity
// violations and every other failure are returned as typed errors: recall
// fails closed and nothing is recalled.
//
// # Content
//
// Events, log entries, error strings and the Trace hold identifiers,
// counts and reason codes only: never the query, memory content or
// vectors.
package recall
