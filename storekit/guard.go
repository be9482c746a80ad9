package storekit

import (
	"context"
	"strconv"
	"time"

	"github.com/goagents/memorykit"
)

// CheckActiveKey validates the arguments of FindActive and returns the key
// canonicalised.
func CheckActiveKey(g *memorykit.WriteGuard, op string, scope memorykit.Scope, kind memorykit.Kind, key string) (string, error) {
	if err := scope.Validate(); err != nil {
		return "", err
	}
	if !kind.Valid() {
		return "", memorykit.FieldError(op, "kind", "unknown")
	}
	return g.CheckKey(op, key)
}

// CheckList validates a List filter and returns it with its key
// canonicalised.
func CheckList(g *memorykit.WriteGuard, op string, f ListFilter) (ListFilter, error) {
	if err := f.Scope.Validate(); err != nil {
		return ListFilter{}, err
	}
	if err := checkListLimit(g, op, f.Limit); err != nil {
		return ListFilter{}, err
	}
	for _, st := range f.Statuses {
		if !st.Valid() {
			return ListFilter{}, memorykit.FieldError(op, "statuses", "unknown")
		}
	}
	if f.Kind != "" && !f.Kind.Valid() {
		return ListFilter{}, memorykit.FieldError(op, "kind", "unknown")
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

// checkListLimit validates a List limit against MaxListSize.
func checkListLimit(g *memorykit.WriteGuard, op string, n int) error {
	if n <= 0 {
		return memorykit.FieldError(op, "limit", "must_be_positive")
	}
	if n > g.Limits().MaxListSize {
		return memorykit.FieldError(op, "limit", "above_max_list_size")
	}
	return nil
}

// CheckBatch validates a CreateBatch call as Create would validate each
// item: the batch size (CheckBatchSize), every record
// ([memorykit.WriteGuard.CheckNew]), IDs repeated within the batch
// (ErrAlreadyExists, reason "id_repeated") and every embedding (only on an
// active record, a valid profile, a vector that passes CheckVector with
// maxDims). An ActiveExpectation.KeyOwner condition is not taken in a
// batch (ErrInvalidInput). It returns the records checked and
// canonicalised, in item order, with copies of their metadata and
// sources, so what a store keeps is exactly what was validated. Errors
// carry the item's position (see BatchItemError).
func CheckBatch(ctx context.Context, g *memorykit.WriteGuard, op string, items []BatchItem, maxDims int) ([]memorykit.NewRecord, error) {
	if err := CheckBatchSize(g, op, len(items)); err != nil {
		return nil, err
	}
	out := make([]memorykit.NewRecord, len(items))
	seen := make(map[string]bool)
	for i, it := range items {
		in, err := g.CheckNew(ctx, op, copyBody(it.Record))
		if err != nil {
			return nil, BatchItemError(i, err)
		}
		if in.Expect != nil && in.Expect.KeyOwner != nil {
			return nil, BatchItemError(i, memorykit.FieldError(op, "expect.key_owner", "unsupported_in_batch"))
		}
		if in.ID != "" {
			if seen[in.ID] {
				return nil, BatchItemError(i, memorykit.NewError(op, memorykit.ErrAlreadyExists, "id_repeated"))
			}
			seen[in.ID] = true
		}
		if emb := it.Embedding; emb != nil {
			if in.Status != memorykit.StatusActive {
				return nil, BatchItemError(i, memorykit.FieldError(op, "embedding", "record_not_active"))
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

// CheckBatchSize validates a batch's length against Limits.MaxListSize.
func CheckBatchSize(g *memorykit.WriteGuard, op string, n int) error {
	if n > g.Limits().MaxListSize {
		return memorykit.FieldError(op, "items", "above_max_list_size")
	}
	return nil
}

// copyBody gives in its own copies of its metadata and sources.
func copyBody(in memorykit.NewRecord) memorykit.NewRecord {
	if in.Metadata != nil {
		m := make(map[string]string, len(in.Metadata))
		for k, v := range in.Metadata {
			m[k] = v
		}
		in.Metadata = m
	}
	in.Sources = append([]memorykit.Source(nil), in.Sources...)
	return in
}

// CheckCorrection validates a correction of a record whose kind and key are
// given (the store looks them up before calling): the common fields
// (CheckTransition), the reason and the new body, which the Host's
// ContentValidator sees.
func CheckCorrection(ctx context.Context, g *memorykit.WriteGuard, op string, kind memorykit.Kind, key string, c Correction) error {
	if err := CheckTransition(op, c.Transition); err != nil {
		return err
	}
	if err := g.CheckReason(op, c.Reason); err != nil {
		return err
	}
	return g.CheckContent(ctx, op, memorykit.ContentCheck{
		Scope: c.Scope, Kind: kind, Key: key, Content: c.Content,
		Metadata: c.Metadata, Sources: c.Sources, Origin: c.Actor,
		Action: memorykit.ActionCorrect, Reason: c.Reason,
	})
}

// CheckAction validates a lifecycle action that stores no content
// (activate, reject, forget, erase): the common fields (CheckTransition),
// then the reason as [memorykit.WriteGuard.CheckActionReason] does. Stores
// call it before they read or write anything, so a refused action changes
// nothing.
func CheckAction(ctx context.Context, g *memorykit.WriteGuard, op string, action memorykit.Action, t Transition) error {
	if err := CheckTransition(op, t); err != nil {
		return err
	}
	return g.CheckActionReason(ctx, op, action, t.Scope, t.Actor, t.Reason)
}

// CheckEmbeddingLease validates a LeaseEmbeddings call: profile, optional
// Scope, worker ID, TTL (positive, at least a microsecond) and batch size
// (1..Limits.MaxListSize, field "max").
func CheckEmbeddingLease(g *memorykit.WriteGuard, op string, p EmbeddingLease) error {
	if err := ValidateProfile(op, p.Profile); err != nil {
		return err
	}
	if p.Scope != nil {
		if err := p.Scope.Validate(); err != nil {
			return err
		}
	}
	return checkLease(g, op, p.WorkerID, p.TTL, p.Max)
}

// CheckJobLease validates a LeaseJobs call: worker ID, TTL and batch size
// as CheckEmbeddingLease checks them.
func CheckJobLease(g *memorykit.WriteGuard, op string, p JobLease) error {
	return checkLease(g, op, p.WorkerID, p.TTL, p.Max)
}

func checkLease(g *memorykit.WriteGuard, op, workerID string, ttl time.Duration, max int) error {
	if err := ValidateID(op, "worker_id", workerID); err != nil {
		return err
	}
	if err := checkLeaseTTL(op, ttl); err != nil {
		return err
	}
	return checkLeaseMax(g, op, max)
}

// checkLeaseTTL validates a lease duration: positive, and at least a
// microsecond, the stores' time precision.
func checkLeaseTTL(op string, ttl time.Duration) error {
	if ttl <= 0 {
		return memorykit.FieldError(op, "ttl", "must_be_positive")
	}
	if ttl < time.Microsecond {
		return memorykit.FieldError(op, "ttl", "below_precision")
	}
	return nil
}

// checkLeaseMax validates how many items one lease call may take (field
// "max"): 1..Limits.MaxListSize.
func checkLeaseMax(g *memorykit.WriteGuard, op string, max int) error {
	if max <= 0 {
		return memorykit.FieldError(op, "max", "must_be_positive")
	}
	if max > g.Limits().MaxListSize {
		return memorykit.FieldError(op, "max", "above_max_list_size")
	}
	return nil
}

// CheckJob validates an EnqueueJob call: the Scope, the job ID, a positive
// MaxAttempts and MaxReaps, the run reference when given
// ([CheckRunRef]), and the payload
// ([memorykit.WriteGuard.CheckPayload]).
func CheckJob(g *memorykit.WriteGuard, op string, j NewJob) error {
	if err := j.Scope.Validate(); err != nil {
		return err
	}
	if err := ValidateID(op, "id", j.ID); err != nil {
		return err
	}
	if j.MaxAttempts <= 0 {
		return memorykit.FieldError(op, "max_attempts", "must_be_positive")
	}
	if j.MaxReaps <= 0 {
		return memorykit.FieldError(op, "max_reaps", "must_be_positive")
	}
	if j.RunRef != "" {
		if err := CheckRunRef(op, j.RunRef); err != nil {
			return err
		}
	}
	return g.CheckPayload(op, j.Payload)
}

// CheckJobCompletion validates a CompleteJob call before the job is read:
// the job and worker IDs, the lease token and at most Limits.MaxListSize
// candidates. Each candidate is checked with CheckCandidate once the job's
// Scope is known.
func CheckJobCompletion(g *memorykit.WriteGuard, op string, c JobCompletion) error {
	if err := checkJobHolder(op, c.JobID, c.WorkerID); err != nil {
		return err
	}
	if err := checkLeaseToken(op, c.LeaseToken); err != nil {
		return err
	}
	if len(c.Candidates) > g.Limits().MaxListSize {
		return memorykit.FieldError(op, "candidates", "above_max_list_size")
	}
	return nil
}

// CheckCandidate validates candidate i of a completion of a job in
// jobScope: it must have status candidate (else field
// "candidates[i].status") and the job's Scope (else "candidates[i].scope"),
// and pass [memorykit.WriteGuard.CheckNew], whose errors are returned as
// they are. It returns the record canonicalised, with copies of its
// metadata and sources.
func CheckCandidate(ctx context.Context, g *memorykit.WriteGuard, op string, i int, jobScope memorykit.Scope, in memorykit.NewRecord) (memorykit.NewRecord, error) {
	field := "candidates[" + strconv.Itoa(i) + "]"
	if in.Status != memorykit.StatusCandidate {
		return memorykit.NewRecord{}, memorykit.FieldError(op, field+".status", "must_be_candidate")
	}
	if in.Scope != jobScope {
		return memorykit.NewRecord{}, memorykit.FieldError(op, field+".scope", "not_job_scope")
	}
	return g.CheckNew(ctx, op, copyBody(in))
}
