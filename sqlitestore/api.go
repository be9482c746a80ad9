package sqlitestore

import (
	"context"

	"github.com/goagents/memorykit"
)

// The methods below run each call on the mirror (read, or write and
// commit); see the package documentation.

// none is the value of a write that returns only an error.
type none struct{}

func errOnly(err error) (none, error) { return none{}, err }

// Create implements memorykit.LifecycleStore.
func (s *Store) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	return write(s, "sqlitestore.create", func() (memorykit.Record, error) { return s.mem.Create(ctx, in) })
}

// CreateBatch implements memorykit.BatchCreator: the batch is one commit.
func (s *Store) CreateBatch(ctx context.Context, items []memorykit.BatchItem) ([]memorykit.Record, error) {
	return write(s, "sqlitestore.create_batch", func() ([]memorykit.Record, error) { return s.mem.CreateBatch(ctx, items) })
}

// Get implements memorykit.LifecycleStore.
func (s *Store) Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error) {
	return read(s, "sqlitestore.get", func() (memorykit.Record, error) { return s.mem.Get(ctx, scope, id) })
}

// FindActive implements memorykit.LifecycleStore.
func (s *Store) FindActive(ctx context.Context, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, error) {
	return read(s, "sqlitestore.find_active", func() (memorykit.Record, error) { return s.mem.FindActive(ctx, scope, kind, key) })
}

// List implements memorykit.LifecycleStore.
func (s *Store) List(ctx context.Context, f memorykit.ListFilter) ([]memorykit.Record, error) {
	return read(s, "sqlitestore.list", func() ([]memorykit.Record, error) { return s.mem.List(ctx, f) })
}

// Activate implements memorykit.LifecycleStore.
func (s *Store) Activate(ctx context.Context, t memorykit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.activate", func() (memorykit.Record, error) { return s.mem.Activate(ctx, t) })
}

// Reject implements memorykit.LifecycleStore.
func (s *Store) Reject(ctx context.Context, t memorykit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.reject", func() (memorykit.Record, error) { return s.mem.Reject(ctx, t) })
}

// Correct implements memorykit.LifecycleStore.
func (s *Store) Correct(ctx context.Context, c memorykit.Correction) (memorykit.Record, error) {
	return write(s, "sqlitestore.correct", func() (memorykit.Record, error) { return s.mem.Correct(ctx, c) })
}

// Forget implements memorykit.LifecycleStore.
func (s *Store) Forget(ctx context.Context, t memorykit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.forget", func() (memorykit.Record, error) { return s.mem.Forget(ctx, t) })
}

// Erase implements memorykit.LifecycleStore. After the commit the WAL is
// checkpointed and truncated, so the rows' earlier versions leave it.
func (s *Store) Erase(ctx context.Context, t memorykit.Transition) (memorykit.Record, error) {
	const op = "sqlitestore.erase"
	r, err := write(s, op, func() (memorykit.Record, error) { return s.mem.Erase(ctx, t) })
	if err != nil {
		return r, err
	}
	return r, s.reclaim(op, false)
}

// Purge implements memorykit.Purger. Progress is committed even when the
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

// Revisions implements memorykit.LifecycleStore.
func (s *Store) Revisions(ctx context.Context, scope memorykit.Scope, id string) ([]memorykit.Revision, error) {
	return read(s, "sqlitestore.revisions", func() ([]memorykit.Revision, error) { return s.mem.Revisions(ctx, scope, id) })
}

// Recall implements memorykit.RecallStore with memorystore's index and
// ranking.
func (s *Store) Recall(ctx context.Context, q memorykit.RecallQuery) (memorykit.RecallResult, error) {
	return read(s, "sqlitestore.recall", func() (memorykit.RecallResult, error) { return s.mem.Recall(ctx, q) })
}

// LeaseEmbeddings implements memorykit.EmbeddingStore.
func (s *Store) LeaseEmbeddings(ctx context.Context, p memorykit.EmbeddingLease) ([]memorykit.EmbeddingTask, error) {
	return write(s, "sqlitestore.lease_embeddings", func() ([]memorykit.EmbeddingTask, error) { return s.mem.LeaseEmbeddings(ctx, p) })
}

// PutEmbedding implements memorykit.EmbeddingStore.
func (s *Store) PutEmbedding(ctx context.Context, p memorykit.EmbeddingPut) error {
	_, err := write(s, "sqlitestore.put_embedding", func() (none, error) { return errOnly(s.mem.PutEmbedding(ctx, p)) })
	return err
}

// PutEmbeddings implements memorykit.EmbeddingBatchPutter: the puts are
// one commit.
func (s *Store) PutEmbeddings(ctx context.Context, puts []memorykit.EmbeddingPut) ([]error, error) {
	errs, err := write(s, "sqlitestore.put_embeddings", func() ([]error, error) { return s.mem.PutEmbeddings(ctx, puts) })
	for _, e := range errs {
		_ = rename(e)
	}
	return errs, err
}

// ReleaseEmbedding implements memorykit.EmbeddingStore.
func (s *Store) ReleaseEmbedding(ctx context.Context, r memorykit.EmbeddingRelease) error {
	_, err := write(s, "sqlitestore.release_embedding", func() (none, error) { return errOnly(s.mem.ReleaseEmbedding(ctx, r)) })
	return err
}

// PendingEmbeddings implements memorykit.EmbeddingStore.
func (s *Store) PendingEmbeddings(ctx context.Context, profile string) (int, error) {
	return read(s, "sqlitestore.pending_embeddings", func() (int, error) { return s.mem.PendingEmbeddings(ctx, profile) })
}

// PendingEmbeddingsIn implements memorykit.ScopedPendingCounter.
func (s *Store) PendingEmbeddingsIn(ctx context.Context, scope memorykit.Scope, profile string) (int, error) {
	return read(s, "sqlitestore.pending_embeddings_in", func() (int, error) { return s.mem.PendingEmbeddingsIn(ctx, scope, profile) })
}

// DeleteEmbeddings implements memorykit.EmbeddingStore.
func (s *Store) DeleteEmbeddings(ctx context.Context, profile string, scope memorykit.Scope) (int, error) {
	return write(s, "sqlitestore.delete_embeddings", func() (int, error) { return s.mem.DeleteEmbeddings(ctx, profile, scope) })
}

// DeleteAllEmbeddings implements memorykit.EmbeddingStore.
func (s *Store) DeleteAllEmbeddings(ctx context.Context, profile string) (int, error) {
	return write(s, "sqlitestore.delete_all_embeddings", func() (int, error) { return s.mem.DeleteAllEmbeddings(ctx, profile) })
}

// ReapEmbeddingLeases implements memorykit.EmbeddingStore.
func (s *Store) ReapEmbeddingLeases(ctx context.Context) (int, error) {
	return write(s, "sqlitestore.reap_embedding_leases", func() (int, error) { return s.mem.ReapEmbeddingLeases(ctx) })
}

// EnqueueJob implements memorykit.JobStore.
func (s *Store) EnqueueJob(ctx context.Context, j memorykit.NewJob) (memorykit.Job, error) {
	return write(s, "sqlitestore.enqueue_job", func() (memorykit.Job, error) { return s.mem.EnqueueJob(ctx, j) })
}

// LeaseJobs implements memorykit.JobStore.
func (s *Store) LeaseJobs(ctx context.Context, p memorykit.JobLease) ([]memorykit.Job, error) {
	return write(s, "sqlitestore.lease_jobs", func() ([]memorykit.Job, error) { return s.mem.LeaseJobs(ctx, p) })
}

// CompleteJob implements memorykit.JobStore: the job and its candidates
// are one commit.
func (s *Store) CompleteJob(ctx context.Context, c memorykit.JobCompletion) (int, error) {
	return write(s, "sqlitestore.complete_job", func() (int, error) { return s.mem.CompleteJob(ctx, c) })
}

// FailJob implements memorykit.JobStore.
func (s *Store) FailJob(ctx context.Context, f memorykit.JobFailure) (memorykit.Job, error) {
	return write(s, "sqlitestore.fail_job", func() (memorykit.Job, error) { return s.mem.FailJob(ctx, f) })
}

// ReleaseJob implements memorykit.JobStore.
func (s *Store) ReleaseJob(ctx context.Context, r memorykit.JobRelease) error {
	_, err := write(s, "sqlitestore.release_job", func() (none, error) { return errOnly(s.mem.ReleaseJob(ctx, r)) })
	return err
}

// ReapJobLeases implements memorykit.JobStore.
func (s *Store) ReapJobLeases(ctx context.Context) (int, error) {
	return write(s, "sqlitestore.reap_job_leases", func() (int, error) { return s.mem.ReapJobLeases(ctx) })
}

// GetJob implements memorykit.JobStore.
func (s *Store) GetJob(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Job, error) {
	return read(s, "sqlitestore.get_job", func() (memorykit.Job, error) { return s.mem.GetJob(ctx, scope, id) })
}

// CountJobs implements memorykit.JobStore.
func (s *Store) CountJobs(ctx context.Context) (memorykit.JobCounts, error) {
	return read(s, "sqlitestore.count_jobs", func() (memorykit.JobCounts, error) { return s.mem.CountJobs(ctx) })
}
