-- Undoes version 10: every statement bumps the versions of the Scopes it
-- touched and writes its change rows at the new version, as version 9 did.
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
CREATE OR REPLACE FUNCTION {schema}.bump_scope_versions_embeddings() RETURNS trigger
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
