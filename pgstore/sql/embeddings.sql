-- Statements of embeddings.go (see sql.go for the layout).

-- name: lease_embeddings
-- Picks active records lacking a current embedding of
-- the profile and leases them. It starts from the profile's queue rows
-- (migration 0004), in record ID order, and checks each exactly. The
-- candidate rows are share-locked with SKIP LOCKED, so a record in the
-- middle of a lifecycle change is left for the next round; the upsert's
-- WHERE is evaluated against the latest lease row under its row lock, so
-- two workers racing for one record never both win it.
WITH cand AS (
	SELECT r.id, r.tenant_id, r.subject_type, r.subject_id, r.key, r.content, r.content_hash
	FROM (SELECT record_id, tenant_id FROM {schema}.embedding_queue WHERE profile = $1 ORDER BY record_id) q
	CROSS JOIN LATERAL (
		SELECT r.id, r.tenant_id, r.subject_type, r.subject_id, r.key, r.content, r.content_hash
		FROM {schema}.records r
		WHERE r.id = q.record_id AND r.tenant_id = q.tenant_id AND r.status = 'active'
		  AND ($6::text IS NULL OR (r.tenant_id = $6 AND r.subject_type = $7 AND r.subject_id = $8))
		  AND {no_current_embedding}
		  AND coalesce((SELECT l.content_hash <> r.content_hash
		       OR (l.worker_id IS NULL AND NOT l.parked AND NOT l.stored AND (l.retry_at IS NULL OR l.retry_at <= $2))
		       FROM {schema}.embedding_leases l WHERE l.record_id = r.id AND l.tenant_id = r.tenant_id AND l.profile = $1), true)
		FOR SHARE SKIP LOCKED
	) r
	ORDER BY q.record_id
	LIMIT $5
), up AS (
	INSERT INTO {schema}.embedding_leases AS l (record_id, profile, content_hash, worker_id,
		lease_expires_at, attempts, retry_at, parked, reason, updated_at, lease_token, tenant_id)
	SELECT id, $1, content_hash, $3, $4, 1, NULL, false, '', $2, nextval('{schema}.lease_tokens'), tenant_id
	FROM cand ORDER BY id
	ON CONFLICT (record_id, profile, tenant_id) DO UPDATE SET
		content_hash = excluded.content_hash,
		worker_id = excluded.worker_id,
		lease_expires_at = excluded.lease_expires_at,
		attempts = CASE WHEN l.content_hash = excluded.content_hash THEN l.attempts + 1 ELSE 1 END,
		retry_at = NULL,
		parked = false,
		reason = CASE WHEN l.content_hash = excluded.content_hash THEN l.reason ELSE '' END,
		stored = false,
		updated_at = excluded.updated_at,
		lease_token = excluded.lease_token
	WHERE l.content_hash <> excluded.content_hash
	   OR (l.worker_id IS NULL AND NOT l.parked AND NOT l.stored AND (l.retry_at IS NULL OR l.retry_at <= $2))
	RETURNING l.record_id, l.tenant_id, l.content_hash, l.attempts, l.lease_token
)
SELECT c.id, c.tenant_id, c.subject_type, c.subject_id, c.key, c.content, up.content_hash, up.attempts,
	up.lease_token
FROM up JOIN cand c ON c.id = up.record_id AND c.tenant_id = up.tenant_id
ORDER BY c.id

-- name: lease_candidates_in
-- The first half of lease_embeddings for one tenant ($2) of a distributed
-- schema: the candidates, share-locked with SKIP LOCKED in a statement
-- naming one tenant (the only kind in which Citus locks rows). $3/$4
-- restrict them to one Scope when not NULL, $5 is now, $6 the limit.
SELECT r.id, r.subject_type, r.subject_id, r.key, r.content, r.content_hash
	FROM (SELECT record_id FROM {schema}.embedding_queue WHERE profile = $1::text AND tenant_id = $2::text ORDER BY record_id) q
	CROSS JOIN LATERAL (
		SELECT r.id, r.subject_type, r.subject_id, r.key, r.content, r.content_hash
		FROM {schema}.records r
		WHERE r.id = q.record_id AND r.tenant_id = $2::text AND r.status = 'active'
		  AND ($3::text IS NULL OR (r.subject_type = $3::text AND r.subject_id = $4::text))
		  AND (SELECT e.content_hash FROM {schema}.embeddings e
		       WHERE e.record_id = r.id AND e.tenant_id = $2::text AND e.profile = $1::text) IS DISTINCT FROM r.content_hash
		  AND coalesce((SELECT l.content_hash <> r.content_hash
		       OR (l.worker_id IS NULL AND NOT l.parked AND NOT l.stored AND (l.retry_at IS NULL OR l.retry_at <= $5::timestamptz))
		       FROM {schema}.embedding_leases l WHERE l.record_id = r.id AND l.tenant_id = $2::text AND l.profile = $1::text), true)
		FOR SHARE SKIP LOCKED
	) r
	ORDER BY q.record_id
	LIMIT $6::int

-- name: lease_upsert_in
-- The second half: the lease rows of the candidates ($6 ids, $7 content
-- hashes, $8 fencing tokens drawn from the sequence on the coordinator)
-- of tenant $5, upserted as lease_embeddings does. The conflict clause
-- names no parameter (excluded.updated_at is now, $2): Citus runs it on
-- the shard with the rows from the coordinator, where a parameter the
-- rest of the statement no longer uses has no type.
INSERT INTO {schema}.embedding_leases AS l (record_id, profile, content_hash, worker_id,
		lease_expires_at, attempts, retry_at, parked, reason, updated_at, lease_token, tenant_id)
	SELECT u.id, $1::text, u.hash, $3::text, $4::timestamptz, 1, NULL::timestamptz, false, '', $2::timestamptz,
		u.token, $5::text
	FROM unnest($6::text[], $7::text[], $8::bigint[]) AS u(id, hash, token)
	ORDER BY u.id
	ON CONFLICT (record_id, profile, tenant_id) DO UPDATE SET
		content_hash = excluded.content_hash,
		worker_id = excluded.worker_id,
		lease_expires_at = excluded.lease_expires_at,
		attempts = CASE WHEN l.content_hash = excluded.content_hash THEN l.attempts + 1 ELSE 1 END,
		retry_at = NULL,
		parked = false,
		reason = CASE WHEN l.content_hash = excluded.content_hash THEN l.reason ELSE '' END,
		stored = false,
		updated_at = excluded.updated_at,
		lease_token = excluded.lease_token
	WHERE l.content_hash <> excluded.content_hash
	   OR (l.worker_id IS NULL AND NOT l.parked AND NOT l.stored AND (l.retry_at IS NULL OR l.retry_at <= excluded.updated_at))
	RETURNING l.record_id, l.content_hash, l.attempts, l.lease_token

-- name: embedding_queue_tenants
SELECT DISTINCT tenant_id FROM {schema}.embedding_queue WHERE profile = $1 ORDER BY 1

-- name: put_lock_records
SELECT id, tenant_id, subject_type, subject_id, status, content_hash
	FROM {schema}.records WHERE id = ANY ($1::text[]) AND tenant_id = ANY ($2::text[]) ORDER BY id FOR SHARE

-- name: put_mark_leases_stored
INSERT INTO {schema}.embedding_leases AS l (record_id, profile, content_hash, worker_id,
		lease_expires_at, attempts, retry_at, parked, reason, updated_at, stored, tenant_id)
	SELECT u.id, u.profile, u.hash, NULL, NULL, 0, NULL, false, '', $4, true, u.tenant
	FROM unnest($1::text[], $2::text[], $3::text[], $5::text[]) AS u(id, profile, hash, tenant)
	ON CONFLICT (record_id, profile, tenant_id) DO UPDATE SET
		content_hash = excluded.content_hash, worker_id = NULL, lease_expires_at = NULL,
		retry_at = NULL, parked = false, reason = '', stored = true, updated_at = excluded.updated_at
	WHERE NOT (l.stored AND l.content_hash = excluded.content_hash AND l.worker_id IS NULL)

-- name: put_dequeue
DELETE FROM {schema}.embedding_queue q
	USING unnest($1::text[], $2::text[], $3::text[]) AS u(id, profile, tenant)
	WHERE q.profile = u.profile AND q.record_id = u.id AND q.tenant_id = u.tenant

-- name: put_upsert_embeddings
INSERT INTO {schema}.embeddings AS e (record_id, profile, tenant_id, subject_type, subject_id,
		content_hash, dims, embedding, created_at, live)
	SELECT u.id, u.profile, u.tenant, u.stype, u.sid, u.hash, u.dims, u.vec, $9, true
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[],
		$8::{ext}.vector[]) AS u(id, profile, tenant, stype, sid, hash, dims, vec)
	ON CONFLICT (record_id, profile, tenant_id) DO UPDATE SET
		content_hash = excluded.content_hash, dims = excluded.dims,
		embedding = excluded.embedding, created_at = excluded.created_at, live = true
	WHERE e.content_hash <> excluded.content_hash
	   OR e.embedding::real[] <> excluded.embedding::real[]
	   OR NOT e.live

-- name: embedding_lease_tokens
SELECT l.record_id, l.profile, l.content_hash, l.lease_token
	FROM {schema}.embedding_leases l
	WHERE (l.record_id, l.profile, l.tenant_id) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
	ORDER BY l.record_id, l.profile
	FOR UPDATE OF l

-- name: embedding_lease_tokens_in
-- embedding_lease_tokens for one tenant ($4) of a distributed schema.
SELECT l.record_id, l.profile, l.content_hash, l.lease_token
	FROM {schema}.embedding_leases l
	WHERE (l.record_id, l.profile, l.tenant_id) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
	  AND l.tenant_id = $4
	ORDER BY l.record_id, l.profile
	FOR UPDATE OF l

-- name: put_lock_records_in
-- put_lock_records for one tenant ($2) of a distributed schema.
SELECT id, tenant_id, subject_type, subject_id, status, content_hash
	FROM {schema}.records WHERE id = ANY ($1::text[]) AND tenant_id = $2 ORDER BY id FOR SHARE

-- name: check_current
SELECT status, content_hash FROM {schema}.records
	WHERE id = $1 AND tenant_id = $2 AND subject_type = $3 AND subject_id = $4
	FOR SHARE

-- name: release_embedding_lease
UPDATE {schema}.embedding_leases SET
		worker_id = NULL, lease_expires_at = NULL, reason = $4, updated_at = $5,
		parked = parked OR $6::boolean,
		retry_at = CASE WHEN $6::boolean THEN retry_at ELSE $7::timestamptz END
	WHERE record_id = $1 AND profile = $2 AND content_hash = $3 AND worker_id = $8
		AND lease_token = $9 AND tenant_id = $10

-- name: embedding_lease_token
SELECT lease_token FROM {schema}.embedding_leases
	WHERE record_id = $1 AND profile = $2 AND content_hash = $3 AND tenant_id = $4

-- name: pending_embeddings
SELECT CASE WHEN EXISTS (SELECT 1 FROM {schema}.embedding_profiles WHERE profile = $1)
	THEN (SELECT count(*) FROM {schema}.embedding_queue q
		JOIN {schema}.records r ON r.id = q.record_id AND r.tenant_id = q.tenant_id
		WHERE q.profile = $1 AND r.status = 'active' AND {no_current_embedding})
	ELSE (SELECT count(*) FROM {schema}.records r
		LEFT JOIN {schema}.embeddings e ON e.record_id = r.id AND e.tenant_id = r.tenant_id AND e.profile = $1
		WHERE r.status = 'active' AND (e.record_id IS NULL OR e.content_hash <> r.content_hash)) END

-- name: pending_embeddings_in
SELECT count(*) FROM {schema}.records r
	WHERE r.tenant_id = $2 AND r.subject_type = $3 AND r.subject_id = $4
	AND r.status = 'active' AND {no_current_embedding}

-- name: profile_registered
SELECT EXISTS (SELECT 1 FROM {schema}.embedding_profiles WHERE profile = $1)

-- name: lock_records_for_registration
LOCK TABLE {schema}.records IN SHARE ROW EXCLUSIVE MODE

-- name: insert_profile
INSERT INTO {schema}.embedding_profiles (profile) VALUES ($1)
	ON CONFLICT DO NOTHING

-- name: queue_profile_records
INSERT INTO {schema}.embedding_queue (profile, record_id, tenant_id)
	SELECT $1::text, r.id, r.tenant_id FROM {schema}.records r
	WHERE r.status = 'active' AND NOT EXISTS (
		SELECT 1 FROM {schema}.embeddings e
		WHERE e.record_id = r.id AND e.tenant_id = r.tenant_id AND e.profile = $1 AND e.content_hash = r.content_hash)
	ON CONFLICT DO NOTHING

-- name: analyze_embedding_queue
ANALYZE {schema}.embedding_queue

-- name: delete_embeddings
WITH d AS (
		DELETE FROM {schema}.embeddings
		WHERE profile = $1
		  AND ($2::boolean OR (tenant_id = $3 AND subject_type = $4 AND subject_id = $5))
		RETURNING 1
	), l AS (
		DELETE FROM {schema}.embedding_leases l USING {schema}.records r
		WHERE l.profile = $1 AND r.id = l.record_id AND r.tenant_id = l.tenant_id
		  AND ($2::boolean OR (r.tenant_id = $3 AND r.subject_type = $4 AND r.subject_id = $5))
	), q AS (
		INSERT INTO {schema}.embedding_queue (profile, record_id, tenant_id)
		SELECT $1::text, r.id, r.tenant_id FROM {schema}.records r
		WHERE r.status = 'active'
		  AND ($2::boolean OR (r.tenant_id = $3 AND r.subject_type = $4 AND r.subject_id = $5))
		  AND EXISTS (SELECT 1 FROM {schema}.embedding_profiles WHERE profile = $1)
		ON CONFLICT DO NOTHING
	)
	SELECT count(*) FROM d

-- name: reap_embedding_leases
-- Leases another session holds locked are skipped, not waited for (see
-- reap_job_leases).
WITH picked AS (
		SELECT record_id, profile, tenant_id FROM {schema}.embedding_leases
		WHERE worker_id IS NOT NULL AND lease_expires_at <= $1
		FOR UPDATE SKIP LOCKED
	)
	UPDATE {schema}.embedding_leases l
	SET worker_id = NULL, lease_expires_at = NULL, updated_at = $1
	FROM picked WHERE l.record_id = picked.record_id AND l.profile = picked.profile
		AND l.tenant_id = picked.tenant_id

-- name: reap_embedding_leases_in
-- reap_embedding_leases for one tenant ($2) of a distributed schema.
WITH picked AS (
		SELECT record_id, profile, tenant_id FROM {schema}.embedding_leases
		WHERE worker_id IS NOT NULL AND lease_expires_at <= $1 AND tenant_id = $2
		FOR UPDATE SKIP LOCKED
	)
	UPDATE {schema}.embedding_leases l
	SET worker_id = NULL, lease_expires_at = NULL, updated_at = $1
	FROM picked WHERE l.record_id = picked.record_id AND l.profile = picked.profile
		AND l.tenant_id = picked.tenant_id AND l.tenant_id = $2

-- name: expired_lease_tenants
SELECT DISTINCT tenant_id FROM {schema}.embedding_leases
	WHERE worker_id IS NOT NULL AND lease_expires_at <= $1 ORDER BY 1

-- name: count_scope
SELECT
		(SELECT count(*) FROM {schema}.records r
		 WHERE r.tenant_id = $2 AND r.subject_type = $3 AND r.subject_id = $4 AND r.status = 'active'
		   AND {no_current_embedding}),
		count(*) FILTER (WHERE j.state = 'queued'),
		count(*) FILTER (WHERE j.state = 'leased'),
		count(*) FILTER (WHERE j.state = 'done'),
		count(*) FILTER (WHERE j.state = 'failed')
	FROM {schema}.jobs j
	WHERE j.tenant_id = $2 AND j.subject_type = $3 AND j.subject_id = $4