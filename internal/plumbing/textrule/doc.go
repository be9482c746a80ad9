// Package textrule holds memorykit's text rules: key canonicalisation,
// the full-text term rule, token estimates, the blank-content rule and
// the shape checks of identifiers, profiles, run references, reason codes
// and stored text. They are plain functions that return values or reason
// codes, never errors, so both the root package (which builds its own
// *memorykit.Error from a reason code) and storekit (which exports them to
// store authors) use one implementation.
package textrule
