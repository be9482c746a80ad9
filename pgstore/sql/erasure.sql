-- Statements of erasure.go (see sql.go for the layout).

-- name: hold_scope
SELECT EXISTS (SELECT 1 FROM {schema}.purges
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND finished_at IS NULL)

-- name: erasure_jobs
SELECT action, reason, sources, content FROM {schema}.revisions WHERE record_id = $1

-- name: scrub_rows
WITH rv AS (
		UPDATE {schema}.revisions
		SET content = '', content_hash = '', metadata = NULL, sources = NULL, reason = {reason_code}
		WHERE record_id = ANY ($1::text[])
		RETURNING 1
	), emb AS (
		DELETE FROM {schema}.embeddings WHERE record_id = ANY ($1::text[]) RETURNING 1
	), lease AS (
		DELETE FROM {schema}.embedding_leases WHERE record_id = ANY ($1::text[]) RETURNING 1
	), queue AS (
		DELETE FROM {schema}.embedding_queue WHERE record_id = ANY ($1::text[]) RETURNING 1
	)
	SELECT (SELECT count(*) FROM rv), (SELECT count(*) FROM emb),
		(SELECT count(*) FROM lease) + (SELECT count(*) FROM queue)

-- name: scrub_jobs
WITH t AS (
		SELECT id, state, cardinality(erased_keys) = 0 AS fresh FROM {schema}.jobs
		WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3
		  AND ($4::text[] IS NULL OR id = ANY ($4::text[]))
		  AND state IN ('queued', 'leased')
		  AND NOT ($5 = ANY (erased_keys))
		FOR UPDATE
	), u AS (
		UPDATE {schema}.jobs j SET payload = '', updated_at = $6,
			state = CASE WHEN t.state = 'queued' THEN 'failed' ELSE j.state END,
			last_error = CASE WHEN t.state = 'queued' THEN $7 ELSE j.last_error END,
			erased_keys = CASE WHEN t.state = 'leased' THEN array_append(j.erased_keys, $5) ELSE j.erased_keys END
		FROM t WHERE j.id = t.id
		RETURNING j.id, t.fresh
	)
	SELECT coalesce(array_agg(id) FILTER (WHERE fresh), '{}') FROM u

-- name: drop_run_refs
WITH d AS (
		UPDATE {schema}.jobs SET run_ref = ''
		WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3
		  AND ($4::text[] IS NULL OR id = ANY ($4::text[])) AND run_ref <> ''
		RETURNING id
	)
	SELECT coalesce(array_agg(id), '{}') FROM d

-- name: quoting_jobs
SELECT id, payload FROM {schema}.jobs
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3
	  AND state IN ('queued', 'leased') AND NOT (id = ANY ($4::text[]))
	ORDER BY id
	FOR UPDATE

-- name: finish_quoting_jobs
UPDATE {schema}.jobs SET state = 'failed', payload = '', last_error = $2, leased_by = '',
		lease_expires_at = NULL, erased_keys = '{}', run_ref = '', updated_at = $3
	WHERE id = ANY ($1::text[])

-- name: erased_keys
SELECT erased_keys FROM {schema}.jobs WHERE id = $1

-- name: erased_handback
UPDATE {schema}.jobs SET state = 'failed', payload = '',
		last_error = $2, leased_by = '', lease_expires_at = NULL, erased_keys = '{}', updated_at = $3
	WHERE id = $1 AND cardinality(erased_keys) > 0
	RETURNING {job_cols}

-- name: reap_erased
WITH picked AS (
		SELECT id FROM {schema}.jobs
		WHERE state = 'leased' AND lease_expires_at <= $1 AND cardinality(erased_keys) > 0
		FOR UPDATE SKIP LOCKED
	)
	UPDATE {schema}.jobs j SET state = 'failed', payload = '',
		last_error = $2, leased_by = '', lease_expires_at = NULL, erased_keys = '{}', updated_at = $1
	FROM picked WHERE j.id = picked.id

-- name: start_purge
INSERT INTO {schema}.purges AS p (tenant_id, subject_type, subject_id,
		actor_kind, actor_id, reason, started_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7)
	ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE SET
		actor_kind = excluded.actor_kind, actor_id = excluded.actor_id, reason = excluded.reason,
		started_at = excluded.started_at, finished_at = NULL, records = 0, record_ids = '{}',
		revisions = 0, embeddings = 0, jobs = 0, queue_entries = 0, digest = ''
	WHERE p.finished_at IS NOT NULL

-- name: count_purged_jobs
UPDATE {schema}.purges SET jobs = jobs + $4
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3

-- name: finish_purge
UPDATE {schema}.purges SET finished_at = $4, digest = $5
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3

-- name: purge_lock_records
SELECT id, key FROM {schema}.records
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND status <> 'erased'
	ORDER BY id LIMIT $4 FOR UPDATE

-- name: purge_actor
SELECT actor_kind, actor_id, reason FROM {schema}.purges
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3

-- name: purge_dequeue
WITH d AS (DELETE FROM {schema}.embedding_queue WHERE record_id = ANY ($1::text[]) RETURNING 1)
	SELECT count(*) FROM d

-- name: purge_erase_records
WITH u AS (
		UPDATE {schema}.records r SET status = 'erased', version = r.version + 1, key = d.digest,
			content = '', content_hash = '', metadata = NULL, sources = NULL, search_tsv = ''::tsvector,
			touched_by_kind = $3, touched_by_id = $4, updated_at = $5
		FROM unnest($1::text[], $2::text[]) AS d(id, digest)
		WHERE r.id = d.id
		RETURNING r.*
	)
	INSERT INTO {schema}.revisions (record_id, version, action, actor_kind, actor_id, reason,
		status, content_hash, content, metadata, sources, at, tenant_id)
	SELECT id, version, 'purge', $3, $4, $6, status, '', '', NULL, NULL, $5, tenant_id FROM u

-- name: purge_count_step
UPDATE {schema}.purges SET records = records + $4,
		record_ids = record_ids || $5::text[], revisions = revisions + $6,
		embeddings = embeddings + $7, queue_entries = queue_entries + $8
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3

-- name: read_purge
SELECT actor_kind, actor_id, reason, started_at, records, record_ids,
		revisions, embeddings, jobs, queue_entries
	FROM {schema}.purges WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3

-- name: legacy_tombstones
SELECT id, tenant_id, subject_type, subject_id, key FROM {schema}.records
	WHERE status = 'erased' AND key NOT LIKE $1

-- name: digest_tombstone
UPDATE {schema}.records SET key = $2 WHERE id = $1 AND status = 'erased'