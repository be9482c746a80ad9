-- Statements of lifecycle.go (see sql.go for the layout).

-- name: key_governed
-- memorykit.GovernsKeyAgainst over every record of a Scope holding a
-- canonical key under any kind: $5/$6 is the owner, $7 the key's tombstone
-- digest, which erased records hold instead of it.
SELECT EXISTS (
	SELECT 1 FROM {schema}.records
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3
	  AND (key = $4 OR (status = 'erased' AND key = $7))
	  AND status <> 'candidate'
	  AND NOT (created_by_kind = $5 AND created_by_id = $6
	       AND touched_by_kind = $5 AND touched_by_id = $6
	       AND (version = 1 OR (status = 'superseded' AND version = 2))))

-- name: active_for_update
SELECT {record_cols} FROM {schema}.records
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND kind = $4 AND key = $5
	  AND status = 'active'
	FOR UPDATE

-- name: get
SELECT {record_cols} FROM {schema}.records
	WHERE id = $1 AND tenant_id = $2 AND subject_type = $3 AND subject_id = $4

-- name: find_active
SELECT {record_cols} FROM {schema}.records
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND kind = $4 AND key = $5
	  AND status = 'active'

-- name: list
SELECT {record_cols} FROM {schema}.records
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3
	  AND id > $4
	  AND (cardinality($5::text[]) = 0 OR status = ANY ($5::text[]))
	  AND ($6 = '' OR kind = $6)
	  AND ($7 = '' OR key = $7 OR (status = 'erased' AND key = $9))
	ORDER BY id
	LIMIT $8

-- name: lock_target
SELECT {record_cols} FROM {schema}.records
	WHERE id = $1 AND tenant_id = $2 AND subject_type = $3 AND subject_id = $4
	FOR UPDATE

-- name: transition
SELECT {record_cols} FROM {schema}.records
	WHERE id = $1 AND tenant_id = $2 AND subject_type = $3 AND subject_id = $4

-- name: revisions
SELECT v.record_id, v.version, v.action, v.actor_kind, v.actor_id, v.reason,
			v.status, v.content_hash, v.content, v.metadata, v.sources, v.at
		FROM {schema}.revisions v
		JOIN {schema}.records r ON r.id = v.record_id AND r.tenant_id = v.tenant_id
		WHERE r.id = $1 AND r.tenant_id = $2 AND r.subject_type = $3 AND r.subject_id = $4
		ORDER BY v.version

-- The touch statements move a record to a new status and version for a
-- lifecycle action and append the revision snapshotting the result, in one
-- statement: $1 id, $2 status, $3/$4 actor, $5 now, $6 action, $7 reason;
-- erase and correct set more columns from $8 on.

-- name: touch_plain
WITH u AS (
	UPDATE {schema}.records SET status = $2, version = version + 1,
		touched_by_kind = $3, touched_by_id = $4, updated_at = $5
	WHERE id = $1
	RETURNING *
), rev AS (
	INSERT INTO {schema}.revisions (record_id, version, action, actor_kind, actor_id, reason,
		status, content_hash, content, metadata, sources, at, tenant_id)
	SELECT id, version, $6, $3, $4, $7, status, content_hash, content, metadata, sources, $5, tenant_id
	FROM u
)
SELECT {record_cols} FROM u

-- name: touch_erase
WITH u AS (
	UPDATE {schema}.records SET status = $2, version = version + 1,
		touched_by_kind = $3, touched_by_id = $4, updated_at = $5,
		key = $8, content = '', content_hash = '', metadata = NULL, sources = NULL, search_tsv = ''::tsvector
	WHERE id = $1
	RETURNING *
), rev AS (
	INSERT INTO {schema}.revisions (record_id, version, action, actor_kind, actor_id, reason,
		status, content_hash, content, metadata, sources, at, tenant_id)
	SELECT id, version, $6, $3, $4, $7, status, content_hash, content, metadata, sources, $5, tenant_id
	FROM u
)
SELECT {record_cols} FROM u

-- name: touch_correct
WITH u AS (
	UPDATE {schema}.records SET status = $2, version = version + 1,
		touched_by_kind = $3, touched_by_id = $4, updated_at = $5,
		content = $8, content_hash = $9, sources = $10::jsonb,
		metadata = CASE WHEN $11::boolean THEN $12::jsonb ELSE metadata END,
		search_tsv = array_to_tsvector($13::text[])
	WHERE id = $1
	RETURNING *
), rev AS (
	INSERT INTO {schema}.revisions (record_id, version, action, actor_kind, actor_id, reason,
		status, content_hash, content, metadata, sources, at, tenant_id)
	SELECT id, version, $6, $3, $4, $7, status, content_hash, content, metadata, sources, $5, tenant_id
	FROM u
)
SELECT {record_cols} FROM u
