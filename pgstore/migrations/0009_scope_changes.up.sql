-- memorykit schema, version 9: which records each Scope version changed,
-- so pgstore's recall cache can refresh a cached Scope by reading only the
-- rows changed since its copy's version instead of the whole Scope.
--
-- scope_changes keeps one row per record: the Scope version of the latest
-- statement that inserted, updated or deleted the record's row or any of
-- its embeddings. The row outlives the record (a purge deletes the record
-- and leaves its change row behind as the sign that it went), so a cache
-- that last saw version V learns everything that changed after V from the
-- rows with version > V: records that are no longer active or no longer
-- exist leave its copy, the others are read again with their vectors.
--
-- The rows are written by the same statement-level triggers that bump
-- scope_versions, in the writing transaction. The Scope's version row is
-- locked first, so two transactions writing to one Scope also meet here in
-- the same order. Changes made before this version are not logged: a cache
-- built from a full load starts at the Scope's version at that time.
CREATE TABLE {schema}.scope_changes (
    tenant_id     text COLLATE "C" NOT NULL,
    subject_type  text COLLATE "C" NOT NULL,
    subject_id    text COLLATE "C" NOT NULL,
    record_id     text COLLATE "C" NOT NULL,
    version       bigint NOT NULL,
    PRIMARY KEY (tenant_id, subject_type, subject_id, record_id)
);

CREATE INDEX scope_changes_since ON {schema}.scope_changes (tenant_id, subject_type, subject_id, version);

CREATE OR REPLACE FUNCTION {schema}.bump_scope_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH bumped AS (
        INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
        SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id, 1 FROM changed c
        ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE SET version = v.version + 1
        RETURNING v.tenant_id, v.subject_type, v.subject_id, v.version
    )
    INSERT INTO {schema}.scope_changes AS x (tenant_id, subject_type, subject_id, record_id, version)
    SELECT DISTINCT b.tenant_id, b.subject_type, b.subject_id, c.id, b.version
    FROM changed c JOIN bumped b USING (tenant_id, subject_type, subject_id)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, record_id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END
$$;

-- The same for embeddings, whose rows name their record in record_id.
CREATE FUNCTION {schema}.bump_scope_versions_embeddings() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH bumped AS (
        INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
        SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id, 1 FROM changed c
        ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE SET version = v.version + 1
        RETURNING v.tenant_id, v.subject_type, v.subject_id, v.version
    )
    INSERT INTO {schema}.scope_changes AS x (tenant_id, subject_type, subject_id, record_id, version)
    SELECT DISTINCT b.tenant_id, b.subject_type, b.subject_id, c.record_id, b.version
    FROM changed c JOIN bumped b USING (tenant_id, subject_type, subject_id)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, record_id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END
$$;

DROP TRIGGER embeddings_version_insert ON {schema}.embeddings;
DROP TRIGGER embeddings_version_update ON {schema}.embeddings;
DROP TRIGGER embeddings_version_delete ON {schema}.embeddings;
CREATE TRIGGER embeddings_version_insert AFTER INSERT ON {schema}.embeddings
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions_embeddings();
CREATE TRIGGER embeddings_version_update AFTER UPDATE ON {schema}.embeddings
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions_embeddings();
CREATE TRIGGER embeddings_version_delete AFTER DELETE ON {schema}.embeddings
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions_embeddings();
