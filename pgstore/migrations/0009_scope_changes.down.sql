-- Undoes version 9: the change log goes, and the Scope versions are bumped
-- as version 8 bumps them: one function for records and embeddings, without
-- a change row per record.
DROP TRIGGER embeddings_version_insert ON {schema}.embeddings;
DROP TRIGGER embeddings_version_update ON {schema}.embeddings;
DROP TRIGGER embeddings_version_delete ON {schema}.embeddings;
DROP FUNCTION {schema}.bump_scope_versions_embeddings();

CREATE OR REPLACE FUNCTION {schema}.bump_scope_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
    SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id, 1 FROM changed c
    ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE SET version = v.version + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER embeddings_version_insert AFTER INSERT ON {schema}.embeddings
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();
CREATE TRIGGER embeddings_version_update AFTER UPDATE ON {schema}.embeddings
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();
CREATE TRIGGER embeddings_version_delete AFTER DELETE ON {schema}.embeddings
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();

DROP TABLE {schema}.scope_changes;
