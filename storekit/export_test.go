package storekit

// Unexported checks, reachable from the external tests.
var (
	CheckContentHash = checkContentHash
	CheckLeaseTTL    = checkLeaseTTL
	CheckLeaseMax    = checkLeaseMax
	CheckJobHolder   = checkJobHolder
)
