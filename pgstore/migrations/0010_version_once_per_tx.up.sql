-- memorykit schema, version 10: a transaction bumps a Scope's version once.
--
-- Until version 9 every statement that changed records or embeddings of a
-- Scope bumped its version and wrote the change row of every record it
-- touched at the new version. A write of several statements (CreateBatch:
-- supersede the old holders, copy the records, copy their embeddings; a
-- single Create the same) bumped the version two or three times and
-- rewrote each record's change row (a non-HOT update, version is indexed)
-- only to move it from the version of the records statement to that of
-- the embeddings statement.
--
-- Nobody outside the transaction can see the versions in between: a
-- reader sees the whole transaction or none of it, and the recall cache
-- only reads committed rows (a Store on a transaction does not cache). So
-- a Scope bumped earlier in the same transaction keeps that version, and a
-- change row already at it is left alone. The transaction's own earlier
-- bump is recognised by the version row's xmin, which is the
-- transaction's id once it updated (or inserted) the row. A bump made in a
-- subtransaction carries the subtransaction's id and is not recognised;
-- the statement then bumps again, as version 9 did, which is correct and
-- only slower. The version row is still updated (to the same value), so
-- RETURNING gives every touched Scope's version and the rows are locked
-- in Scope order as before.
CREATE OR REPLACE FUNCTION {schema}.bump_scope_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH bumped AS (
        INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
        SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id, 1 FROM changed c
        ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE
            SET version = v.version + CASE WHEN v.xmin = pg_current_xact_id()::xid THEN 0 ELSE 1 END
        RETURNING v.tenant_id, v.subject_type, v.subject_id, v.version
    )
    INSERT INTO {schema}.scope_changes AS x (tenant_id, subject_type, subject_id, record_id, version)
    SELECT DISTINCT b.tenant_id, b.subject_type, b.subject_id, c.id, b.version
    FROM changed c JOIN bumped b USING (tenant_id, subject_type, subject_id)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, record_id) DO UPDATE SET version = EXCLUDED.version
        WHERE x.version <> EXCLUDED.version;
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
        ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE
            SET version = v.version + CASE WHEN v.xmin = pg_current_xact_id()::xid THEN 0 ELSE 1 END
        RETURNING v.tenant_id, v.subject_type, v.subject_id, v.version
    )
    INSERT INTO {schema}.scope_changes AS x (tenant_id, subject_type, subject_id, record_id, version)
    SELECT DISTINCT b.tenant_id, b.subject_type, b.subject_id, c.record_id, b.version
    FROM changed c JOIN bumped b USING (tenant_id, subject_type, subject_id)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, record_id) DO UPDATE SET version = EXCLUDED.version
        WHERE x.version <> EXCLUDED.version;
    RETURN NULL;
END
$$;
