package storekit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/goagents/memorykit"
)

// ReasonErased is the LastError of an extraction job that erase or purge
// scrubbed and finished.
const ReasonErased = "erased"

// ReasonErasedContent is the LastError of an unfinished extraction job
// that erase finished because its payload quoted the erased record's key
// or content (any of its versions). A worker holding its lease loses it:
// its completion, failure or hand-back is refused and stores nothing.
const ReasonErasedContent = "erased_content"

// extractionReasonPrefix starts the reason of a candidate stored by an
// extraction job (ExtractionCandidateReason).
const extractionReasonPrefix = "extraction job "

// ExtractionCandidateReason is the audit reason of a candidate an
// extraction job proposed; erase (storekit.ErasureJobIDs) reads the job
// back from it.
func ExtractionCandidateReason(jobID string) string {
	return extractionReasonPrefix + jobID
}

// PurgeReportDigest is the SHA-256 digest ("sha256:" and 64 hex digits) of
// every field of r except Digest, in a fixed encoding, so an operator can
// quote a report and later show it was not altered.
func PurgeReportDigest(r memorykit.PurgeReport) string {
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	num := func(v int64) {
		binary.BigEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	put(r.Scope.TenantID)
	put(string(r.Scope.SubjectType))
	put(r.Scope.SubjectID)
	put(string(r.Actor.Kind))
	put(r.Actor.ID)
	put(r.Reason)
	num(int64(r.Records))
	num(int64(len(r.RecordIDs)))
	for _, id := range r.RecordIDs {
		put(id)
	}
	num(int64(r.Revisions))
	num(int64(r.Embeddings))
	num(int64(r.Jobs))
	num(int64(r.QueueEntries))
	num(r.StartedAt.UnixMicro())
	num(r.FinishedAt.UnixMicro())
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Purger erases a whole project Scope: every record in every status, every
// job, every embedding. Both stores implement it.
//
// Purge erases each record not yet erased with one "purge" revision (the
// key replaced by its keyed digest, content, metadata, sources and free-
// text reasons scrubbed from the record and every revision), deletes its
// embeddings and embedding queue state, scrubs every queued or leased
// extraction job of the Scope and finishes it as a content-free tombstone
// (a leased one when its worker hands it back, dropping every proposal),
// and returns the deletion report. While a purge of the Scope is
// unfinished, writes to the Scope fail with the recoverable ErrPurging.
// Progress is stored: a purge interrupted by a cancelled context or a lost
// connection finishes on the next call, whose report is the union of both.
// Calling Purge again after it finished starts a new purge of whatever the
// Scope holds then.
type Purger interface {
	Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error)
}
