package memorykit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// ContentHash is the hash of a record's content that decides whether an
// embedding is current: "sha256:" followed by 64 hex digits.
func ContentHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// NewRecordID returns a random record ID whose prefix sorts by creation time.
func NewRecordID(now time.Time) string {
	return "mem_" + timeRandomID(now)
}

// NewJobID returns a random job ID. Prefer ExtractionJobID when the work has
// a natural identity, so re-enqueue is a no-op.
func NewJobID(now time.Time) string {
	return "job_" + timeRandomID(now)
}

func timeRandomID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli()))
	if _, err := rand.Read(b[8:]); err != nil {
		panic("memorykit: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[2:]) // 6 bytes of milliseconds + 8 random
}

// ExtractionJobID is the deterministic identity of the extraction job for one
// unit of Host work (for example a run and turn): enqueuing it twice is a
// no-op.
func ExtractionJobID(scope Scope, workRef string) string {
	return "job_" + digest("job", scope.TenantID, string(scope.SubjectType), scope.SubjectID, workRef)
}

// CandidateID is the deterministic identity of the candidate a job proposes
// for a kind and key, so a retried job never duplicates a candidate.
func CandidateID(scope Scope, jobID string, kind Kind, canonicalKey string) string {
	return "cand_" + digest("candidate", scope.TenantID, string(scope.SubjectType), scope.SubjectID, jobID, string(kind), canonicalKey)
}

func digest(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
