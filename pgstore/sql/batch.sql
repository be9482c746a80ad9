-- Statements of batch.go (see sql.go for the layout).

-- name: batch_taken_ids
SELECT id FROM {schema}.records WHERE id = ANY ($1::text[])

-- name: batch_active_holders
SELECT r.id, r.version, r.tenant_id, r.subject_type, r.subject_id, r.kind, r.key
	FROM {schema}.records r
	JOIN unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS k(t, st, sid, kind, key)
	  ON r.tenant_id = k.t AND r.subject_type = k.st AND r.subject_id = k.sid AND r.kind = k.kind AND r.key = k.key
	WHERE r.status = 'active'
	ORDER BY r.id
	FOR UPDATE OF r

-- name: batch_active_holders_in
-- batch_active_holders for one tenant ($6) of a distributed schema: Citus
-- locks rows only in a statement that names one tenant.
SELECT r.id, r.version, r.tenant_id, r.subject_type, r.subject_id, r.kind, r.key
	FROM {schema}.records r
	JOIN unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS k(t, st, sid, kind, key)
	  ON r.tenant_id = k.t AND r.subject_type = k.st AND r.subject_id = k.sid AND r.kind = k.kind AND r.key = k.key
	WHERE r.status = 'active' AND r.tenant_id = $6
	ORDER BY r.id
	FOR UPDATE OF r

-- name: batch_supersede
WITH x AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS x(id, actor_kind, actor_id, reason, at)
), u AS (
	UPDATE {schema}.records r SET status = 'superseded', version = r.version + 1,
		touched_by_kind = x.actor_kind, touched_by_id = x.actor_id, updated_at = x.at
	FROM x WHERE r.id = x.id
	RETURNING r.*, x.reason AS why
)
INSERT INTO {schema}.revisions (record_id, version, action, actor_kind, actor_id, reason,
	status, content_hash, content, metadata, sources, at, tenant_id)
SELECT id, version, 'supersede', touched_by_kind, touched_by_id, why, status, content_hash,
	content, metadata, sources, updated_at, tenant_id
FROM u

-- name: batch_dequeue_embedded
-- $1, $2, $3: the records the batch gave a vector, that vector's profile
-- and the record's tenant.
DELETE FROM {schema}.embedding_queue q
	USING unnest($1::text[], $2::text[], $3::text[]) AS e(record_id, profile, tenant_id)
	WHERE q.profile = e.profile AND q.record_id = e.record_id AND q.tenant_id = e.tenant_id

-- name: batch_dequeue_embedded_in
-- batch_dequeue_embedded for one tenant ($4) of a distributed schema: the
-- plain equality lets Citus send it to that tenant's shard alone instead
-- of every shard.
DELETE FROM {schema}.embedding_queue q
	USING unnest($1::text[], $2::text[], $3::text[]) AS e(record_id, profile, tenant_id)
	WHERE q.profile = e.profile AND q.record_id = e.record_id AND q.tenant_id = e.tenant_id
	  AND q.tenant_id = $4
