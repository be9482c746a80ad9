// Package storekit is the toolkit for writing a memorykit store. It holds
//
//   - the ports a store implements: [Store] and its parts
//     ([LifecycleStore], [RecallStore], [EmbeddingStore], [JobStore]) with
//     their argument and result types, and the optional [Purger],
//     [BatchCreator], [EmbeddingBatchPutter] and [ScopedPendingCounter];
//   - the checks every Store method runs on its arguments before it reads
//     or writes anything ([ValidateID], [CheckReason], [CheckList], ...),
//     and the record lifecycle as data;
//   - the text rules two stores must share: key canonicalisation
//     ([NormalizeKey]), full-text terms ([SearchTerms], [IndexTerms],
//     [ExactKeys]), the ranking rules ([FullTextRule], [FuseRRF]);
//   - the small deterministic helpers (job and candidate IDs, batch
//     timestamps, record IDs, content hashes, erase scrubbing, purge report
//     digests) that make two stores behave the same;
//   - [Contain] and [PrefixField], which turn an error from a part the
//     caller does not own into a content-free *memorykit.Error.
//
// A Host wiring a store needs little here: it builds a
// [memorykit.WriteGuard] with [memorykit.NewWriteGuard], hands it to a
// store's Config, and passes the store (a [Store]) to the runtime. At its
// own API boundary a Host may reuse the checks ([ValidateID], [IsBlank],
// [CheckReasonCode]) to refuse early what the stores would refuse, as
// examples/host-api does. Store implementations (memorystore, sqlitestore,
// pgstore, a third-party store), their conformance suite (storetest),
// adapters and memorykit's own packages are the main users.
//
// # Where the WriteGuard lives
//
// WriteGuard and NewWriteGuard stay in package memorykit because a Host
// constructs the guard (from its Limits and its ContentValidator) and
// because code outside the stores applies the write rules too: the
// extraction worker and the runtime's import check proposals with
// [memorykit.WriteGuard.CheckNew] before they reach a store. The guard
// keeps the rules that read its private parts (limits on keys, reasons,
// payloads and bodies, and the call into the Host's validator). Every
// check on the shape of one Store call (list filters, batches, leases,
// jobs, completions, corrections, lifecycle actions) is a function here
// that takes the guard as an argument. storekit imports memorykit, never
// the other way round.
//
// # Errors
//
// Every check returns a typed *memorykit.Error whose Op is the op string
// the store passes (for example "pgstore.create"), so a malformed call
// fails with the same kind, field and reason in every store.
package storekit
