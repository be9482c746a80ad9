-- The recall cache (recallcache.go): a Scope's version, and the rows a
-- cached copy of the Scope is built or refreshed from. Each group runs in
-- one pipelined REPEATABLE READ READ ONLY transaction, so the version and
-- the rows come from one database snapshot.
--
-- A refresh reads the rows of the records changed after the cached
-- version ($4). They are looked up by primary key, one probe per changed
-- record, whatever the planner knows about the tables: the ids come as an
-- array and no other indexed condition is left beside them for the planner
-- to prefer (OFFSET 0 keeps the status filter out of the scan; the record
-- of an embedding is read by a correlated probe). Right after a bulk load
-- the planner knows nothing, and joins it estimated at one row became
-- scans of the Scope (or of every active record) per changed record.

-- name: scope_version
SELECT COALESCE((SELECT version FROM {schema}.scope_versions
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3), 0)

-- name: read_delta_changed
SELECT c.record_id FROM {schema}.scope_changes c
	WHERE c.tenant_id = $1 AND c.subject_type = $2 AND c.subject_id = $3 AND c.version > $4

-- name: read_delta_records
SELECT {record_cols} FROM (SELECT * FROM {schema}.records WHERE tenant_id = $1 AND id = ANY ((SELECT coalesce(array_agg(record_id), '{}') FROM (SELECT c.record_id FROM {schema}.scope_changes c
	WHERE c.tenant_id = $1 AND c.subject_type = $2 AND c.subject_id = $3 AND c.version > $4) ch)::text[]) OFFSET 0) r
	WHERE status = 'active'

-- name: read_delta_embeddings
SELECT e.record_id, e.profile, e.content_hash, e.embedding
	FROM (SELECT * FROM {schema}.embeddings WHERE tenant_id = $1 AND record_id = ANY ((SELECT coalesce(array_agg(record_id), '{}') FROM (SELECT c.record_id FROM {schema}.scope_changes c
	WHERE c.tenant_id = $1 AND c.subject_type = $2 AND c.subject_id = $3 AND c.version > $4) ch)::text[]) OFFSET 0) e
	WHERE e.content_hash = (SELECT r.content_hash FROM {schema}.records r
		WHERE r.id = e.record_id AND r.tenant_id = $1 AND r.status = 'active')

-- name: load_scope_records
SELECT {record_cols} FROM {schema}.records
	WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND status = 'active'

-- name: load_scope_embeddings
SELECT e.record_id, e.profile, e.content_hash, e.embedding
	FROM {schema}.embeddings e JOIN {schema}.records r ON r.id = e.record_id AND r.tenant_id = e.tenant_id
	WHERE e.tenant_id = $1 AND e.subject_type = $2 AND e.subject_id = $3
	AND r.status = 'active' AND r.content_hash = e.content_hash
