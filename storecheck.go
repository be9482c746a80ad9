package memorykit

import (
	"context"
	"math"
	"strconv"
	"time"
)

// The checks below validate the parameters of Store calls before a store
// reads or writes anything. Both stores call them first, so a malformed
// call fails with the same error, field and reason in either store; op
// names the calling operation in every error.

// CheckScopedID validates the Scope and ID of a call that reads one record
// or job (Get, Revisions, GetJob).
func CheckScopedID(op string, scope Scope, id string) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	return ValidateID(op, "id", id)
}

// CheckActiveKey validates the arguments of FindActive and returns the key
// canonicalised.
func (g *WriteGuard) CheckActiveKey(op string, scope Scope, kind Kind, key string) (string, error) {
	if err := scope.Validate(); err != nil {
		return "", err
	}
	if !kind.Valid() {
		return "", FieldError(op, "kind", "unknown")
	}
	return g.CheckKey(op, key)
}

// CheckList validates a List filter and returns it with its key
// canonicalised.
func (g *WriteGuard) CheckList(op string, f ListFilter) (ListFilter, error) {
	if err := f.Scope.Validate(); err != nil {
		return ListFilter{}, err
	}
	if err := g.CheckListLimit(op, f.Limit); err != nil {
		return ListFilter{}, err
	}
	for _, st := range f.Statuses {
		if !st.Valid() {
			return ListFilter{}, FieldError(op, "statuses", "unknown")
		}
	}
	if f.Kind != "" && !f.Kind.Valid() {
		return ListFilter{}, FieldError(op, "kind", "unknown")
	}
	if f.Key != "" {
		k, err := g.CheckKey(op, f.Key)
		if err != nil {
			return ListFilter{}, err
		}
		f.Key = k
	}
	if f.AfterID != "" {
		if err := ValidateID(op, "after_id", f.AfterID); err != nil {
			return ListFilter{}, err
		}
	}
	return f, nil
}

// CheckBatch validates a CreateBatch call as Create would validate each
// item: the batch size (CheckBatchSize), every record (CheckNew), IDs
// repeated within the batch (ErrAlreadyExists, reason "id_repeated") and
// every embedding (only on an active record, a valid profile, a vector
// that passes CheckVector with maxDims). An ActiveExpectation.KeyOwner
// condition is not taken in a batch (ErrInvalidInput). It returns the
// records checked and canonicalised, in item order, with copies of their
// metadata and sources, so what a store keeps is exactly what was
// validated. Errors carry the item's position (see BatchItemError).
func (g *WriteGuard) CheckBatch(ctx context.Context, op string, items []BatchItem, maxDims int) ([]NewRecord, error) {
	if err := g.CheckBatchSize(op, len(items)); err != nil {
		return nil, err
	}
	out := make([]NewRecord, len(items))
	seen := make(map[string]bool)
	for i, it := range items {
		in, err := g.CheckNew(ctx, op, copyBody(it.Record))
		if err != nil {
			return nil, BatchItemError(i, err)
		}
		if in.Expect != nil && in.Expect.KeyOwner != nil {
			return nil, BatchItemError(i, FieldError(op, "expect.key_owner", "unsupported_in_batch"))
		}
		if in.ID != "" {
			if seen[in.ID] {
				return nil, BatchItemError(i, NewError(op, ErrAlreadyExists, "id_repeated"))
			}
			seen[in.ID] = true
		}
		if emb := it.Embedding; emb != nil {
			if in.Status != StatusActive {
				return nil, BatchItemError(i, FieldError(op, "embedding", "record_not_active"))
			}
			if err := ValidateProfile(op, emb.Profile); err != nil {
				return nil, BatchItemError(i, err)
			}
			if err := CheckVector(op, "embedding.vector", emb.Vector, maxDims); err != nil {
				return nil, BatchItemError(i, err)
			}
		}
		out[i] = in
	}
	return out, nil
}

// copyBody gives in its own copies of its metadata and sources.
func copyBody(in NewRecord) NewRecord {
	if in.Metadata != nil {
		m := make(map[string]string, len(in.Metadata))
		for k, v := range in.Metadata {
			m[k] = v
		}
		in.Metadata = m
	}
	in.Sources = append([]Source(nil), in.Sources...)
	return in
}

// Validate checks a recall query: a valid Scope, every channel limit
// positive and, when Vector is non-nil, a valid Profile and a non-empty
// vector of finite values. A zero vector is allowed: it matches nothing.
func (q RecallQuery) Validate(op string) error {
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
			return FieldError(op, l.field, "must_be_positive")
		}
	}
	if q.Vector == nil {
		return nil
	}
	if err := ValidateProfile(op, q.Profile); err != nil {
		return err
	}
	if len(q.Vector) == 0 {
		return FieldError(op, "vector", "empty")
	}
	for _, x := range q.Vector {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return FieldError(op, "vector", "not_finite")
		}
	}
	return nil
}

// CheckContentHash validates the shape of a content hash as ContentHash
// makes it: "sha256:" and 64 lowercase hex digits. Anything else is
// reason "malformed" on field "content_hash".
func CheckContentHash(op, hash string) error {
	const prefix = "sha256:"
	if len(hash) != len(prefix)+64 || hash[:len(prefix)] != prefix {
		return FieldError(op, "content_hash", "malformed")
	}
	for i := len(prefix); i < len(hash); i++ {
		c := hash[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return FieldError(op, "content_hash", "malformed")
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
		return FieldError(op, field, "empty")
	}
	if maxDims > 0 && len(v) > maxDims {
		return FieldError(op, field, "too_many_dimensions")
	}
	zero := true
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return FieldError(op, field, "not_finite")
		}
		if x != 0 {
			zero = false
		}
	}
	if zero {
		return FieldError(op, field, "zero_vector")
	}
	return nil
}

// CheckLeaseTTL validates a lease duration: positive, and at least a
// microsecond, the stores' time precision.
func CheckLeaseTTL(op string, ttl time.Duration) error {
	if ttl <= 0 {
		return FieldError(op, "ttl", "must_be_positive")
	}
	if ttl < time.Microsecond {
		return FieldError(op, "ttl", "below_precision")
	}
	return nil
}

// CheckLeaseMax validates how many items one lease call may take (field
// "max"): 1..Limits.MaxListSize.
func (g *WriteGuard) CheckLeaseMax(op string, max int) error {
	if max <= 0 {
		return FieldError(op, "max", "must_be_positive")
	}
	if max > g.limits.MaxListSize {
		return FieldError(op, "max", "above_max_list_size")
	}
	return nil
}

// CheckEmbeddingLease validates a LeaseEmbeddings call: profile, worker
// ID, TTL (CheckLeaseTTL) and batch size (CheckLeaseMax).
func (g *WriteGuard) CheckEmbeddingLease(op string, p EmbeddingLease) error {
	if err := ValidateProfile(op, p.Profile); err != nil {
		return err
	}
	if p.Scope != nil {
		if err := p.Scope.Validate(); err != nil {
			return err
		}
	}
	return g.checkLease(op, p.WorkerID, p.TTL, p.Max)
}

// CheckJobLease validates a LeaseJobs call: worker ID, TTL (CheckLeaseTTL)
// and batch size (CheckLeaseMax).
func (g *WriteGuard) CheckJobLease(op string, p JobLease) error {
	return g.checkLease(op, p.WorkerID, p.TTL, p.Max)
}

func (g *WriteGuard) checkLease(op, workerID string, ttl time.Duration, max int) error {
	if err := ValidateID(op, "worker_id", workerID); err != nil {
		return err
	}
	if err := CheckLeaseTTL(op, ttl); err != nil {
		return err
	}
	return g.CheckLeaseMax(op, max)
}

// checkEmbeddingRef validates what names one leased embedding: the
// record's Scope and ID, the profile, the content hash and the worker.
func checkEmbeddingRef(op string, scope Scope, recordID, profile, hash, workerID string) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if err := ValidateID(op, "record_id", recordID); err != nil {
		return err
	}
	if err := ValidateProfile(op, profile); err != nil {
		return err
	}
	if err := CheckContentHash(op, hash); err != nil {
		return err
	}
	return ValidateID(op, "worker_id", workerID)
}

// Validate checks a PutEmbedding call: the record's Scope and ID, the
// profile, the content hash (CheckContentHash), the worker ID and the
// vector (CheckVector with maxDims, field "vector").
func (p EmbeddingPut) Validate(op string, maxDims int) error {
	if err := checkEmbeddingRef(op, p.Scope, p.RecordID, p.Profile, p.ContentHash, p.WorkerID); err != nil {
		return err
	}
	if p.LeaseToken < 0 {
		return FieldError(op, "lease_token", "negative")
	}
	return CheckVector(op, "vector", p.Vector, maxDims)
}

// Validate checks a ReleaseEmbedding call: the record's Scope and ID, the
// profile, the content hash (CheckContentHash), the worker ID and the
// reason code (CheckReasonCode).
func (r EmbeddingRelease) Validate(op string) error {
	if err := checkEmbeddingRef(op, r.Scope, r.RecordID, r.Profile, r.ContentHash, r.WorkerID); err != nil {
		return err
	}
	if err := CheckLeaseToken(op, r.LeaseToken); err != nil {
		return err
	}
	return CheckReasonCode(op, r.Reason)
}

// CheckJob validates an EnqueueJob call: the Scope, the job ID, a positive
// MaxAttempts and MaxReaps and the payload (CheckPayload).
func (g *WriteGuard) CheckJob(op string, j NewJob) error {
	if err := j.Scope.Validate(); err != nil {
		return err
	}
	if err := ValidateID(op, "id", j.ID); err != nil {
		return err
	}
	if j.MaxAttempts <= 0 {
		return FieldError(op, "max_attempts", "must_be_positive")
	}
	if j.MaxReaps <= 0 {
		return FieldError(op, "max_reaps", "must_be_positive")
	}
	if j.RunRef != "" {
		if err := CheckRunRef(op, j.RunRef); err != nil {
			return err
		}
	}
	return g.CheckPayload(op, j.Payload)
}

// CheckJobHolder validates the job and worker IDs of a call the lease
// holder makes (ReleaseJob; CompleteJob and FailJob through their own
// checks).
func CheckJobHolder(op, jobID, workerID string) error {
	if err := ValidateID(op, "job_id", jobID); err != nil {
		return err
	}
	return ValidateID(op, "worker_id", workerID)
}

// CheckLeaseToken validates the fencing token a lease holder's call
// carries: it must be positive (field "lease_token").
func CheckLeaseToken(op string, token int64) error {
	if token <= 0 {
		return FieldError(op, "lease_token", "must_be_positive")
	}
	return nil
}

// Validate checks a ReleaseJob call: the job and worker IDs and the
// lease token.
func (r JobRelease) Validate(op string) error {
	if err := CheckJobHolder(op, r.JobID, r.WorkerID); err != nil {
		return err
	}
	return CheckLeaseToken(op, r.LeaseToken)
}

// CheckJobCompletion validates a CompleteJob call before the job is read:
// the job and worker IDs and at most Limits.MaxListSize candidates. Each
// candidate is checked with CheckCandidate once the job's Scope is known.
func (g *WriteGuard) CheckJobCompletion(op string, c JobCompletion) error {
	if err := CheckJobHolder(op, c.JobID, c.WorkerID); err != nil {
		return err
	}
	if err := CheckLeaseToken(op, c.LeaseToken); err != nil {
		return err
	}
	if len(c.Candidates) > g.limits.MaxListSize {
		return FieldError(op, "candidates", "above_max_list_size")
	}
	return nil
}

// CheckCandidate validates candidate i of a completion of a job in
// jobScope: it must have status candidate (else field
// "candidates[i].status") and the job's Scope (else "candidates[i].scope"),
// and pass CheckNew, whose errors are returned as they are. It returns the
// record canonicalised, with copies of its metadata and sources.
func (g *WriteGuard) CheckCandidate(ctx context.Context, op string, i int, jobScope Scope, in NewRecord) (NewRecord, error) {
	field := "candidates[" + strconv.Itoa(i) + "]"
	if in.Status != StatusCandidate {
		return NewRecord{}, FieldError(op, field+".status", "must_be_candidate")
	}
	if in.Scope != jobScope {
		return NewRecord{}, FieldError(op, field+".scope", "not_job_scope")
	}
	return g.CheckNew(ctx, op, copyBody(in))
}

// Validate checks a FailJob call: the job and worker IDs and the reason
// code (CheckReasonCode).
func (f JobFailure) Validate(op string) error {
	if err := CheckJobHolder(op, f.JobID, f.WorkerID); err != nil {
		return err
	}
	if err := CheckLeaseToken(op, f.LeaseToken); err != nil {
		return err
	}
	return CheckReasonCode(op, f.Reason)
}

// CheckRunRef validates a run reference (field "run_ref"): 1 to MaxIDBytes
// bytes of ASCII letters, digits and ". _ - : @ /".
func CheckRunRef(op, ref string) error {
	if ref == "" {
		return FieldError(op, "run_ref", "empty")
	}
	if len(ref) > MaxIDBytes {
		return FieldError(op, "run_ref", "too_long")
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-', c == ':', c == '@', c == '/':
		default:
			return FieldError(op, "run_ref", "bad_character")
		}
	}
	return nil
}
