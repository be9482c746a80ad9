package sqlitestore

import (
	"context"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// The methods below run each call on the mirror (read, or write and
// commit); see the package documentation.

// none is the value of a write that returns only an error.
type none struct{}

func errOnly(err error) (none, error) { return none{}, err }

// Create implements storekit.LifecycleStore.
func (s *Store) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	return write(s, "sqlitestore.create", func() (memorykit.Record, error) { return s.mem.Create(ctx, in) })
}

// CreateBatch implements storekit.BatchCreator: the batch is one commit.
func (s *Store) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	return write(s, "sqlitestore.create_batch", func() ([]memorykit.Record, error) { return s.mem.CreateBatch(ctx, items) })
}

// Get implements storekit.LifecycleStore.
func (s *Store) Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error) {
	return read(s, "sqlitestore.get", func() (memorykit.Record, error) { return s.mem.Get(ctx, scope, id) })
}

// FindActive implements storekit.LifecycleStore.
func (s *Store) FindActive(ctx context.Context, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, error) {
	return read(s, "sqlitestore.find_active", func() (memorykit.Record, error) { return s.mem.FindActive(ctx, scope, kind, key) })
}

// List implements storekit.LifecycleStore.
func (s *Store) List(ctx context.Context, f storekit.ListFilter) ([]memorykit.Record, error) {
	return read(s, "sqlitestore.list", func() ([]memorykit.Record, error) { return s.mem.List(ctx, f) })
}

// Activate implements storekit.LifecycleStore.
func (s *Store) Activate(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.activate", func() (memorykit.Record, error) { return s.mem.Activate(ctx, t) })
}

// Reject implements storekit.LifecycleStore.
func (s *Store) Reject(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.reject", func() (memorykit.Record, error) { return s.mem.Reject(ctx, t) })
}

// Correct implements storekit.LifecycleStore.
func (s *Store) Correct(ctx context.Context, c storekit.Correction) (memorykit.Record, error) {
	return write(s, "sqlitestore.correct", func() (memorykit.Record, error) { return s.mem.Correct(ctx, c) })
}

// Forget implements storekit.LifecycleStore.
func (s *Store) Forget(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.forget", func() (memorykit.Record, error) { return s.mem.Forget(ctx, t) })
}

// Erase implements storekit.LifecycleStore. After the commit the WAL is
// checkpointed and truncated, so the rows' earlier versions leave it.
func (s *Store) Erase(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	const op = "sqlitestore.erase"
	r, err := write(s, op, func() (memorykit.Record, error) { return s.mem.Erase(ctx, t) })
	if err != nil {
		return r, err
	}
	return r, s.reclaim(op, false)
}

// Purge implements storekit.Purger. Progress is committed even when the
// purge is interrupted (a later Purge resumes it); once it finished, the
// file is vacuumed and the WAL truncated, so no page keeps purged text.
func (s *Store) Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error) {
	const op = "sqlitestore.purge"
	rep, err := func() (memorykit.PurgeReport, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.broken(op); err != nil {
			return memorykit.PurgeReport{}, err
		}
		rep, err := s.mem.Purge(ctx, scope, actor, reason)
		if cerr := s.commitLocked(op, true); cerr != nil {
			return memorykit.PurgeReport{}, cerr
		}
		if s.afterWrite != nil {
			s.afterWrite()
		}
		return rep, rename(err)
	}()
	if err != nil {
		return rep, err
	}
	if err := s.reclaim(op, true); err != nil {
		return memorykit.PurgeReport{}, err
	}
	return rep, nil
}

// reclaim rewrites the file without free pages (vacuum) and checkpoints
// the WAL into it, truncating the WAL. Its failure leaves every commit in
// place; the call reports it so the caller can try again.
func (s *Store) reclaim(op string, vacuum bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.broken(op); err != nil {
		return err
	}
	ctx := context.Background()
	if vacuum {
		if _, err := s.conn.ExecContext(ctx, "VACUUM"); err != nil {
			return mapErr(op, err)
		}
	}
	if _, err := s.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return mapErr(op, err)
	}
	return nil
}

// Revisions implements storekit.LifecycleStore.
func (s *Store) Revisions(ctx context.Context, scope memorykit.Scope, id string) ([]storekit.Revision, error) {
	return read(s, "sqlitestore.revisions", func() ([]storekit.Revision, error) { return s.mem.Revisions(ctx, scope, id) })
}

// Recall implements storekit.RecallStore with memorystore's index and
// ranking.
func (s *Store) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	return read(s, "sqlitestore.recall", func() (storekit.RecallResult, error) { return s.mem.Recall(ctx, q) })
}

// LeaseEmbeddings implements storekit.EmbeddingStore.
func (s *Store) LeaseEmbeddings(ctx context.Context, p storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	return write(s, "sqlitestore.lease_embeddings", func() ([]storekit.EmbeddingTask, error) { return s.mem.LeaseEmbeddings(ctx, p) })
}

// PutEmbedding implements storekit.EmbeddingStore.
func (s *Store) PutEmbedding(ctx context.Context, p storekit.EmbeddingPut) error {
	_, err := write(s, "sqlitestore.put_embedding", func() (none, error) { return errOnly(s.mem.PutEmbedding(ctx, p)) })
	return err
}

// PutEmbeddings implements storekit.EmbeddingBatchPutter: the puts are
// one commit.
func (s *Store) PutEmbeddings(ctx context.Context, puts []storekit.EmbeddingPut) ([]error, error) {
	errs, err := write(s, "sqlitestore.put_embeddings", func() ([]error, error) { return s.mem.PutEmbeddings(ctx, puts) })
	for _, e := range errs {
		_ = rename(e)
	}
	return errs, err
}

// ReleaseEmbedding implements storekit.EmbeddingStore.
func (s *Store) ReleaseEmbedding(ctx context.Context, r storekit.EmbeddingRelease) error {
	_, err := write(s, "sqlitestore.release_embedding", func() (none, error) { return errOnly(s.mem.ReleaseEmbedding(ctx, r)) })
	return err
}

// PendingEmbeddings implements storekit.EmbeddingStore.
func (s *Store) PendingEmbeddings(ctx context.Context, profile string) (int, error) {
	return read(s, "sqlitestore.pending_embeddings", func() (int, error) { return s.mem.PendingEmbeddings(ctx, profile) })
}

// PendingEmbeddingsIn implements storekit.ScopedPendingCounter.
func (s *Store) PendingEmbeddingsIn(ctx context.Context, scope memorykit.Scope, profile string) (int, error) {
	return read(s, "sqlitestore.pending_embeddings_in", func() (int, error) { return s.mem.PendingEmbeddingsIn(ctx, scope, profile) })
}

// DeleteEmbeddings implements storekit.EmbeddingStore.
func (s *Store) DeleteEmbeddings(ctx context.Context, profile string, scope memorykit.Scope) (int, error) {
	return write(s, "sqlitestore.delete_embeddings", func() (int, error) { return s.mem.DeleteEmbeddings(ctx, profile, scope) })
}

// DeleteAllEmbeddings implements storekit.EmbeddingStore.
func (s *Store) DeleteAllEmbeddings(ctx context.Context, profile string) (int, error) {
	return write(s, "sqlitestore.delete_all_embeddings", func() (int, error) { return s.mem.DeleteAllEmbeddings(ctx, profile) })
}

// ReapEmbeddingLeases implements storekit.EmbeddingStore.
func (s *Store) ReapEmbeddingLeases(ctx context.Context) (int, error) {
	return write(s, "sqlitestore.reap_embedding_leases", func() (int, error) { return s.mem.ReapEmbeddingLeases(ctx) })
}

// EnqueueJob implements storekit.JobStore.
func (s *Store) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	return write(s, "sqlitestore.enqueue_job", func() (storekit.Job, error) { return s.mem.EnqueueJob(ctx, j) })
}

// LeaseJobs implements storekit.JobStore.
func (s *Store) LeaseJobs(ctx context.Context, p storekit.JobLease) ([]storekit.Job, error) {
	return write(s, "sqlitestore.lease_jobs", func() ([]storekit.Job, error) { return s.mem.LeaseJobs(ctx, p) })
}

// CompleteJob implements storekit.JobStore: the job and its candidates
// are one commit.
func (s *Store) CompleteJob(ctx context.Context, c storekit.JobCompletion) (int, error) {
	return write(s, "sqlitestore.complete_job", func() (int, error) { return s.mem.CompleteJob(ctx, c) })
}

// FailJob implements storekit.JobStore.
func (s *Store) FailJob(ctx context.Context, f storekit.JobFailure) (storekit.Job, error) {
	return write(s, "sqlitestore.fail_job", func() (storekit.Job, error) { return s.mem.FailJob(ctx, f) })
}

// ReleaseJob implements storekit.JobStore.
func (s *Store) ReleaseJob(ctx context.Context, r storekit.JobRelease) error {
	_, err := write(s, "sqlitestore.release_job", func() (none, error) { return errOnly(s.mem.ReleaseJob(ctx, r)) })
	return err
}

// ReapJobLeases implements storekit.JobStore.
func (s *Store) ReapJobLeases(ctx context.Context) (int, error) {
	return write(s, "sqlitestore.reap_job_leases", func() (int, error) { return s.mem.ReapJobLeases(ctx) })
}

// GetJob implements storekit.JobStore.
func (s *Store) GetJob(ctx context.Context, scope memorykit.Scope, id string) (storekit.Job, error) {
	return read(s, "sqlitestore.get_job", func() (storekit.Job, error) { return s.mem.GetJob(ctx, scope, id) })
}

// CountJobs implements storekit.JobStore.
func (s *Store) CountJobs(ctx context.Context) (storekit.JobCounts, error) {
	return read(s, "sqlitestore.count_jobs", func() (storekit.JobCounts, error) { return s.mem.CountJobs(ctx) })
}
