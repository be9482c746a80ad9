package pgstore

import (
	"context"
	"errors"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// EnqueueJob implements storekit.JobStore.
func (s *Store) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	const op = "pgstore.enqueue_job"
	if err := live(ctx, op); err != nil {
		return storekit.Job{}, err
	}
	if err := storekit.CheckJob(s.guard, op, j); err != nil {
		return storekit.Job{}, err
	}
	now := s.now()
	var job storekit.Job
	conflict := false
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		if err := s.holdScope(ctx, tx, op, j.Scope); err != nil {
			return err
		}
		var err error
		job, err = scanJob(tx.QueryRow(ctx, s.stmt("enqueue_job"),
			j.ID, j.Scope.TenantID, string(j.Scope.SubjectType), j.Scope.SubjectID, j.Payload, j.MaxAttempts, now, j.MaxReaps, j.RunRef))
		if errors.Is(err, pgx.ErrNoRows) {
			conflict = true
			return nil
		}
		return err
	})
	if err != nil {
		return storekit.Job{}, err
	}
	if !conflict {
		return job, nil
	}
	taken := memorykit.NewError(op, memorykit.ErrAlreadyExists, "id_taken")
	old, gerr := s.GetJob(ctx, j.Scope, j.ID)
	if gerr == nil {
		return old, taken
	}
	return storekit.Job{}, taken
}

func leaseLost(op string) error {
	return memorykit.NewError(op, memorykit.ErrLeaseLost, storekit.ReasonNotLeaseHolder)
}

// LeaseJobs implements storekit.JobStore. Queued jobs are claimed with
// FOR UPDATE SKIP LOCKED, so any number of workers in any number of
// processes share the queue and each job is held by at most one of them.
func (s *Store) LeaseJobs(ctx context.Context, p storekit.JobLease) ([]storekit.Job, error) {
	const op = "pgstore.lease_jobs"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckJobLease(s.guard, op, p); err != nil {
		return nil, err
	}
	now := s.now()
	rows, err := s.pool.Query(ctx, s.stmt("lease_jobs"), now, p.WorkerID, pgTime(now.Add(p.TTL)), p.Max)
	if err != nil {
		return nil, mapErr(op, err)
	}
	defer rows.Close()
	out := make([]storekit.Job, 0)
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, mapErr(op, err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(op, err)
	}
	sort.Slice(out, func(i, k int) bool {
		a, b := out[i], out[k]
		if !a.AvailableAt.Equal(b.AvailableAt) {
			return a.AvailableAt.Before(b.AvailableAt)
		}
		return a.ID < b.ID
	})
	return out, nil
}

// jobColsJ is jobCols qualified with the alias j.
const jobColsJ = `j.id, j.tenant_id, j.subject_type, j.subject_id, j.payload, j.state, j.attempt, j.max_attempts,
	j.available_at, j.leased_by, j.lease_expires_at, j.last_error, j.candidates, j.created_at, j.updated_at, j.lease_token,
	j.failures, j.reaps, j.hand_backs, j.max_reaps, j.run_ref`

// jobByID reads a job in any Scope, optionally locking it.
func (s *Store) jobByID(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string, lock bool) (storekit.Job, bool, error) {
	name := "job_by_id"
	if lock {
		name = "job_by_id_for_update"
	}
	j, err := scanJob(q.QueryRow(ctx, s.stmt(name), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return storekit.Job{}, false, nil
	}
	return j, err == nil, err
}

// CompleteJob implements storekit.JobStore. Every candidate is checked
// (shape, Scope, Limits and the Host's validator) before the transaction;
// one bad candidate fails the whole completion and the job stays leased.
// Candidates whose ID exists are skipped (ON CONFLICT DO NOTHING).
func (s *Store) CompleteJob(ctx context.Context, c storekit.JobCompletion) (int, error) {
	const op = "pgstore.complete_job"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	if err := storekit.CheckJobCompletion(s.guard, op, c); err != nil {
		return 0, err
	}
	if len(c.Candidates) == 0 {
		return 0, s.completeEmpty(ctx, op, c)
	}
	job, found, err := s.jobByID(ctx, s.pool, c.JobID, false)
	switch {
	case err != nil:
		return 0, mapErr(op, err)
	case !found:
		return 0, notFound(op)
	}
	if err := job.CheckLease(op, c.WorkerID, c.LeaseToken, s.now()); err != nil {
		return 0, err
	}
	type prepared struct {
		in          memorykit.NewRecord
		meta, src   any
		from, until any
	}
	now := s.now()
	checked := make([]prepared, len(c.Candidates))
	for i, in := range c.Candidates {
		nc, err := storekit.CheckCandidate(ctx, s.guard, op, i, job.Scope, in)
		if err != nil {
			return 0, err
		}
		p := prepared{in: nc}
		if p.meta, err = encodeMetadata(nc.Metadata); err != nil {
			return 0, memorykit.WrapError(op, memorykit.ErrInvalidInput, "metadata_encoding", err)
		}
		if p.src, err = encodeSources(nc.Sources); err != nil {
			return 0, memorykit.WrapError(op, memorykit.ErrInvalidInput, "sources_encoding", err)
		}
		from := pgTime(nc.EffectiveFrom)
		if nc.EffectiveFrom.IsZero() {
			from = now
		}
		p.from = from
		if !nc.EffectiveUntil.IsZero() {
			u := pgTime(nc.EffectiveUntil)
			if !u.After(from) {
				return 0, memorykit.FieldError(op, "candidates["+strconv.Itoa(i)+"].effective_until", "not_after_effective_from")
			}
			p.until = u
		}
		if nc.ID == "" {
			p.in.ID = storekit.NewRecordID(now)
		}
		checked[i] = p
	}
	created := 0
	err = s.inTx(ctx, op, func(tx pgx.Tx) error {
		job, found, err := s.jobByID(ctx, tx, c.JobID, true)
		if err != nil {
			return err
		}
		if !found {
			return leaseLost(op)
		}
		if err := job.CheckLease(op, c.WorkerID, c.LeaseToken, now); err != nil {
			return err
		}
		checked, err := erasedCompletion(ctx, s, tx, op, job, checked, func(p prepared) string { return p.in.Key })
		if err != nil {
			return err
		}
		for _, p := range checked {
			in := p.in
			_, err := scanRecord(tx.QueryRow(ctx, s.stmt("insert_candidates"),
				in.ID, in.Scope.TenantID, string(in.Scope.SubjectType), in.Scope.SubjectID,
				string(in.Kind), in.Key, in.Content, p.meta, p.src, string(in.Status),
				storekit.ContentHash(in.Content), p.from, p.until,
				string(in.Actor.Kind), in.Actor.ID, now,
				ftsTerms(in.Scope, storekit.IndexTerms(in.Key, in.Content)), in.Reason))
			if errors.Is(err, pgx.ErrNoRows) {
				continue // the ID exists: a retried job's candidate
			}
			if err != nil {
				return err
			}
			created++
		}
		_, err = tx.Exec(ctx, s.stmt("finish_job"), c.JobID, created, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	if created > 0 {
		s.wrote(job.Scope)
	}
	return created, nil
}

// completeEmpty completes a job that proposed no candidates in one
// statement (one round trip): the lease check and the update are the same
// atomic step. Only when it changes nothing does a second read tell a
// missing job from a lost lease.
func (s *Store) completeEmpty(ctx context.Context, op string, c storekit.JobCompletion) error {
	now := s.now()
	tag, err := s.pool.Exec(ctx, s.stmt("complete_empty"),
		c.JobID, c.WorkerID, now, c.LeaseToken)
	if err != nil {
		return mapErr(op, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	job, found, err := s.jobByID(ctx, s.pool, c.JobID, false)
	if err != nil {
		return mapErr(op, err)
	} else if !found {
		return notFound(op)
	}
	if err := job.CheckLease(op, c.WorkerID, c.LeaseToken, now); err != nil {
		return err
	}
	return leaseLost(op)
}

// FailJob implements storekit.JobStore. A zero RetryAt means now.
func (s *Store) FailJob(ctx context.Context, f storekit.JobFailure) (storekit.Job, error) {
	const op = "pgstore.fail_job"
	if err := live(ctx, op); err != nil {
		return storekit.Job{}, err
	}
	if err := storekit.CheckJobFailure(op, f); err != nil {
		return storekit.Job{}, err
	}
	now := s.now()
	retryAt := pgTime(f.RetryAt)
	if f.RetryAt.IsZero() {
		retryAt = now
	}
	var out storekit.Job
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		job, found, err := s.jobByID(ctx, tx, f.JobID, true)
		if err != nil {
			return err
		}
		if !found {
			return notFound(op)
		}
		if err := job.CheckLease(op, f.WorkerID, f.LeaseToken, now); err != nil {
			return err
		}
		if j, erased, err := s.erasedHandback(ctx, tx, f.JobID, now); err != nil || erased {
			out = j
			return err
		}
		retry := !f.Final && job.Failures+1 < job.MaxAttempts
		out, err = scanJob(tx.QueryRow(ctx, s.stmt("fail_job"), f.JobID, f.Reason, now, retry, retryAt))
		return err
	})
	if err != nil {
		return storekit.Job{}, err
	}
	return out, nil
}

// ReleaseJob implements storekit.JobStore.
func (s *Store) ReleaseJob(ctx context.Context, r storekit.JobRelease) error {
	const op = "pgstore.release_job"
	if err := live(ctx, op); err != nil {
		return err
	}
	if err := storekit.CheckJobRelease(op, r); err != nil {
		return err
	}
	jobID := r.JobID
	now := s.now()
	return s.inTx(ctx, op, func(tx pgx.Tx) error {
		job, found, err := s.jobByID(ctx, tx, jobID, true)
		if err != nil {
			return err
		}
		if !found {
			return notFound(op)
		}
		if err := job.CheckLease(op, r.WorkerID, r.LeaseToken, now); err != nil {
			return err
		}
		if _, erased, err := s.erasedHandback(ctx, tx, r.JobID, now); err != nil || erased {
			return err
		}
		retry := job.Reaps+job.HandBacks+1 < job.MaxReaps
		_, err = tx.Exec(ctx, s.stmt("release_job"), r.JobID, now, retry, storekit.ReasonHandBackLimit)
		return err
	})
}

// ReapJobLeases implements storekit.JobStore. A lease is expired once the
// clock reaches LeaseExpiresAt.
func (s *Store) ReapJobLeases(ctx context.Context) (int, error) {
	const op = "pgstore.reap_job_leases"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	now := s.now()
	erased, err := s.reapErased(ctx, now)
	if err != nil {
		return 0, mapErr(op, err)
	}
	tag, err := s.pool.Exec(ctx, s.stmt("reap_job_leases"), now, storekit.ReasonLeaseExpired)
	if err != nil {
		return 0, mapErr(op, err)
	}
	return erased + int(tag.RowsAffected()), nil
}

// GetJob implements storekit.JobStore.
func (s *Store) GetJob(ctx context.Context, scope memorykit.Scope, id string) (storekit.Job, error) {
	const op = "pgstore.get_job"
	if err := live(ctx, op); err != nil {
		return storekit.Job{}, err
	}
	if err := storekit.CheckScopedID(op, scope, id); err != nil {
		return storekit.Job{}, err
	}
	j, err := scanJob(s.pool.QueryRow(ctx, s.stmt("get_job"),
		id, scope.TenantID, string(scope.SubjectType), scope.SubjectID))
	if errors.Is(err, pgx.ErrNoRows) {
		return storekit.Job{}, notFound(op)
	}
	if err != nil {
		return storekit.Job{}, mapErr(op, err)
	}
	return j, nil
}

// CountJobs implements storekit.JobStore.
func (s *Store) CountJobs(ctx context.Context) (storekit.JobCounts, error) {
	const op = "pgstore.count_jobs"
	if err := live(ctx, op); err != nil {
		return storekit.JobCounts{}, err
	}
	var c storekit.JobCounts
	err := s.pool.QueryRow(ctx, s.stmt("count_jobs")).Scan(&c.Queued, &c.Leased, &c.Done, &c.Failed)
	if err != nil {
		return storekit.JobCounts{}, mapErr(op, err)
	}
	return c, nil
}
