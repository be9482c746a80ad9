package memorykit

import "github.com/goagents/memorykit/internal/plumbing/textrule"

// LimitsV1 returns memorykit's write bounds, version 1. Every field is set
// here explicitly and the result passes Validate; a Host may copy it and
// change any bound (the copy must still pass Validate). Changing a number
// here would change which writes are accepted, so a different set of
// bounds needs a new preset version rather than an edit of this one.
//
//   - keys up to 128 bytes, content up to 4 KiB;
//   - up to 8 metadata pairs totalling 1 KiB, up to 8 sources of 512
//     bytes each;
//   - up to 100 records per List page or store batch;
//   - extraction payloads (one finished turn) up to 64 KiB;
//   - audit reasons up to the package ceiling storekit.MaxReasonBytes.
func LimitsV1() Limits {
	return Limits{
		Version:            1,
		MaxKeyBytes:        128,
		MaxContentBytes:    4096,
		MaxMetadataEntries: 8,
		MaxMetadataBytes:   1024,
		MaxSources:         8,
		MaxSourceBytes:     512,
		MaxListSize:        100,
		MaxJobPayloadBytes: 64 << 10,
		MaxReasonBytes:     textrule.MaxReasonBytes,
	}
}
