-- Statements of jobs.go (see sql.go for the layout).

-- name: enqueue_job
INSERT INTO {schema}.jobs (id, tenant_id, subject_type, subject_id, payload, state,
		attempt, max_attempts, available_at, created_at, updated_at, max_reaps, run_ref)
	VALUES ($1, $2, $3, $4, $5, 'queued', 0, $6, $7, $7, $7, $8, $9)
	ON CONFLICT (id) DO NOTHING
	RETURNING {job_cols}

-- name: lease_jobs
WITH picked AS (
		SELECT id FROM {schema}.jobs
		WHERE state = 'queued' AND available_at <= $1
		ORDER BY available_at, id
		LIMIT $4
		FOR UPDATE SKIP LOCKED
	)
	UPDATE {schema}.jobs j SET state = 'leased', attempt = j.attempt + 1,
		leased_by = $2, lease_expires_at = $3, updated_at = $1,
		lease_token = nextval('{schema}.lease_tokens')
	FROM picked WHERE j.id = picked.id
	RETURNING {job_cols_j}

-- name: insert_candidates
WITH ins AS (
	INSERT INTO {schema}.records (id, tenant_id, subject_type, subject_id, kind, key, content,
		metadata, sources, status, version, content_hash, effective_from, effective_until,
		created_by_kind, created_by_id, touched_by_kind, touched_by_id, created_at, updated_at,
		search_tsv)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, 1, $11, $12, $13,
		$14, $15, $14, $15, $16, $16, array_to_tsvector($17::text[]))
	ON CONFLICT (id, tenant_id) DO NOTHING
	RETURNING *
), rev AS (
	INSERT INTO {schema}.revisions (record_id, version, action, actor_kind, actor_id, reason,
		status, content_hash, content, metadata, sources, at, tenant_id)
	SELECT id, version, 'create', created_by_kind, created_by_id, $18, status, content_hash,
		content, metadata, sources, created_at, tenant_id
	FROM ins
)
SELECT {record_cols} FROM ins

-- name: finish_job
UPDATE {schema}.jobs SET state = 'done', payload = '', erased_keys = '{}',
		leased_by = '', lease_expires_at = NULL, candidates = $2, updated_at = $3
	WHERE id = $1

-- name: complete_empty
UPDATE {schema}.jobs SET state = 'done', payload = '', erased_keys = '{}',
		leased_by = '', lease_expires_at = NULL, candidates = 0, updated_at = $3
	WHERE id = $1 AND state = 'leased' AND leased_by = $2 AND lease_expires_at > $3
		AND lease_token = $4

-- name: fail_job
UPDATE {schema}.jobs SET
		last_error = $2, updated_at = $3, leased_by = '', lease_expires_at = NULL,
		failures = failures + 1,
		state = CASE WHEN $4::boolean THEN 'queued' ELSE 'failed' END,
		available_at = CASE WHEN $4::boolean THEN $5 ELSE available_at END,
		payload = CASE WHEN $4::boolean THEN payload ELSE '' END
	WHERE id = $1
	RETURNING {job_cols}

-- name: release_job
UPDATE {schema}.jobs SET attempt = attempt - 1, hand_backs = hand_backs + 1,
		leased_by = '', lease_expires_at = NULL, updated_at = $2,
		state = CASE WHEN $3::boolean THEN 'queued' ELSE 'failed' END,
		available_at = CASE WHEN $3::boolean THEN $2 ELSE available_at END,
		payload = CASE WHEN $3::boolean THEN payload ELSE '' END,
		last_error = CASE WHEN $3::boolean THEN last_error ELSE $4 END
	WHERE id = $1

-- name: reap_job_leases
-- Rows another session holds locked (a worker inside CompleteJob, say) are
-- skipped, not waited for: a frozen transaction must not stall reaping for
-- every other job; the skipped lease is reaped by a later pass.
WITH picked AS (
		SELECT id FROM {schema}.jobs
		WHERE state = 'leased' AND lease_expires_at <= $1
		FOR UPDATE SKIP LOCKED
	)
	UPDATE {schema}.jobs j SET
		last_error = $2, updated_at = $1, leased_by = '', lease_expires_at = NULL, reaps = j.reaps + 1,
		state = CASE WHEN j.reaps + 1 + j.hand_backs < j.max_reaps THEN 'queued' ELSE 'failed' END,
		available_at = CASE WHEN j.reaps + 1 + j.hand_backs < j.max_reaps THEN $1 ELSE j.available_at END,
		payload = CASE WHEN j.reaps + 1 + j.hand_backs < j.max_reaps THEN j.payload ELSE '' END
	FROM picked WHERE j.id = picked.id

-- name: get_job
SELECT {job_cols} FROM {schema}.jobs
	WHERE id = $1 AND tenant_id = $2 AND subject_type = $3 AND subject_id = $4

-- name: count_jobs
SELECT
		count(*) FILTER (WHERE state = 'queued'),
		count(*) FILTER (WHERE state = 'leased'),
		count(*) FILTER (WHERE state = 'done'),
		count(*) FILTER (WHERE state = 'failed')
	FROM {schema}.jobs

-- name: job_by_id
SELECT {job_cols} FROM {schema}.jobs WHERE id = $1

-- name: job_by_id_for_update
SELECT {job_cols} FROM {schema}.jobs WHERE id = $1 FOR UPDATE
