package storekit

import (
	"math"

	"github.com/goagents/memorykit"
)

// The checks below validate the parameters of Store calls before a store
// reads or writes anything. op names the calling operation in every error.

// CheckScopedID validates the Scope and ID of a call that reads one record
// or job (Get, Revisions, GetJob).
func CheckScopedID(op string, scope memorykit.Scope, id string) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	return ValidateID(op, "id", id)
}

// CheckTransition validates the common fields of a lifecycle action: the
// Scope, the record ID, the actor, a non-negative expected version and the
// reason ([CheckReason]).
func CheckTransition(op string, t Transition) error {
	if err := t.Scope.Validate(); err != nil {
		return err
	}
	if err := ValidateID(op, "id", t.ID); err != nil {
		return err
	}
	if err := t.Actor.Validate(); err != nil {
		return err
	}
	if t.ExpectVersion < 0 {
		return memorykit.FieldError(op, "expect_version", "negative")
	}
	return CheckReason(op, t.Reason)
}

// CheckPurge validates a Purge call: the Scope, the actor and a reason
// code.
func CheckPurge(op string, scope memorykit.Scope, actor memorykit.Actor, reason string) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if err := actor.Validate(); err != nil {
		return err
	}
	return CheckReasonCode(op, reason)
}

// CheckRecallQuery checks a recall query: a valid Scope, every channel
// limit positive and, when Vector is non-nil, a valid Profile and a
// non-empty vector of finite values. A zero vector is allowed: it matches
// nothing.
func CheckRecallQuery(op string, q RecallQuery) error {
	if err := q.Scope.Validate(); err != nil {
		return err
	}
	limits := []struct {
		field string
		n     int
	}{
		{"exact_limit", q.ExactLimit},
		{"full_text_limit", q.FullTextLimit},
		{"vector_limit", q.VectorLimit},
	}
	for _, l := range limits {
		if l.n <= 0 {
			return memorykit.FieldError(op, l.field, "must_be_positive")
		}
	}
	if q.Vector == nil {
		return nil
	}
	if err := ValidateProfile(op, q.Profile); err != nil {
		return err
	}
	if len(q.Vector) == 0 {
		return memorykit.FieldError(op, "vector", "empty")
	}
	for _, x := range q.Vector {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return memorykit.FieldError(op, "vector", "not_finite")
		}
	}
	return nil
}

// checkContentHash validates the shape of a content hash as ContentHash
// makes it: "sha256:" and 64 lowercase hex digits. Anything else is
// reason "malformed" on field "content_hash".
func checkContentHash(op, hash string) error {
	const prefix = "sha256:"
	if len(hash) != len(prefix)+64 || hash[:len(prefix)] != prefix {
		return memorykit.FieldError(op, "content_hash", "malformed")
	}
	for i := len(prefix); i < len(hash); i++ {
		c := hash[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return memorykit.FieldError(op, "content_hash", "malformed")
		}
	}
	return nil
}

// CheckVector rejects a vector to be stored that no store can compare:
// empty, longer than maxDims, with a NaN or infinite component, or all
// zeros (cosine similarity is undefined for it). maxDims is the backend's
// bound on dimensions (pgvector's, for pgstore); a backend without one
// passes 0, which sets no bound. field names the input in errors.
func CheckVector(op, field string, v []float32, maxDims int) error {
	if len(v) == 0 {
		return memorykit.FieldError(op, field, "empty")
	}
	if maxDims > 0 && len(v) > maxDims {
		return memorykit.FieldError(op, field, "too_many_dimensions")
	}
	zero := true
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return memorykit.FieldError(op, field, "not_finite")
		}
		if x != 0 {
			zero = false
		}
	}
	if zero {
		return memorykit.FieldError(op, field, "zero_vector")
	}
	return nil
}

// checkEmbeddingRef validates what names one leased embedding: the
// record's Scope and ID, the profile, the content hash and the worker.
func checkEmbeddingRef(op string, scope memorykit.Scope, recordID, profile, hash, workerID string) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if err := ValidateID(op, "record_id", recordID); err != nil {
		return err
	}
	if err := ValidateProfile(op, profile); err != nil {
		return err
	}
	if err := checkContentHash(op, hash); err != nil {
		return err
	}
	return ValidateID(op, "worker_id", workerID)
}

// CheckEmbeddingPut checks a PutEmbedding call: the record's Scope and ID,
// the profile, the content hash ("sha256:" and 64 lowercase hex digits),
// the worker ID, a non-negative lease token and the vector (CheckVector
// with maxDims, field "vector").
func CheckEmbeddingPut(op string, p EmbeddingPut, maxDims int) error {
	if err := checkEmbeddingRef(op, p.Scope, p.RecordID, p.Profile, p.ContentHash, p.WorkerID); err != nil {
		return err
	}
	if p.LeaseToken < 0 {
		return memorykit.FieldError(op, "lease_token", "negative")
	}
	return CheckVector(op, "vector", p.Vector, maxDims)
}

// CheckEmbeddingRelease checks a ReleaseEmbedding call: the record's Scope
// and ID, the profile, the content hash, the worker ID, a positive lease
// token and the reason code ([CheckReasonCode]).
func CheckEmbeddingRelease(op string, r EmbeddingRelease) error {
	if err := checkEmbeddingRef(op, r.Scope, r.RecordID, r.Profile, r.ContentHash, r.WorkerID); err != nil {
		return err
	}
	if err := checkLeaseToken(op, r.LeaseToken); err != nil {
		return err
	}
	return CheckReasonCode(op, r.Reason)
}

// checkJobHolder validates the job and worker IDs of a call the lease
// holder makes.
func checkJobHolder(op, jobID, workerID string) error {
	if err := ValidateID(op, "job_id", jobID); err != nil {
		return err
	}
	return ValidateID(op, "worker_id", workerID)
}

// checkLeaseToken validates the fencing token a lease holder's call
// carries: it must be positive (field "lease_token").
func checkLeaseToken(op string, token int64) error {
	if token <= 0 {
		return memorykit.FieldError(op, "lease_token", "must_be_positive")
	}
	return nil
}

// CheckJobRelease checks a ReleaseJob call: the job and worker IDs and the
// lease token.
func CheckJobRelease(op string, r JobRelease) error {
	if err := checkJobHolder(op, r.JobID, r.WorkerID); err != nil {
		return err
	}
	return checkLeaseToken(op, r.LeaseToken)
}

// CheckJobFailure checks a FailJob call: the job and worker IDs, the lease
// token and the reason code ([CheckReasonCode]).
func CheckJobFailure(op string, f JobFailure) error {
	if err := checkJobHolder(op, f.JobID, f.WorkerID); err != nil {
		return err
	}
	if err := checkLeaseToken(op, f.LeaseToken); err != nil {
		return err
	}
	return CheckReasonCode(op, f.Reason)
}
