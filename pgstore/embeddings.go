package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// noCurrentEmbedding is true for a record (alias r) with no embedding of
// profile $1 at its content hash.
//
// The lease statement (lease_embeddings) walks the queue in record order
// and looks at one record at a time: a LATERAL sub-select holding the row
// lock, which the planner cannot flatten, with the embedding and lease checks as scalar
// sub-selects (one primary-key probe each). Written as joins, the planner
// merged with the profile's whole embeddings index (every record embedded
// so far, on every round), and on fresh tables without statistics it
// hash-joined the whole queue with every active record: 470 ms per round
// at 10k records instead of ~2 ms.
const noCurrentEmbedding = `(SELECT e.content_hash FROM {schema}.embeddings e
	       WHERE e.record_id = r.id AND e.tenant_id = r.tenant_id AND e.profile = $1) IS DISTINCT FROM r.content_hash`

// LeaseEmbeddings implements storekit.EmbeddingStore. Records are leased
// in ID order across every Scope, or only p.Scope's when it is set. A lease blocks the record until it is
// released, the vector is stored, or ReapEmbeddingLeases returns it after
// expiry.
func (s *Store) LeaseEmbeddings(ctx context.Context, p storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	const op = "pgstore.lease_embeddings"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckEmbeddingLease(s.guard, op, p); err != nil {
		return nil, err
	}
	if err := s.registerProfile(ctx, op, p.Profile); err != nil {
		return nil, err
	}
	now := s.now()
	var tenant, subjectType, subject *string // nil: every Scope
	if p.Scope != nil {
		st := string(p.Scope.SubjectType)
		tenant, subjectType, subject = &p.Scope.TenantID, &st, &p.Scope.SubjectID
	}
	if s.distributed {
		return s.leaseEmbeddingsPerTenant(ctx, op, p, now, tenant, subjectType, subject)
	}
	rows, err := s.pool.Query(ctx, s.stmt("lease_embeddings"), p.Profile, now, p.WorkerID, pgTime(now.Add(p.TTL)), p.Max,
		tenant, subjectType, subject)
	if err != nil {
		return nil, mapErr(op, err)
	}
	tasks, err := scanEmbeddingTasks(rows, p.Profile, make([]storekit.EmbeddingTask, 0))
	if err != nil {
		return nil, mapErr(op, err)
	}
	return tasks, nil
}

// leaseEmbeddingsPerTenant is LeaseEmbeddings on a distributed schema:
// Citus takes row locks only in a statement that names one tenant, so the
// lease statement runs for one tenant after another (those with queue
// rows, in order) until p.Max tasks are leased. Each statement's fencing
// tokens are drawn from the sequence on the coordinator beforehand.
func (s *Store) leaseEmbeddingsPerTenant(ctx context.Context, op string, p storekit.EmbeddingLease, now time.Time,
	tenant, subjectType, subject *string) ([]storekit.EmbeddingTask, error) {
	var tenants []string
	if tenant != nil {
		tenants = []string{*tenant}
	} else {
		rows, err := s.pool.Query(ctx, s.stmt("embedding_queue_tenants"), p.Profile)
		if err != nil {
			return nil, mapErr(op, err)
		}
		if tenants, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return nil, mapErr(op, err)
		}
	}
	tasks := make([]storekit.EmbeddingTask, 0)
	for _, t := range tenants {
		want := p.Max - len(tasks)
		if want <= 0 {
			break
		}
		err := s.inTx(ctx, op, func(tx pgx.Tx) error {
			got, err := s.leaseTenant(ctx, tx, p, now, t, subjectType, subject, want)
			tasks = append(tasks, got...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return tasks, nil
}

// leaseTenant leases up to want records of tenant in tx: the candidates
// first (share-locked), then their lease rows.
func (s *Store) leaseTenant(ctx context.Context, tx pgx.Tx, p storekit.EmbeddingLease, now time.Time,
	tenant string, subjectType, subject *string, want int) ([]storekit.EmbeddingTask, error) {
	type cand struct{ subjectType, subjectID, key, content, hash string }
	rows, err := tx.Query(ctx, s.stmt("lease_candidates_in"), p.Profile, tenant, subjectType, subject, now, want)
	if err != nil {
		return nil, err
	}
	cands := map[string]cand{}
	var ids, hashes []string
	for rows.Next() {
		var id string
		var c cand
		if err := rows.Scan(&id, &c.subjectType, &c.subjectID, &c.key, &c.content, &c.hash); err != nil {
			rows.Close()
			return nil, err
		}
		cands[id] = c
		ids, hashes = append(ids, id), append(hashes, c.hash)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return nil, err
	}
	var tokens []int64
	if err := tx.QueryRow(ctx, s.q(`SELECT array_agg(nextval('{schema}.lease_tokens')) FROM generate_series(1, $1)`),
		len(ids)).Scan(&tokens); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, s.stmt("lease_upsert_in"), p.Profile, now, p.WorkerID, pgTime(now.Add(p.TTL)), tenant,
		ids, hashes, tokens)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tasks []storekit.EmbeddingTask
	for rows.Next() {
		var t storekit.EmbeddingTask
		if err := rows.Scan(&t.RecordID, &t.ContentHash, &t.Attempt, &t.LeaseToken); err != nil {
			return nil, err
		}
		c := cands[t.RecordID]
		t.Scope = memorykit.Scope{TenantID: tenant, SubjectType: memorykit.SubjectType(c.subjectType), SubjectID: c.subjectID}
		t.Profile = p.Profile
		t.Text = storekit.EmbeddingText(c.key, c.content)
		tasks = append(tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(tasks, func(a, b storekit.EmbeddingTask) int { return strings.Compare(a.RecordID, b.RecordID) })
	return tasks, nil
}

// scanEmbeddingTasks appends the leased tasks of rows (a lease statement's
// result) to tasks and closes rows.
func scanEmbeddingTasks(rows pgx.Rows, profile string, tasks []storekit.EmbeddingTask) ([]storekit.EmbeddingTask, error) {
	defer rows.Close()
	for rows.Next() {
		var (
			t                  storekit.EmbeddingTask
			subjectType        string
			key, content, hash string
		)
		if err := rows.Scan(&t.RecordID, &t.Scope.TenantID, &subjectType, &t.Scope.SubjectID,
			&key, &content, &hash, &t.Attempt, &t.LeaseToken); err != nil {
			return nil, err
		}
		t.Scope.SubjectType = memorykit.SubjectType(subjectType)
		t.Profile = profile
		t.ContentHash = hash
		t.Text = storekit.EmbeddingText(key, content)
		tasks = append(tasks, t)
	}
	return tasks, rows.Err()
}

// PutEmbedding implements storekit.EmbeddingStore: one put, stored as
// PutEmbeddings stores each.
func (s *Store) PutEmbedding(ctx context.Context, p storekit.EmbeddingPut) error {
	const op = "pgstore.put_embedding"
	if err := live(ctx, op); err != nil {
		return err
	}
	if err := storekit.CheckEmbeddingPut(op, p, maxDims); err != nil {
		return err
	}
	errs, err := s.putValidated(ctx, op, []storekit.EmbeddingPut{p})
	if err != nil {
		return err
	}
	return errs[0]
}

// PutEmbeddings implements storekit.EmbeddingBatchPutter in one
// transaction of four statements, whatever the number of puts (see
// putValidated).
func (s *Store) PutEmbeddings(ctx context.Context, puts []storekit.EmbeddingPut) ([]error, error) {
	const op = "pgstore.put_embeddings"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckBatchSize(s.guard, op, len(puts)); err != nil {
		return nil, err
	}
	errs := make([]error, len(puts))
	valid := make([]storekit.EmbeddingPut, 0, len(puts))
	at := make([]int, 0, len(puts))
	for i, p := range puts {
		if err := storekit.CheckEmbeddingPut(op, p, maxDims); err != nil {
			errs[i] = storekit.BatchItemError(i, err)
			continue
		}
		valid = append(valid, p)
		at = append(at, i)
	}
	if len(valid) == 0 {
		return errs, nil
	}
	got, err := s.putValidated(ctx, op, valid)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		if got[j] != nil {
			errs[i] = storekit.BatchItemError(i, got[j])
		}
	}
	return errs, nil
}

// putValidated stores validated puts in one transaction and returns each
// one's outcome: the records are share-locked in ID order and checked as
// checkCurrent checks one; then the lease rows (kept, marked stored, so a
// lease statement that started before this commit cannot lease the record
// again: migration 0003), the queue rows (migration 0004) and the vectors
// of the puts that passed are written with one statement each. Storing the
// same vector again changes nothing, not even its time. The records stay
// share-locked and current until the commit, so the vectors are live; the
// records trigger (migration 0002) clears live when a record leaves that
// state.
func (s *Store) putValidated(ctx context.Context, op string, puts []storekit.EmbeddingPut) ([]error, error) {
	ids := make([]string, 0, len(puts))
	tenants := make([]string, 0, len(puts))
	for _, p := range puts {
		ids = append(ids, p.RecordID)
		tenants = append(tenants, p.Scope.TenantID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	now := s.now()
	var errs []error
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		recs, err := s.lockPutRecords(ctx, tx, ids, tenants)
		if err != nil {
			return err
		}
		// The latest lease of each record and profile, locked in key
		// order: a put older than it is refused (fencing token).
		tokens, err := s.embeddingLeaseTokens(ctx, tx, puts)
		if err != nil {
			return err
		}
		var keep []int
		errs, keep = judgePuts(op, puts, recs, tokens)
		if len(keep) == 0 {
			return nil
		}
		return s.writePuts(ctx, tx, puts, keep, now)
	})
	if err != nil {
		return nil, err
	}
	s.wrote(distinctScopes(len(puts), func(i int) (memorykit.Scope, bool) { return puts[i].Scope, errs[i] == nil })...)
	return errs, nil
}

// putRecord is what a put is checked against: its record's Scope, status
// and content hash.
type putRecord struct {
	scope        memorykit.Scope
	status, hash string
}

// lockPutRecords share-locks (in ID order) and reads the records ids of
// tenants.
func (s *Store) lockPutRecords(ctx context.Context, tx pgx.Tx, ids, tenants []string) (map[string]putRecord, error) {
	recs := make(map[string]putRecord, len(ids))
	if !s.distributed {
		return recs, s.readPutRecords(ctx, tx, recs, s.stmt("put_lock_records"), ids, tenants)
	}
	// Citus locks rows only in a statement naming one tenant.
	for _, t := range tenants {
		if err := s.readPutRecords(ctx, tx, recs, s.stmt("put_lock_records_in"), ids, t); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// readPutRecords runs the put_lock_records statement q and adds its rows
// to recs.
func (s *Store) readPutRecords(ctx context.Context, tx pgx.Tx, recs map[string]putRecord, q string, args ...any) error {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, subjectType string
			c               putRecord
		)
		if err := rows.Scan(&id, &c.scope.TenantID, &subjectType, &c.scope.SubjectID, &c.status, &c.hash); err != nil {
			return err
		}
		c.scope.SubjectType = memorykit.SubjectType(subjectType)
		recs[id] = c
	}
	rows.Close()
	return rows.Err()
}

// judgePuts gives each put its error (record missing or in another Scope,
// content changed, lease token stale) and returns the puts to write: the
// last accepted put of each record and profile (earlier ones are
// overwritten by it, as in a sequence of PutEmbedding calls), in key
// order, like the locks.
func judgePuts(op string, puts []storekit.EmbeddingPut, recs map[string]putRecord, tokens map[[2]string]leaseToken) ([]error, []int) {
	type target struct{ id, profile string }
	errs := make([]error, len(puts))
	last := make(map[target]int)
	for i, p := range puts {
		c, ok := recs[p.RecordID]
		t, leased := tokens[[2]string{p.RecordID, p.Profile}]
		switch {
		case !ok || c.scope != p.Scope:
			errs[i] = notFound(op)
		case c.status != string(memorykit.StatusActive) || c.hash != p.ContentHash:
			errs[i] = memorykit.NewError(op, memorykit.ErrStale, "content_changed")
		case leased && t.hash == p.ContentHash && t.token > p.LeaseToken:
			errs[i] = memorykit.NewError(op, memorykit.ErrLeaseLost, storekit.ReasonStaleLeaseToken)
		default:
			last[target{p.RecordID, p.Profile}] = i
		}
	}
	keep := make([]int, 0, len(last))
	for _, i := range last {
		keep = append(keep, i)
	}
	slices.SortFunc(keep, func(a, b int) int {
		if c := strings.Compare(puts[a].RecordID, puts[b].RecordID); c != 0 {
			return c
		}
		return strings.Compare(puts[a].Profile, puts[b].Profile)
	})
	return errs, keep
}

// writePuts writes the kept puts: their lease rows become "stored", their
// queue rows go, and their vectors are upserted.
func (s *Store) writePuts(ctx context.Context, tx pgx.Tx, puts []storekit.EmbeddingPut, keep []int, now time.Time) error {
	var (
		recIDs, profiles, tenants, types, subjects, hashes = make([]string, len(keep)), make([]string, len(keep)),
			make([]string, len(keep)), make([]string, len(keep)), make([]string, len(keep)), make([]string, len(keep))
		dims = make([]int32, len(keep))
		vecs = make([]pgvector.Vector, len(keep))
	)
	for j, i := range keep {
		p := puts[i]
		recIDs[j], profiles[j], hashes[j] = p.RecordID, p.Profile, p.ContentHash
		tenants[j], types[j], subjects[j] = p.Scope.TenantID, string(p.Scope.SubjectType), p.Scope.SubjectID
		dims[j] = int32(len(p.Vector))
		vecs[j] = pgvector.NewVector(append([]float32(nil), p.Vector...))
	}
	if _, err := tx.Exec(ctx, s.stmt("put_mark_leases_stored"), recIDs, profiles, hashes, now, tenants); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, s.stmt("put_dequeue"), recIDs, profiles, tenants); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, s.stmt("put_upsert_embeddings"),
		recIDs, profiles, tenants, types, subjects, hashes, dims, vecs, now)
	return err
}

// leaseToken is the fencing token of a lease row and the content hash it
// belongs to.
type leaseToken struct {
	hash  string
	token int64
}

// embeddingLeaseTokens locks (FOR UPDATE, in key order) and reads the lease
// rows of the puts' records and profiles.
func (s *Store) embeddingLeaseTokens(ctx context.Context, tx pgx.Tx, puts []storekit.EmbeddingPut) (map[[2]string]leaseToken, error) {
	ids := make([]string, len(puts))
	profiles := make([]string, len(puts))
	tenants := make([]string, len(puts))
	for i, p := range puts {
		ids[i], profiles[i], tenants[i] = p.RecordID, p.Profile, p.Scope.TenantID
	}
	out := make(map[[2]string]leaseToken)
	if !s.distributed {
		return out, readLeaseTokens(ctx, tx, out, s.stmt("embedding_lease_tokens"), ids, profiles, tenants)
	}
	for _, t := range sortedUnique(tenants) {
		if err := readLeaseTokens(ctx, tx, out, s.stmt("embedding_lease_tokens_in"), ids, profiles, tenants, t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readLeaseTokens runs the embedding_lease_tokens statement q and adds its
// rows to out.
func readLeaseTokens(ctx context.Context, tx pgx.Tx, out map[[2]string]leaseToken, q string, args ...any) error {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, profile string
		var t leaseToken
		if err := rows.Scan(&id, &profile, &t.hash, &t.token); err != nil {
			return err
		}
		out[[2]string{id, profile}] = t
	}
	return rows.Err()
}

// checkCurrent share-locks a record in scope and checks it is active at
// hash: a missing record is ErrNotFound, any other state ErrStale.
func (s *Store) checkCurrent(ctx context.Context, tx pgx.Tx, op string, scope memorykit.Scope, id, hash string) error {
	var status, current string
	err := tx.QueryRow(ctx, s.stmt("check_current"), id, scope.TenantID, string(scope.SubjectType), scope.SubjectID).Scan(&status, &current)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(op)
	}
	if err != nil {
		return err
	}
	if status != string(memorykit.StatusActive) || current != hash {
		return memorykit.NewError(op, memorykit.ErrStale, "content_changed")
	}
	return nil
}

// ReleaseEmbedding implements storekit.EmbeddingStore. A release for a
// record that is no longer active at r.ContentHash is ErrStale.
func (s *Store) ReleaseEmbedding(ctx context.Context, r storekit.EmbeddingRelease) error {
	const op = "pgstore.release_embedding"
	if err := live(ctx, op); err != nil {
		return err
	}
	if err := storekit.CheckEmbeddingRelease(op, r); err != nil {
		return err
	}
	now := s.now()
	return s.inTx(ctx, op, func(tx pgx.Tx) error {
		if err := s.checkCurrent(ctx, tx, op, r.Scope, r.RecordID, r.ContentHash); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, s.stmt("release_embedding_lease"),
			r.RecordID, r.Profile, r.ContentHash, r.Reason, now, r.Park, nullTime(r.RetryAt), r.WorkerID, r.LeaseToken,
			r.Scope.TenantID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		var token int64
		err = tx.QueryRow(ctx, s.stmt("embedding_lease_token"),
			r.RecordID, r.Profile, r.ContentHash, r.Scope.TenantID).Scan(&token)
		if err == nil && token != r.LeaseToken {
			return memorykit.NewError(op, memorykit.ErrLeaseLost, storekit.ReasonStaleLeaseToken)
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return memorykit.NewError(op, memorykit.ErrLeaseLost, storekit.ReasonNotLeaseHolder)
	})
}

// PendingEmbeddings implements storekit.EmbeddingStore.
func (s *Store) PendingEmbeddings(ctx context.Context, profile string) (int, error) {
	const op = "pgstore.pending_embeddings"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	if err := storekit.ValidateProfile(op, profile); err != nil {
		return 0, err
	}
	// A registered profile's queue holds every pending record (see
	// migration 0004); another profile has to be counted the long way.
	var n int
	err := s.pool.QueryRow(ctx, s.stmt("pending_embeddings"),
		profile).Scan(&n)
	if err != nil {
		return 0, mapErr(op, err)
	}
	return n, nil
}

// PendingEmbeddingsIn implements storekit.ScopedPendingCounter. It
// counts the Scope's records directly (the records index on the Scope
// bounds the scan), so the answer does not depend on whether the profile
// is registered.
func (s *Store) PendingEmbeddingsIn(ctx context.Context, scope memorykit.Scope, profile string) (int, error) {
	const op = "pgstore.pending_embeddings_in"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	if err := scope.Validate(); err != nil {
		return 0, err
	}
	if err := storekit.ValidateProfile(op, profile); err != nil {
		return 0, err
	}
	var n int
	err := s.pool.QueryRow(ctx, s.stmt("pending_embeddings_in"),
		profile, scope.TenantID, string(scope.SubjectType), scope.SubjectID).Scan(&n)
	if err != nil {
		return 0, mapErr(op, err)
	}
	return n, nil
}

// registerLockTimeout bounds how long registering a profile waits for the
// lock on records (see registerProfile).
var registerLockTimeout = 2 * time.Second

// registerProfile makes sure the profile's embedding queue exists
// (migration 0004). The first call for a profile fills the queue with
// every active record lacking a current embedding of it, holding a lock
// on records that waits for every open writer and keeps new ones out
// until the profile is registered: from then on the records triggers
// queue the records that become active. Registered profiles are
// remembered, so later calls cost nothing.
func (s *Store) registerProfile(ctx context.Context, op, profile string) error {
	if _, ok := s.profiles.Load(profile); ok {
		return nil
	}
	var known bool
	if err := s.pool.QueryRow(ctx, s.stmt("profile_registered"),
		profile).Scan(&known); err != nil {
		return mapErr(op, err)
	}
	if !known {
		err := s.inTx(ctx, op, func(tx pgx.Tx) error {
			// Writers queue behind a waiting lock request, so a long
			// transaction holding records must not stall them for long:
			// past registerLockTimeout the registration fails
			// recoverably and the worker tries again after its backoff.
			if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", registerLockTimeout.Milliseconds())); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, s.stmt("lock_records_for_registration")); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, s.stmt("insert_profile"), profile)
			if err != nil || tag.RowsAffected() == 0 {
				return err
			}
			_, err = tx.Exec(ctx, s.stmt("queue_profile_records"), profile)
			return err
		})
		if err != nil {
			return err
		}
		// Fresh statistics, so the lease statement reads the queue in
		// index order rather than sorting it.
		if _, err := s.pool.Exec(ctx, s.stmt("analyze_embedding_queue")); err != nil {
			return mapErr(op, err)
		}
	}
	s.profiles.Store(profile, struct{}{})
	return nil
}

// DeleteEmbeddings implements storekit.EmbeddingStore.
func (s *Store) DeleteEmbeddings(ctx context.Context, profile string, scope memorykit.Scope) (int, error) {
	return s.deleteEmbeddings(ctx, "pgstore.delete_embeddings", profile, &scope)
}

// DeleteAllEmbeddings implements storekit.EmbeddingStore.
func (s *Store) DeleteAllEmbeddings(ctx context.Context, profile string) (int, error) {
	return s.deleteEmbeddings(ctx, "pgstore.delete_all_embeddings", profile, nil)
}

// deleteEmbeddings deletes the profile's embeddings and lease state in
// scope, or everywhere when scope is nil.
func (s *Store) deleteEmbeddings(ctx context.Context, op, profile string, scope *memorykit.Scope) (int, error) {
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	if err := storekit.ValidateProfile(op, profile); err != nil {
		return 0, err
	}
	all := scope == nil
	var sc memorykit.Scope
	if !all {
		if err := scope.Validate(); err != nil {
			return 0, err
		}
		sc = *scope
	}
	var n int
	err := s.pool.QueryRow(ctx, s.stmt("delete_embeddings"),
		profile, all, sc.TenantID, string(sc.SubjectType), sc.SubjectID).Scan(&n)
	if err != nil {
		return 0, mapErr(op, err)
	}
	if !all && n > 0 {
		s.wrote(sc)
	}
	return n, nil
}

// ReapEmbeddingLeases implements storekit.EmbeddingStore. A lease is
// expired once the clock reaches its expiry.
func (s *Store) ReapEmbeddingLeases(ctx context.Context) (int, error) {
	const op = "pgstore.reap_embedding_leases"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	now := s.now()
	if s.distributed {
		// Citus locks rows only in a statement naming one tenant.
		rows, err := s.pool.Query(ctx, s.stmt("expired_lease_tenants"), now)
		if err != nil {
			return 0, mapErr(op, err)
		}
		tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return 0, mapErr(op, err)
		}
		n := 0
		for _, t := range tenants {
			tag, err := s.pool.Exec(ctx, s.stmt("reap_embedding_leases_in"), now, t)
			if err != nil {
				return n, mapErr(op, err)
			}
			n += int(tag.RowsAffected())
		}
		return n, nil
	}
	tag, err := s.pool.Exec(ctx, s.stmt("reap_embedding_leases"), now)
	if err != nil {
		return 0, mapErr(op, err)
	}
	return int(tag.RowsAffected()), nil
}

// maxDims is pgvector's limit on a vector's dimensions: the bound pgstore
// passes to storekit.CheckVector, and beyond which a query vector can
// match nothing.
const maxDims = 16000

// ScopeCounts are the work-queue numbers of one Scope, for operators: the
// numbers PendingEmbeddings and CountJobs give for the whole database,
// restricted to the Scope. They hold no content.
type ScopeCounts struct {
	// PendingEmbeddings counts the Scope's active records lacking a
	// current embedding of the profile, parked ones included.
	PendingEmbeddings int
	// Jobs counts the Scope's extraction jobs by state.
	Jobs storekit.JobCounts
}

// CountScope returns the ScopeCounts of one Scope for an embedding
// profile, in one statement.
func (s *Store) CountScope(ctx context.Context, profile string, scope memorykit.Scope) (ScopeCounts, error) {
	const op = "pgstore.count_scope"
	if err := live(ctx, op); err != nil {
		return ScopeCounts{}, err
	}
	if err := storekit.ValidateProfile(op, profile); err != nil {
		return ScopeCounts{}, err
	}
	if err := scope.Validate(); err != nil {
		return ScopeCounts{}, err
	}
	var c ScopeCounts
	err := s.pool.QueryRow(ctx, s.stmt("count_scope"),
		profile, scope.TenantID, string(scope.SubjectType), scope.SubjectID).Scan(
		&c.PendingEmbeddings, &c.Jobs.Queued, &c.Jobs.Leased, &c.Jobs.Done, &c.Jobs.Failed)
	if err != nil {
		return ScopeCounts{}, mapErr(op, err)
	}
	return c, nil
}
