package memorystore

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// EnqueueJob implements storekit.JobStore.
func (s *Store) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	const op = "memorystore.enqueue_job"
	if err := live(ctx, op); err != nil {
		return storekit.Job{}, err
	}
	if err := storekit.CheckJob(s.guard, op, j); err != nil {
		return storekit.Job{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return storekit.Job{}, err
	}
	if s.purges[j.Scope] != nil {
		return storekit.Job{}, storekit.PurgingError(op)
	}
	if old := s.jobs[j.ID]; old != nil {
		err := memorykit.NewError(op, memorykit.ErrAlreadyExists, "id_taken")
		if old.Scope == j.Scope {
			return *old, err
		}
		return storekit.Job{}, err
	}
	now := s.now()
	job := &storekit.Job{
		ID:          j.ID,
		Scope:       j.Scope,
		RunRef:      j.RunRef,
		Payload:     j.Payload,
		State:       storekit.JobQueued,
		MaxAttempts: j.MaxAttempts,
		MaxReaps:    j.MaxReaps,
		AvailableAt: now,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	s.jobs[j.ID] = job
	s.changedJob(j.ID)
	return *job, nil
}

// nextLeaseToken issues a fencing token; s.mu is held.
func (s *Store) nextLeaseToken() int64 {
	s.leaseSeq++
	return s.leaseSeq
}

func clearLease(job *storekit.Job) {
	job.LeasedBy = ""
	job.LeaseExpiresAt = time.Time{}
}

// tombstone ends a job for good, keeping only content-free fields.
func tombstone(job *storekit.Job, state storekit.JobState) {
	job.State = state
	job.Payload = ""
	clearLease(job)
}

// LeaseJobs implements storekit.JobStore.
func (s *Store) LeaseJobs(ctx context.Context, p storekit.JobLease) ([]storekit.Job, error) {
	const op = "memorystore.lease_jobs"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckJobLease(s.guard, op, p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	now := s.now()
	var ready []*storekit.Job
	for _, j := range s.jobs {
		if j.State == storekit.JobQueued && !j.AvailableAt.After(now) {
			ready = append(ready, j)
		}
	}
	sort.Slice(ready, func(i, k int) bool {
		a, b := ready[i], ready[k]
		if !a.AvailableAt.Equal(b.AvailableAt) {
			return a.AvailableAt.Before(b.AvailableAt)
		}
		return a.ID < b.ID
	})
	if len(ready) > p.Max {
		ready = ready[:p.Max]
	}
	expiry := stamp(now.Add(p.TTL))
	out := make([]storekit.Job, 0, len(ready))
	for _, j := range ready {
		s.changedJob(j.ID)
		j.State = storekit.JobLeased
		j.Attempt++
		j.LeasedBy = p.WorkerID
		j.LeaseExpiresAt = expiry
		j.LeaseToken = s.nextLeaseToken()
		j.UpdatedAt = now
		out = append(out, *j)
	}
	return out, nil
}

// CompleteJob implements storekit.JobStore. Every candidate is checked
// (shape, Scope, Limits and the Host's validator) before anything is
// stored; one bad candidate fails the whole completion and the job stays
// leased.
func (s *Store) CompleteJob(ctx context.Context, c storekit.JobCompletion) (int, error) {
	const op = "memorystore.complete_job"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	if err := storekit.CheckJobCompletion(s.guard, op, c); err != nil {
		return 0, err
	}
	s.mu.RLock()
	job := s.jobs[c.JobID]
	var scope memorykit.Scope
	var err error
	switch {
	case job == nil:
		err = notFound(op)
	default:
		err = job.CheckLease(op, c.WorkerID, c.LeaseToken, s.now())
		scope = job.Scope
	}
	s.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	checked := make([]memorykit.NewRecord, len(c.Candidates))
	for i, in := range c.Candidates {
		nc, err := storekit.CheckCandidate(ctx, s.guard, op, i, scope, in)
		if err != nil {
			return 0, err
		}
		checked[i] = nc
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	now := s.now()
	job = s.jobs[c.JobID]
	if err := job.CheckLease(op, c.WorkerID, c.LeaseToken, now); err != nil {
		return 0, err
	}
	if _, marked := s.jobErased[job.ID]; !marked && len(checked) > 0 && s.purges[job.Scope] != nil {
		return 0, storekit.PurgingError(op)
	}
	checked, _ = s.erasedCompletion(job, checked)
	for i, in := range checked {
		from, until := stamp(in.EffectiveFrom), stamp(in.EffectiveUntil)
		if from.IsZero() {
			from = now
		}
		if !until.IsZero() && !until.After(from) {
			return 0, memorykit.FieldError(op, "candidates["+strconv.Itoa(i)+"].effective_until", "not_after_effective_from")
		}
	}
	if err := s.roomForLocked(op, checked); err != nil {
		return 0, err
	}
	created := 0
	for _, in := range checked {
		if in.ID != "" && s.records[in.ID] != nil {
			continue
		}
		if _, err := s.createLocked(op, in, now); err != nil {
			// Unreachable: every failure createLocked can report for a
			// candidate was ruled out above, under the same lock.
			return created, memorykit.WrapError(op, memorykit.ErrIntegrity, "partial_completion", err)
		}
		created++
	}
	s.changedJob(job.ID)
	tombstone(job, storekit.JobDone)
	job.Candidates = created
	job.UpdatedAt = now
	return created, nil
}

// FailJob implements storekit.JobStore. A zero RetryAt means now.
func (s *Store) FailJob(ctx context.Context, f storekit.JobFailure) (storekit.Job, error) {
	const op = "memorystore.fail_job"
	if err := live(ctx, op); err != nil {
		return storekit.Job{}, err
	}
	if err := storekit.CheckJobFailure(op, f); err != nil {
		return storekit.Job{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return storekit.Job{}, err
	}
	job := s.jobs[f.JobID]
	if job == nil {
		return storekit.Job{}, notFound(op)
	}
	now := s.now()
	if err := job.CheckLease(op, f.WorkerID, f.LeaseToken, now); err != nil {
		return storekit.Job{}, err
	}
	s.changedJob(job.ID)
	if s.erasedHandback(job, now) {
		return *job, nil
	}
	job.LastError = f.Reason
	job.UpdatedAt = now
	job.Failures++
	if !f.Final && job.Failures < job.MaxAttempts {
		clearLease(job)
		job.State = storekit.JobQueued
		job.AvailableAt = stamp(f.RetryAt)
		if job.AvailableAt.IsZero() {
			job.AvailableAt = now
		}
	} else {
		tombstone(job, storekit.JobFailed)
	}
	return *job, nil
}

// ReleaseJob implements storekit.JobStore.
func (s *Store) ReleaseJob(ctx context.Context, r storekit.JobRelease) error {
	const op = "memorystore.release_job"
	if err := live(ctx, op); err != nil {
		return err
	}
	if err := storekit.CheckJobRelease(op, r); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return err
	}
	job := s.jobs[r.JobID]
	if job == nil {
		return notFound(op)
	}
	now := s.now()
	if err := job.CheckLease(op, r.WorkerID, r.LeaseToken, now); err != nil {
		return err
	}
	s.changedJob(job.ID)
	job.Attempt--
	job.HandBacks++
	job.UpdatedAt = now
	if !job.Retries() {
		job.LastError = storekit.ReasonHandBackLimit
		tombstone(job, storekit.JobFailed)
		return nil
	}
	if s.erasedHandback(job, now) {
		return nil
	}
	clearLease(job)
	job.State = storekit.JobQueued
	job.AvailableAt = now
	return nil
}

// ReapJobLeases implements storekit.JobStore. A lease is expired once
// the clock reaches LeaseExpiresAt.
func (s *Store) ReapJobLeases(ctx context.Context) (int, error) {
	const op = "memorystore.reap_job_leases"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	now := s.now()
	n := 0
	for _, job := range s.jobs {
		if job.State != storekit.JobLeased || now.Before(job.LeaseExpiresAt) {
			continue
		}
		n++
		s.changedJob(job.ID)
		if s.erasedHandback(job, now) {
			continue
		}
		job.LastError = storekit.ReasonLeaseExpired
		job.UpdatedAt = now
		job.Reaps++
		if job.Retries() {
			clearLease(job)
			job.State = storekit.JobQueued
			job.AvailableAt = now
		} else {
			tombstone(job, storekit.JobFailed)
		}
	}
	return n, nil
}

// GetJob implements storekit.JobStore.
func (s *Store) GetJob(ctx context.Context, scope memorykit.Scope, id string) (storekit.Job, error) {
	const op = "memorystore.get_job"
	if err := live(ctx, op); err != nil {
		return storekit.Job{}, err
	}
	if err := storekit.CheckScopedID(op, scope, id); err != nil {
		return storekit.Job{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	job := s.jobs[id]
	if job == nil || job.Scope != scope {
		return storekit.Job{}, notFound(op)
	}
	return *job, nil
}

// CountJobs implements storekit.JobStore.
func (s *Store) CountJobs(ctx context.Context) (storekit.JobCounts, error) {
	const op = "memorystore.count_jobs"
	if err := live(ctx, op); err != nil {
		return storekit.JobCounts{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var c storekit.JobCounts
	for _, job := range s.jobs {
		switch job.State {
		case storekit.JobQueued:
			c.Queued++
		case storekit.JobLeased:
			c.Leased++
		case storekit.JobDone:
			c.Done++
		case storekit.JobFailed:
			c.Failed++
		}
	}
	return c, nil
}
