package storekit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/goagents/memorykit"
)

// ExtractionJobID is the deterministic identity of the extraction job for one
// unit of Host work (for example a run and turn): enqueuing it twice is a
// no-op.
func ExtractionJobID(scope memorykit.Scope, workRef string) string {
	return "job_" + digest("job", scope.TenantID, string(scope.SubjectType), scope.SubjectID, workRef)
}

// CheckRunRef validates a Host's run reference (field "run_ref"), such as
// "run-42/turn-3": 1 to MaxIDBytes bytes of ASCII letters, digits and
// ". _ - : @ /".
func CheckRunRef(op, ref string) error {
	if ref == "" {
		return memorykit.FieldError(op, "run_ref", "empty")
	}
	if len(ref) > MaxIDBytes {
		return memorykit.FieldError(op, "run_ref", "too_long")
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-', c == ':', c == '@', c == '/':
		default:
			return memorykit.FieldError(op, "run_ref", "bad_character")
		}
	}
	return nil
}

// CandidateID is the deterministic identity of the candidate a job proposes
// for a kind and key, so a retried job never duplicates a candidate.
func CandidateID(scope memorykit.Scope, jobID string, kind memorykit.Kind, canonicalKey string) string {
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
