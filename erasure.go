package memorykit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/goagents/memorykit/internal/plumbing/textrule"
)

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
// storekit.TombstoneKeyPrefix followed by 64 hex digits.
func (k *TombstoneKeyer) Digest(scope Scope, canonicalKey string) string {
	m := hmac.New(sha256.New, k.secret)
	var n [8]byte
	for _, p := range []string{scope.TenantID, string(scope.SubjectType), scope.SubjectID, canonicalKey} {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		m.Write(n[:])
		m.Write([]byte(p))
	}
	return textrule.KeyDigestPrefix + hex.EncodeToString(m.Sum(nil))
}

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
	// Digest is storekit.PurgeReportDigest of the fields above.
	Digest string
}
