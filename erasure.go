package memorykit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// MinTombstoneSecretBytes is the shortest secret NewTombstoneKeyer accepts.
const MinTombstoneSecretBytes = 32

// TombstoneKeyPrefix starts every keyed key digest (see TombstoneKeyer).
const TombstoneKeyPrefix = "hmac-sha256:"

// ReasonErased is the LastError of an extraction job that erase or purge
// scrubbed and finished.
const ReasonErased = "erased"

// ReasonErasedContent is the LastError of an unfinished extraction job
// that erase finished because its payload quoted the erased record's key
// or content (any of its versions). A worker holding its lease loses it:
// its completion, failure or hand-back is refused and stores nothing.
const ReasonErasedContent = "erased_content"

// ErrPurging is the kind of a write refused because a purge of its Scope
// is running or was interrupted and not yet finished. It is always
// recoverable: the write may be tried again once the purge is done.
var ErrPurging = errors.New("purging")

// TombstoneKeyer turns a canonical key into the keyed digest an erased
// tombstone keeps in place of the key: HMAC-SHA256 under a secret the Host
// provides, over the Scope and the key. Two tombstones of one Scope with the
// same key carry the same digest, so an audit can tell they were the same
// key; without the secret the digest cannot be tested against guessed keys,
// and digests of different Scopes cannot be linked.
type TombstoneKeyer struct {
	secret []byte
}

// NewTombstoneKeyer keeps a copy of secret, which must hold at least
// MinTombstoneSecretBytes bytes. There is no default secret: a missing or
// short one is ErrInvalidConfig.
func NewTombstoneKeyer(secret []byte) (*TombstoneKeyer, error) {
	const op = "tombstonekeyer.new"
	if len(secret) == 0 {
		return nil, ConfigError(op, "secret", "missing")
	}
	if len(secret) < MinTombstoneSecretBytes {
		return nil, ConfigError(op, "secret", "too_short")
	}
	return &TombstoneKeyer{secret: append([]byte(nil), secret...)}, nil
}

// Digest returns the keyed digest of a canonical key in scope:
// TombstoneKeyPrefix followed by 64 hex digits.
func (k *TombstoneKeyer) Digest(scope Scope, canonicalKey string) string {
	m := hmac.New(sha256.New, k.secret)
	var n [8]byte
	for _, p := range []string{scope.TenantID, string(scope.SubjectType), scope.SubjectID, canonicalKey} {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		m.Write(n[:])
		m.Write([]byte(p))
	}
	return TombstoneKeyPrefix + hex.EncodeToString(m.Sum(nil))
}

// IsKeyDigest reports whether s has the shape of a TombstoneKeyer digest.
func IsKeyDigest(s string) bool {
	if !strings.HasPrefix(s, TombstoneKeyPrefix) || len(s) != len(TombstoneKeyPrefix)+64 {
		return false
	}
	_, err := hex.DecodeString(s[len(TombstoneKeyPrefix):])
	return err == nil
}

// extractionReasonPrefix starts the reason of a candidate stored by an
// extraction job (ExtractionCandidateReason).
const extractionReasonPrefix = "extraction job "

// ExtractionCandidateReason is the audit reason of a candidate an
// extraction job proposed; erase (storekit.ErasureJobIDs) reads the job
// back from it.
func ExtractionCandidateReason(jobID string) string {
	return extractionReasonPrefix + jobID
}

// ActionPurge erases a record as part of a project purge (Purger). It may
// start from any status but erased.
const ActionPurge Action = "purge"

// PurgeReport is the deletion report of a project purge. It holds ids,
// counts and times only.
type PurgeReport struct {
	Scope Scope
	// Actor and Reason (a reason code) are the purge's.
	Actor  Actor
	Reason string
	// Records erased by this purge, and RecordIDs their ids, sorted.
	Records   int
	RecordIDs []string
	// Revisions counts revision rows scrubbed or written (the purge
	// revision of each record included).
	Revisions int
	// Embeddings counts vectors deleted.
	Embeddings int
	// Jobs counts the Scope's extraction jobs the purge changed, each
	// once: unfinished ones it scrubbed (queued or leased when the purge
	// reached them), and finished ones whose run reference it dropped
	// (their content-free tombstone is kept). A job erase had already
	// scrubbed and stripped is not counted again.
	Jobs int
	// QueueEntries counts embedding queue, lease, retry and park entries
	// removed.
	QueueEntries int
	// StartedAt is when the purge first started (an interrupted purge
	// keeps it when resumed); FinishedAt when it finished. Both come from
	// the store's clock.
	StartedAt  time.Time
	FinishedAt time.Time
	// Digest is PurgeReportDigest of the fields above.
	Digest string
}

// PurgeReportDigest is the SHA-256 digest ("sha256:" and 64 hex digits) of
// every field of r except Digest, in a fixed encoding, so an operator can
// quote a report and later show it was not altered.
func PurgeReportDigest(r PurgeReport) string {
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
	Purge(ctx context.Context, scope Scope, actor Actor, reason string) (PurgeReport, error)
}
