-- memorykit schema, version 8: a version per Scope for pgstore's optional
-- in-process recall cache.
--
-- Every statement that inserts, updates or deletes rows of records or
-- embeddings bumps the version of each Scope it touched, in the same
-- transaction, through statement-level triggers; so a reader that sees a
-- version has seen every committed change made before it, whichever
-- process or pool made it. The version only grows. A Scope without a row
-- has never been written.
CREATE TABLE {schema}.scope_versions (
    tenant_id     text COLLATE "C" NOT NULL,
    subject_type  text COLLATE "C" NOT NULL,
    subject_id    text COLLATE "C" NOT NULL,
    version       bigint NOT NULL,
    PRIMARY KEY (tenant_id, subject_type, subject_id)
);

INSERT INTO {schema}.scope_versions (tenant_id, subject_type, subject_id, version)
SELECT DISTINCT tenant_id, subject_type, subject_id, 1 FROM {schema}.records;

-- The rows are locked in Scope order, so two statements touching the same
-- Scopes take their locks in the same order.
CREATE FUNCTION {schema}.bump_scope_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
    SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id, 1 FROM changed c
    ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE SET version = v.version + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER records_version_insert AFTER INSERT ON {schema}.records
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();
CREATE TRIGGER records_version_update AFTER UPDATE ON {schema}.records
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();
CREATE TRIGGER records_version_delete AFTER DELETE ON {schema}.records
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();
CREATE TRIGGER embeddings_version_insert AFTER INSERT ON {schema}.embeddings
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();
CREATE TRIGGER embeddings_version_update AFTER UPDATE ON {schema}.embeddings
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();
CREATE TRIGGER embeddings_version_delete AFTER DELETE ON {schema}.embeddings
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {schema}.bump_scope_versions();
