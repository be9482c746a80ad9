package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storekit"
)

// The methods below run each call on the mirror (read, or write and
// commit); see the package documentation.

// none is the value of a write that returns only an error.
type none struct{}

func errOnly(err error) (none, error) { return none{}, err }

// Create implements storekit.LifecycleStore.
// It loads only the part of the Scope a create reads (see createWrite).
func (s *Store) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	var c createScopes
	c.add(in)
	return createWrite(s, "sqlitestore.create", c, []string{in.ID}, func() (memorykit.Record, error) { return s.mem.Create(ctx, in) })
}

// CreateBatch implements storekit.BatchCreator: the batch is one commit.
// It loads only the part of each Scope a create reads (see createWrite).
func (s *Store) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	var c createScopes
	ids := make([]string, len(items))
	for i, it := range items {
		c.add(it.Record)
		ids[i] = it.Record.ID
	}
	return createWrite(s, "sqlitestore.create_batch", c, ids, func() ([]memorykit.Record, error) { return s.mem.CreateBatch(ctx, items) })
}

// Get implements storekit.LifecycleStore.
func (s *Store) Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error) {
	return read(s, "sqlitestore.get", one(scope), func() (memorykit.Record, error) { return s.mem.Get(ctx, scope, id) })
}

// FindActive implements storekit.LifecycleStore.
func (s *Store) FindActive(ctx context.Context, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, error) {
	return read(s, "sqlitestore.find_active", one(scope), func() (memorykit.Record, error) { return s.mem.FindActive(ctx, scope, kind, key) })
}

// List implements storekit.LifecycleStore.
func (s *Store) List(ctx context.Context, f storekit.ListFilter) ([]memorykit.Record, error) {
	return read(s, "sqlitestore.list", one(f.Scope), func() ([]memorykit.Record, error) { return s.mem.List(ctx, f) })
}

// Activate implements storekit.LifecycleStore.
func (s *Store) Activate(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.activate", one(t.Scope), func() (memorykit.Record, error) { return s.mem.Activate(ctx, t) })
}

// Reject implements storekit.LifecycleStore.
func (s *Store) Reject(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.reject", one(t.Scope), func() (memorykit.Record, error) { return s.mem.Reject(ctx, t) })
}

// Correct implements storekit.LifecycleStore.
func (s *Store) Correct(ctx context.Context, c storekit.Correction) (memorykit.Record, error) {
	return write(s, "sqlitestore.correct", one(c.Scope), func() (memorykit.Record, error) { return s.mem.Correct(ctx, c) })
}

// Forget implements storekit.LifecycleStore.
func (s *Store) Forget(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return write(s, "sqlitestore.forget", one(t.Scope), func() (memorykit.Record, error) { return s.mem.Forget(ctx, t) })
}

// Erase implements storekit.LifecycleStore. After the commit the WAL is
// checkpointed and truncated, so the rows' earlier versions leave it.
func (s *Store) Erase(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	const op = "sqlitestore.erase"
	r, err := write(s, op, one(t.Scope), func() (memorykit.Record, error) { return s.mem.Erase(ctx, t) })
	if err != nil {
		return r, err
	}
	return r, s.reclaim(op, false)
}

// Purge implements storekit.Purger. Progress is committed even when the
// purge is interrupted (a later Purge resumes it); once it finished, the
// recall index is merged, the file vacuumed and the WAL truncated, so no
// page keeps purged text or the term hashes of purged records.
func (s *Store) Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error) {
	const op = "sqlitestore.purge"
	rep, err := func() (memorykit.PurgeReport, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.broken(op); err != nil {
			return memorykit.PurgeReport{}, err
		}
		need := []memorykit.Scope{scope}
		if err := s.ensureLocked(op, need); err != nil {
			return memorykit.PurgeReport{}, err
		}
		defer s.evictLocked(need)
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
		// The recall index keeps a deleted row's token hashes in its
		// segments until they merge; merging them all drops them.
		if _, err := s.conn.ExecContext(ctx, "INSERT INTO recall_terms (recall_terms) VALUES ('optimize')"); err != nil {
			return mapErr(op, err)
		}
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
	return read(s, "sqlitestore.revisions", one(scope), func() ([]storekit.Revision, error) { return s.mem.Revisions(ctx, scope, id) })
}

// Recall implements storekit.RecallStore with memorystore's index and
// ranking.
// A Scope the mirror does not hold is answered from the file's recall
// index (see sqlRecall) and then loaded in the background.
func (s *Store) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	const op = "sqlitestore.recall"
	s.mu.RLock()
	if err := s.broken(op); err != nil {
		s.mu.RUnlock()
		return storekit.RecallResult{}, err
	}
	if s.allLoaded([]memorykit.Scope{q.Scope}) {
		defer s.mu.RUnlock()
		res, err := s.mem.Recall(ctx, q)
		return res, rename(err)
	}
	// The mirror checks the query and the context; it holds nothing of
	// the Scope, so it answers nothing else.
	if _, err := s.mem.Recall(ctx, q); err != nil {
		s.mu.RUnlock()
		return storekit.RecallResult{}, rename(err)
	}
	res, ok, err := s.sqlRecall(ctx, q)
	s.mu.RUnlock()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// SQLite reports a query the context interrupted as its own
			// error; the caller sees the recoverable context_done.
			return storekit.RecallResult{}, memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", cerr)
		}
		return storekit.RecallResult{}, mapErr(op, err)
	}
	if ok {
		s.loadSoon(q.Scope)
		return res, nil
	}
	return read(s, op, one(q.Scope), func() (storekit.RecallResult, error) { return s.mem.Recall(ctx, q) })
}

// maxBackgroundLoads bounds the Scopes waiting to load in the background:
// past it, a Scope answered from the file is not queued (a later recall of
// it queues it), so a burst of recalls over many Scopes does not line up a
// goroutine per Scope.
const maxBackgroundLoads = 4

// loadSoon loads sc into the mirror on a goroutine of its own, unless it
// is being loaded already or maxBackgroundLoads are; Close waits for it.
func (s *Store) loadSoon(sc memorykit.Scope) {
	if s.noBackgroundLoad {
		return
	}
	s.loadMu.Lock()
	if s.closing || s.loading[sc] || len(s.loading) >= maxBackgroundLoads {
		s.loadMu.Unlock()
		return
	}
	s.loading[sc] = true
	s.loads.Add(1)
	s.loadMu.Unlock()
	go func() {
		defer s.loads.Done()
		defer func() {
			s.loadMu.Lock()
			delete(s.loading, sc)
			s.loadMu.Unlock()
		}()
		const op = "sqlitestore.load"
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.failed != "" {
			return
		}
		need := []memorykit.Scope{sc}
		// A failure here is reported by the next call that needs sc.
		if err := s.ensureLocked(op, need); err == nil {
			s.evictLocked(need)
		}
	}()
}

// LeaseEmbeddings implements storekit.EmbeddingStore.
func (s *Store) LeaseEmbeddings(ctx context.Context, p storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	return write(s, "sqlitestore.lease_embeddings", s.leaseScopes(p), func() ([]storekit.EmbeddingTask, error) { return s.mem.LeaseEmbeddings(ctx, p) })
}

// PutEmbedding implements storekit.EmbeddingStore.
func (s *Store) PutEmbedding(ctx context.Context, p storekit.EmbeddingPut) error {
	_, err := write(s, "sqlitestore.put_embedding", one(p.Scope), func() (none, error) { return errOnly(s.mem.PutEmbedding(ctx, p)) })
	return err
}

// PutEmbeddings implements storekit.EmbeddingBatchPutter: the puts are
// one commit.
func (s *Store) PutEmbeddings(ctx context.Context, puts []storekit.EmbeddingPut) ([]error, error) {
	errs, err := write(s, "sqlitestore.put_embeddings", putScopes(puts), func() ([]error, error) { return s.mem.PutEmbeddings(ctx, puts) })
	for _, e := range errs {
		_ = rename(e)
	}
	return errs, err
}

// ReleaseEmbedding implements storekit.EmbeddingStore.
func (s *Store) ReleaseEmbedding(ctx context.Context, r storekit.EmbeddingRelease) error {
	_, err := write(s, "sqlitestore.release_embedding", one(r.Scope), func() (none, error) { return errOnly(s.mem.ReleaseEmbedding(ctx, r)) })
	return err
}

// PendingEmbeddings implements storekit.EmbeddingStore.
func (s *Store) PendingEmbeddings(ctx context.Context, profile string) (int, error) {
	const op = "sqlitestore.pending_embeddings"
	return write(s, op, nil, func() (int, error) {
		// The mirror checks the call; the file counts across every Scope.
		if _, err := s.mem.PendingEmbeddings(ctx, profile); err != nil {
			return 0, err
		}
		if c, ok := s.pendingCount[profile]; ok && c.generation == s.generation {
			return c.n, nil
		}
		var n int
		if err := s.conn.QueryRowContext(ctx, countPendingSQL, profile).Scan(&n); err != nil {
			return 0, mapErr(op, err)
		}
		if len(s.pendingCount) >= maxCachedProfiles {
			clear(s.pendingCount)
		}
		s.pendingCount[profile] = countAt{generation: s.generation, n: n}
		return n, nil
	})
}

// PendingEmbeddingsIn implements storekit.ScopedPendingCounter.
func (s *Store) PendingEmbeddingsIn(ctx context.Context, scope memorykit.Scope, profile string) (int, error) {
	return read(s, "sqlitestore.pending_embeddings_in", one(scope), func() (int, error) { return s.mem.PendingEmbeddingsIn(ctx, scope, profile) })
}

// DeleteEmbeddings implements storekit.EmbeddingStore.
func (s *Store) DeleteEmbeddings(ctx context.Context, profile string, scope memorykit.Scope) (int, error) {
	return write(s, "sqlitestore.delete_embeddings", one(scope), func() (int, error) { return s.mem.DeleteEmbeddings(ctx, profile, scope) })
}

// DeleteAllEmbeddings implements storekit.EmbeddingStore.
func (s *Store) DeleteAllEmbeddings(ctx context.Context, profile string) (int, error) {
	return write(s, "sqlitestore.delete_all_embeddings", s.ofQuery(scopesWithProfileRows, profile, profile, profile), func() (int, error) { return s.mem.DeleteAllEmbeddings(ctx, profile) })
}

// ReapEmbeddingLeases implements storekit.EmbeddingStore.
func (s *Store) ReapEmbeddingLeases(ctx context.Context) (int, error) {
	return write(s, "sqlitestore.reap_embedding_leases", s.expiredLeaseScopes(), func() (int, error) { return s.mem.ReapEmbeddingLeases(ctx) })
}

// EnqueueJob implements storekit.JobStore.
func (s *Store) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	return write(s, "sqlitestore.enqueue_job", s.ofJob(j.ID, j.Scope), func() (storekit.Job, error) { return s.mem.EnqueueJob(ctx, j) })
}

// LeaseJobs implements storekit.JobStore.
func (s *Store) LeaseJobs(ctx context.Context, p storekit.JobLease) ([]storekit.Job, error) {
	return write(s, "sqlitestore.lease_jobs", s.ofQuery(`SELECT DISTINCT tenant_id, subject_type, subject_id FROM jobs WHERE state = 'queued'`), func() ([]storekit.Job, error) { return s.mem.LeaseJobs(ctx, p) })
}

// CompleteJob implements storekit.JobStore: the job and its candidates
// are one commit.
func (s *Store) CompleteJob(ctx context.Context, c storekit.JobCompletion) (int, error) {
	return write(s, "sqlitestore.complete_job", s.ofJob(c.JobID), func() (int, error) { return s.mem.CompleteJob(ctx, c) })
}

// FailJob implements storekit.JobStore.
func (s *Store) FailJob(ctx context.Context, f storekit.JobFailure) (storekit.Job, error) {
	return write(s, "sqlitestore.fail_job", s.ofJob(f.JobID), func() (storekit.Job, error) { return s.mem.FailJob(ctx, f) })
}

// ReleaseJob implements storekit.JobStore.
func (s *Store) ReleaseJob(ctx context.Context, r storekit.JobRelease) error {
	_, err := write(s, "sqlitestore.release_job", s.ofJob(r.JobID), func() (none, error) { return errOnly(s.mem.ReleaseJob(ctx, r)) })
	return err
}

// ReapJobLeases implements storekit.JobStore.
func (s *Store) ReapJobLeases(ctx context.Context) (int, error) {
	return write(s, "sqlitestore.reap_job_leases", s.ofQuery(`SELECT DISTINCT tenant_id, subject_type, subject_id FROM jobs WHERE state = 'leased'`), func() (int, error) { return s.mem.ReapJobLeases(ctx) })
}

// GetJob implements storekit.JobStore.
func (s *Store) GetJob(ctx context.Context, scope memorykit.Scope, id string) (storekit.Job, error) {
	return read(s, "sqlitestore.get_job", one(scope), func() (storekit.Job, error) { return s.mem.GetJob(ctx, scope, id) })
}

// CountJobs implements storekit.JobStore.
func (s *Store) CountJobs(ctx context.Context) (storekit.JobCounts, error) {
	const op = "sqlitestore.count_jobs"
	return write(s, op, nil, func() (storekit.JobCounts, error) {
		if _, err := s.mem.CountJobs(ctx); err != nil {
			return storekit.JobCounts{}, err
		}
		var c storekit.JobCounts
		err := s.each(ctx, `SELECT state, count(*) FROM jobs GROUP BY state`, func(rows *sql.Rows) error {
			var state string
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				return err
			}
			addJobCount(&c, storekit.JobState(state), n)
			return nil
		})
		if err != nil {
			return storekit.JobCounts{}, mapErr(op, err)
		}
		return c, nil
	})
}

// addJobCount adds n jobs of state to c.
func addJobCount(c *storekit.JobCounts, state storekit.JobState, n int) {
	switch state {
	case storekit.JobQueued:
		c.Queued += n
	case storekit.JobLeased:
		c.Leased += n
	case storekit.JobDone:
		c.Done += n
	case storekit.JobFailed:
		c.Failed += n
	}
}

// pendingWhere selects the active records lacking a vector of the
// profile (the first argument) at their current content hash: the
// records memorystore counts as waiting for one.
const pendingWhere = ` r.status = 'active' AND NOT EXISTS (SELECT 1 FROM embeddings e
	WHERE e.record_id = r.id AND e.profile = ? AND e.content_hash = r.content_hash)`

// countPendingSQL counts them across every Scope.
const countPendingSQL = `SELECT count(*) FROM records r WHERE` + pendingWhere

// scopesWithProfileRows names the Scopes with a vector, lease or token of
// a profile (given three times).
const scopesWithProfileRows = `SELECT DISTINCT r.tenant_id, r.subject_type, r.subject_id FROM records r WHERE
	EXISTS (SELECT 1 FROM embeddings x WHERE x.record_id = r.id AND x.profile = ?) OR
	EXISTS (SELECT 1 FROM embedding_leases x WHERE x.record_id = r.id AND x.profile = ?) OR
	EXISTS (SELECT 1 FROM embedding_tokens x WHERE x.record_id = r.id AND x.profile = ?)`

// putScopes is the Scopes function of a batch of puts.
func putScopes(puts []storekit.EmbeddingPut) func() ([]memorykit.Scope, error) {
	return func() ([]memorykit.Scope, error) {
		out := make([]memorykit.Scope, 0, len(puts))
		for _, p := range puts {
			out = append(out, p.Scope)
		}
		return out, nil
	}
}

// errEnough stops a scan that found what it looked for.
var errEnough = errors.New("enough")

// leaseScopes is the Scopes function of LeaseEmbeddings: its Scope when it
// names one; else the Scopes of the first p.Max records, in ID order
// across the file, that a lease would pick (pending, and not leased,
// parked or waiting for a retry at their current hash). The mirror then
// holds every record the lease takes, as memorystore picks in ID order.
func (s *Store) leaseScopes(p storekit.EmbeddingLease) func() ([]memorykit.Scope, error) {
	return func() ([]memorykit.Scope, error) {
		if p.Scope != nil {
			return []memorykit.Scope{*p.Scope}, nil
		}
		if p.Max <= 0 {
			return nil, nil
		}
		now := s.memCfg.Clock.Now()
		if c, ok := s.noLease[p.Profile]; ok && c.generation == s.generation && (c.until.IsZero() || now.Before(c.until)) {
			// Nothing was waiting at the last scan, nothing was written
			// since and no retry time has come: an idle worker's poll
			// reads nothing.
			return nil, nil
		}
		var out []memorykit.Scope
		seen := make(map[memorykit.Scope]bool)
		found := 0
		var until time.Time
		err := s.each(context.Background(), `SELECT r.tenant_id, r.subject_type, r.subject_id, r.content_hash, l.body
			FROM records r LEFT JOIN embedding_leases l ON l.record_id = r.id AND l.profile = ?
			WHERE`+pendingWhere+` ORDER BY r.id`, func(rows *sql.Rows) error {
			var sc memorykit.Scope
			var st, hash string
			var body sql.NullString
			if err := rows.Scan(&sc.TenantID, &st, &sc.SubjectID, &hash, &body); err != nil {
				return err
			}
			sc.SubjectType = memorykit.SubjectType(st)
			if body.Valid {
				var l memorystore.LeaseImage
				if err := json.Unmarshal([]byte(body.String), &l); err != nil {
					return err
				}
				if l.ContentHash == hash && (l.LeasedBy != "" || l.Parked || l.RetryAt.After(now)) {
					if l.LeasedBy == "" && !l.Parked && (until.IsZero() || l.RetryAt.Before(until)) {
						until = l.RetryAt
					}
					return nil
				}
			}
			if !seen[sc] {
				seen[sc] = true
				out = append(out, sc)
			}
			if found++; found >= p.Max {
				return errEnough
			}
			return nil
		}, p.Profile, p.Profile)
		if err == errEnough {
			err = nil
		}
		if err == nil && found == 0 {
			if len(s.noLease) >= maxCachedProfiles {
				clear(s.noLease)
			}
			s.noLease[p.Profile] = noWork{generation: s.generation, until: until}
		}
		return out, err
	}
}

// noWork records that a scan for embedding work of a profile found none
// at a generation; until, when set, is the earliest retry time it saw.
type noWork struct {
	generation uint64
	until      time.Time
}

// countAt is PendingEmbeddings' count of a profile at a generation.
type countAt struct {
	generation uint64
	n          int
}

// maxCachedProfiles bounds the per-profile caches.
const maxCachedProfiles = 16

// expiredLeaseScopes is the Scopes function of ReapEmbeddingLeases: those
// holding an embedding lease whose expiry the clock has reached.
func (s *Store) expiredLeaseScopes() func() ([]memorykit.Scope, error) {
	return func() ([]memorykit.Scope, error) {
		now := s.memCfg.Clock.Now()
		var out []memorykit.Scope
		seen := make(map[memorykit.Scope]bool)
		err := s.each(context.Background(), `SELECT r.tenant_id, r.subject_type, r.subject_id, x.body
			FROM embedding_leases x JOIN records r ON r.id = x.record_id`, func(rows *sql.Rows) error {
			var sc memorykit.Scope
			var st, body string
			if err := rows.Scan(&sc.TenantID, &st, &sc.SubjectID, &body); err != nil {
				return err
			}
			sc.SubjectType = memorykit.SubjectType(st)
			var l memorystore.LeaseImage
			if err := json.Unmarshal([]byte(body), &l); err != nil {
				return err
			}
			if l.LeasedBy != "" && !now.Before(l.LeaseExpiry) && !seen[sc] {
				seen[sc] = true
				out = append(out, sc)
			}
			return nil
		})
		return out, err
	}
}
