package pgstore

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Erasure rewrites rows in place: an UPDATE leaves the old row version in
// the table (and its old index entries) until VACUUM reclaims it, so the
// physical removal of erased text from disk follows the next VACUUM of the
// table. Purge runs VACUUM on the tables it touched when it finishes.

// purgeBatch is how many records one purge transaction erases.
const purgeBatch = 8

// reasonCodeSQL keeps a revision's reason only when it is a reason code
// (storekit.ScrubReason).
const reasonCodeSQL = `CASE WHEN reason ~ '^[a-z0-9_]{1,64}$' THEN reason ELSE '' END`

// scopeLock is the transaction advisory lock a purge takes exclusively to
// start, and every write to the Scope takes shared (holdScope), so no
// write that missed the purge row can commit after the purge began.
func (s *Store) scopeLock(scope memorykit.Scope) int64 {
	h := fnv.New64a()
	var n [8]byte
	for _, p := range []string{"purge", s.schema, scope.TenantID, string(scope.SubjectType), scope.SubjectID} {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return int64(h.Sum64())
}

// holdScope fails a write to scope with ErrPurging while a purge of the
// Scope is unfinished, and otherwise keeps a purge from starting until tx
// ends.
func (s *Store) holdScope(ctx context.Context, tx pgx.Tx, op string, scope memorykit.Scope) error {
	// Two statements, sent in one round trip: the lock first, then a fresh
	// snapshot (READ COMMITTED) that sees a purge row committed while we
	// waited for the lock.
	batch := &pgx.Batch{}
	batch.Queue("SELECT pg_advisory_xact_lock_shared($1)", s.scopeLock(scope))
	batch.Queue(s.stmt("hold_scope"),
		scope.TenantID, string(scope.SubjectType), scope.SubjectID)
	br := tx.SendBatch(ctx, batch)
	var purging bool
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&purging)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if purging {
		return storekit.PurgingError(op)
	}
	return nil
}

// tombstoneKey is the key an erased record of scope holds in place of
// canonicalKey. Every lookup of records by canonical key (List's Key
// filter, and any rule that asks whether a key was ever decided on) must
// also match rows with status 'erased' and this key, or an erased key
// would look new.
func (s *Store) tombstoneKey(scope memorykit.Scope, canonicalKey string) string {
	return s.keyer.Digest(scope, canonicalKey)
}

// erasureCounts counts the rows one erase touched.
type erasureCounts struct {
	revisions, embeddings, queue int
}

// erase turns rec, locked and checked against rule r, into a tombstone in
// tx: the key becomes its keyed digest, content, hash, metadata and
// sources are scrubbed from the record and every revision, free-text
// reasons are dropped, embeddings and embedding queue and lease rows are
// deleted, and the extraction jobs the record came from are scrubbed.
func (s *Store) erase(ctx context.Context, tx pgx.Tx, rec memorykit.Record, r storekit.LifecycleRule,
	actor memorykit.Actor, reason string, now time.Time) (memorykit.Record, error) {
	jobs, texts, err := s.erasureJobs(ctx, tx, rec)
	if err != nil {
		return memorykit.Record{}, err
	}
	digest := s.tombstoneKey(rec.Scope, rec.Key)
	out, err := s.touch(ctx, tx, "touch_erase", rec, r, actor, reason, now, digest)
	if err != nil {
		return memorykit.Record{}, err
	}
	if _, err := s.scrubRows(ctx, tx, []string{rec.ID}); err != nil {
		return memorykit.Record{}, err
	}
	if _, err := s.scrubJobs(ctx, tx, rec.Scope, jobs, digest, now); err != nil {
		return memorykit.Record{}, err
	}
	if len(jobs) > 0 {
		if _, err := s.dropRunRefs(ctx, tx, rec.Scope, jobs); err != nil {
			return memorykit.Record{}, err
		}
	}
	if err := s.finishQuotingJobs(ctx, tx, rec.Scope, jobs, texts, now); err != nil {
		return memorykit.Record{}, err
	}
	return out, nil
}

// dropRunRefs removes the run reference of the jobs ids of scope (every
// job of the Scope when ids is nil) and returns the ids of those that had
// one.
func (s *Store) dropRunRefs(ctx context.Context, tx pgx.Tx, scope memorykit.Scope, ids []string) ([]string, error) {
	var out []string
	err := tx.QueryRow(ctx, s.stmt("drop_run_refs"),
		scope.TenantID, string(scope.SubjectType), scope.SubjectID, ids).Scan(&out)
	return out, err
}

// finishQuotingJobs finishes every unfinished job of scope, other than
// own, whose payload quotes texts (storekit.PayloadQuotes) as a failed
// tombstone with reason storekit.ReasonErasedContent: payload, lease,
// erase marks and run reference cleared. The rows are locked and matched
// in Go, so all three stores apply one rule.
func (s *Store) finishQuotingJobs(ctx context.Context, tx pgx.Tx, scope memorykit.Scope, own, texts []string, now time.Time) error {
	if len(texts) == 0 {
		return nil
	}
	if own == nil {
		own = []string{}
	}
	rows, err := tx.Query(ctx, s.stmt("quoting_jobs"), scope.TenantID, string(scope.SubjectType), scope.SubjectID, own)
	if err != nil {
		return err
	}
	var hit []string
	for rows.Next() {
		var id, payload string
		if err := rows.Scan(&id, &payload); err != nil {
			rows.Close()
			return err
		}
		if storekit.PayloadQuotes(payload, texts) {
			hit = append(hit, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(hit) == 0 {
		return err
	}
	_, err = tx.Exec(ctx, s.stmt("finish_quoting_jobs"), hit, storekit.ReasonErasedContent, now)
	return err
}

// erasureJobs reads the record's revisions and returns the jobs its erase
// scrubs (storekit.ErasureJobIDs) and the texts a job's payload must not
// quote once it is erased (storekit.ErasedTexts).
func (s *Store) erasureJobs(ctx context.Context, tx pgx.Tx, rec memorykit.Record) ([]string, []string, error) {
	rows, err := tx.Query(ctx, s.stmt("erasure_jobs"), rec.ID)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var revs []storekit.Revision
	for rows.Next() {
		var v storekit.Revision
		var action string
		var src []byte
		if err := rows.Scan(&action, &v.Reason, &src, &v.Content); err != nil {
			return nil, nil, err
		}
		v.Action = memorykit.Action(action)
		if v.Sources, err = decodeSources(src); err != nil {
			return nil, nil, err
		}
		revs = append(revs, v)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return storekit.ErasureJobIDs(rec, revs), storekit.ErasedTexts(rec, revs), nil
}

// scrubRows scrubs the revisions of the records ids (content, hash,
// metadata, sources, free-text reasons) and deletes their embeddings and
// embedding lease and queue rows, counting the rows touched.
func (s *Store) scrubRows(ctx context.Context, tx pgx.Tx, ids []string) (erasureCounts, error) {
	var n erasureCounts
	err := tx.QueryRow(ctx, s.stmt("scrub_rows"), ids).
		Scan(&n.revisions, &n.embeddings, &n.queue)
	return n, err
}

// scrubJobs scrubs extraction jobs of scope for an erase whose key digest
// is digest (storekit.PurgeAllKeys for a purge); ids nil means every job
// of the Scope. A queued job becomes a failed tombstone with reason
// storekit.ReasonErased; a leased one loses its payload now and records
// the digest, and is finished when its worker hands it back. It returns
// the ids of the jobs scrubbed for the first time.
func (s *Store) scrubJobs(ctx context.Context, tx pgx.Tx, scope memorykit.Scope, ids []string, digest string, now time.Time) ([]string, error) {
	if ids != nil && len(ids) == 0 {
		return nil, nil
	}
	var out []string
	err := tx.QueryRow(ctx, s.stmt("scrub_jobs"),
		scope.TenantID, string(scope.SubjectType), scope.SubjectID, ids, digest, now, storekit.ReasonErased).Scan(&out)
	return out, err
}

// erasedKeys returns the erase marks of a job, locked by the caller's tx.
func (s *Store) erasedKeys(ctx context.Context, tx pgx.Tx, jobID string) ([]string, error) {
	var keys []string
	err := tx.QueryRow(ctx, s.stmt("erased_keys"), jobID).Scan(&keys)
	return keys, err
}

// erasedHandback finishes a scrubbed job whose worker hands it back with a
// failure or a release: it becomes a failed tombstone with reason
// storekit.ReasonErased. It reports whether the job was one; the caller's
// tx holds the job's row lock and has checked the lease.
func (s *Store) erasedHandback(ctx context.Context, tx pgx.Tx, jobID string, now time.Time) (storekit.Job, bool, error) {
	j, err := scanJob(tx.QueryRow(ctx, s.stmt("erased_handback"), jobID, storekit.ReasonErased, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return storekit.Job{}, false, nil
	}
	return j, err == nil, err
}

// erasedCompletion drops the candidates of a completion whose job erase
// scrubbed (their key digest among the job's marks, or all of them after a
// purge), and holds the completion off with ErrPurging while a purge of the
// job's Scope runs and candidates remain. The caller's tx holds the job's
// row lock and has checked the lease.
func erasedCompletion[T any](ctx context.Context, s *Store, tx pgx.Tx, op string, job storekit.Job, in []T, key func(T) string) ([]T, error) {
	marks, err := s.erasedKeys(ctx, tx, job.ID)
	if err != nil {
		return nil, err
	}
	if len(marks) > 0 {
		drop := make(map[string]bool, len(marks))
		for _, d := range marks {
			drop[d] = true
		}
		out := make([]T, 0, len(in))
		for _, c := range in {
			if !drop[storekit.PurgeAllKeys] && !drop[s.tombstoneKey(job.Scope, storekit.NormalizeKey(key(c)))] {
				out = append(out, c)
			}
		}
		return out, nil
	}
	if len(in) > 0 {
		if err := s.holdScope(ctx, tx, op, job.Scope); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// reapErased finishes scrubbed jobs whose lease expired as failed
// tombstones with reason storekit.ReasonErased.
func (s *Store) reapErased(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, s.stmt("reap_erased"), now, storekit.ReasonErased)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// Purge implements storekit.Purger. Each step is its own transaction and
// adds its counts to the Scope's purges row in the same transaction, so a
// purge cut off anywhere resumes where it stopped and reports the union.
// After the last step, and before the purge is marked finished, the
// touched tables are vacuumed (outside any transaction), so the scrubbed
// row versions leave the disk.
func (s *Store) Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error) {
	const op = "pgstore.purge"
	if err := live(ctx, op); err != nil {
		return memorykit.PurgeReport{}, err
	}
	if err := storekit.CheckPurge(op, scope, actor, reason); err != nil {
		return memorykit.PurgeReport{}, err
	}
	sc := []any{scope.TenantID, string(scope.SubjectType), scope.SubjectID}
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", s.scopeLock(scope)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.stmt("start_purge"),
			append(sc, string(actor.Kind), actor.ID, reason, s.now())...)
		return err
	})
	if err != nil {
		return memorykit.PurgeReport{}, err
	}
	for {
		done := false
		err := s.inTx(ctx, op, func(tx pgx.Tx) error {
			var err error
			done, err = s.purgeStep(ctx, tx, scope)
			return err
		})
		if err != nil {
			return memorykit.PurgeReport{}, err
		}
		if done {
			break
		}
	}
	err = s.inTx(ctx, op, func(tx pgx.Tx) error {
		scrubbed, err := s.scrubJobs(ctx, tx, scope, nil, storekit.PurgeAllKeys, s.now())
		if err != nil {
			return err
		}
		stripped, err := s.dropRunRefs(ctx, tx, scope, nil)
		if err != nil {
			return err
		}
		// Each job the purge changed counts once.
		changed := make(map[string]bool, len(scrubbed)+len(stripped))
		for _, id := range append(scrubbed, stripped...) {
			changed[id] = true
		}
		_, err = tx.Exec(ctx, s.stmt("count_purged_jobs"), append(sc, len(changed))...)
		return err
	})
	if err != nil {
		return memorykit.PurgeReport{}, err
	}
	// Vacuum before the purge is marked finished: a purge cut off here
	// vacuums again when it resumes.
	if err := s.vacuum(ctx, op); err != nil {
		return memorykit.PurgeReport{}, err
	}
	var rep memorykit.PurgeReport
	err = s.inTx(ctx, op, func(tx pgx.Tx) error {
		now := s.now()
		var err error
		rep, err = s.readPurge(ctx, tx, scope)
		if err != nil {
			return err
		}
		rep.FinishedAt = now
		rep.Digest = storekit.PurgeReportDigest(rep)
		_, err = tx.Exec(ctx, s.stmt("finish_purge"), append(sc, now, rep.Digest)...)
		return err
	})
	if err != nil {
		return memorykit.PurgeReport{}, err
	}
	s.wrote(scope)
	return rep, nil
}

// purgeTables are the tables a purge rewrites or deletes from.
var purgeTables = []string{"records", "revisions", "embeddings", "embedding_leases", "embedding_queue",
	"recall_text", "term_df", "jobs", "purges"}

// vacuum reclaims the dead row versions erasure left behind.
func (s *Store) vacuum(ctx context.Context, op string) error {
	for _, t := range purgeTables {
		if _, err := s.pool.Exec(ctx, s.q(`VACUUM {schema}.`+t)); err != nil {
			return mapErr(op, err)
		}
	}
	return nil
}

// purgeStep erases up to purgeBatch records of the Scope not erased yet
// and adds the counts to the purge row; it reports true when none was
// left.
func (s *Store) purgeStep(ctx context.Context, tx pgx.Tx, scope memorykit.Scope) (bool, error) {
	rows, err := tx.Query(ctx, s.stmt("purge_lock_records"), scope.TenantID, string(scope.SubjectType), scope.SubjectID, purgeBatch)
	if err != nil {
		return false, err
	}
	var ids, digests []string
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return false, err
		}
		ids = append(ids, id)
		digests = append(digests, s.tombstoneKey(scope, key))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	if len(ids) == 0 {
		return true, nil
	}
	var p struct {
		kind, id, reason string
	}
	if err := tx.QueryRow(ctx, s.stmt("purge_actor"),
		scope.TenantID, string(scope.SubjectType), scope.SubjectID).Scan(&p.kind, &p.id, &p.reason); err != nil {
		return false, err
	}
	var queued int
	if err := tx.QueryRow(ctx, s.stmt("purge_dequeue"), ids).Scan(&queued); err != nil {
		return false, err
	}
	now := s.now()
	if _, err := tx.Exec(ctx, s.stmt("purge_erase_records"),
		ids, digests, p.kind, p.id, now, p.reason); err != nil {
		return false, err
	}
	n, err := s.scrubRows(ctx, tx, ids)
	if err != nil {
		return false, err
	}
	_, err = tx.Exec(ctx, s.stmt("purge_count_step"),
		scope.TenantID, string(scope.SubjectType), scope.SubjectID, len(ids), ids, n.revisions, n.embeddings, n.queue+queued)
	return false, err
}

// readPurge reads the Scope's purge row as a report.
func (s *Store) readPurge(ctx context.Context, tx pgx.Tx, scope memorykit.Scope) (memorykit.PurgeReport, error) {
	r := memorykit.PurgeReport{Scope: scope}
	var kind string
	err := tx.QueryRow(ctx, s.stmt("read_purge"),
		scope.TenantID, string(scope.SubjectType), scope.SubjectID).Scan(&kind, &r.Actor.ID, &r.Reason, &r.StartedAt,
		&r.Records, &r.RecordIDs, &r.Revisions, &r.Embeddings, &r.Jobs, &r.QueueEntries)
	r.Actor.Kind = memorykit.ActorKind(kind)
	r.StartedAt = r.StartedAt.UTC()
	if r.RecordIDs == nil {
		r.RecordIDs = []string{}
	}
	sort.Strings(r.RecordIDs)
	return r, err
}

// digestLegacyTombstones replaces the plain key of every erased record that
// still holds one (a tombstone written before schema 6, when erase kept the
// key) by its keyed digest. The digest needs the Host's secret, which SQL
// migrations do not have, so Open and New do it; once no such row is left
// it costs one read of the erased rows and writes nothing.
func (s *Store) digestLegacyTombstones(ctx context.Context, op string) error {
	rows, err := s.pool.Query(ctx, s.stmt("legacy_tombstones"), storekit.TombstoneKeyPrefix+"%")
	if err != nil {
		return mapErr(op, err)
	}
	type legacy struct {
		id  string
		key string
	}
	var todo []legacy
	for rows.Next() {
		var id, tenant, subjectType, subject, key string
		if err := rows.Scan(&id, &tenant, &subjectType, &subject, &key); err != nil {
			rows.Close()
			return mapErr(op, err)
		}
		scope := memorykit.Scope{TenantID: tenant, SubjectType: memorykit.SubjectType(subjectType), SubjectID: subject}
		todo = append(todo, legacy{id: id, key: s.tombstoneKey(scope, storekit.NormalizeKey(key))})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr(op, err)
	}
	for _, l := range todo {
		if _, err := s.pool.Exec(ctx, s.stmt("digest_tombstone"), l.id, l.key); err != nil {
			return mapErr(op, err)
		}
	}
	return nil
}
