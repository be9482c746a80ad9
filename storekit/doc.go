// Package storekit is the toolkit for writing a memorykit store: the
// checks every Store method runs on its arguments before it reads or
// writes anything, the record lifecycle as data, the full-text ranking
// rule, and the small deterministic helpers (batch timestamps, record IDs,
// content hashes, erase scrubbing) that make two stores behave the same.
//
// A Host never needs this package. It builds a [memorykit.WriteGuard]
// with [memorykit.NewWriteGuard] and hands it to a store's Config; the
// store then calls the functions here with that guard. Only store
// implementations (memorystore, pgstore, a third-party store) and their
// conformance suite (storetest) import storekit.
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
