-- memorykit schema, version 10: a transaction bumps a Scope's version once.
--
-- Until version 9 every statement that changed records or embeddings of a
-- Scope bumped its version and wrote the change row of every record it
-- touched at the new version. A write of several statements (CreateBatch:
-- supersede the old holders, copy the records, copy their embeddings; a
-- single Create the same) bumped the version two or three times and wrote
-- each record's change row twice, the second time to move it from the
-- version of the records statement to that of the embeddings statement.
--
-- Nobody outside the transaction can see the versions in between: a
-- reader sees the whole transaction or none of it, and the recall cache
-- only reads committed rows (a Store on a transaction does not cache). So
-- a Scope bumped earlier in the same transaction keeps that version, and a
-- record logged at it already is not written again. The transaction's own
-- earlier bump is recognised by the version row's xmin, which is the
-- transaction's id once it updated (or inserted) the row. A bump made in a
-- subtransaction carries the subtransaction's id and is not recognised;
-- the statement then bumps again, as version 9 did, which is correct and
-- only slower.
--
-- The scopes CTE reads the version rows the statement does not bump (its
-- snapshot holds them as this transaction left them, and this transaction
-- holds their row locks); rows at a version bumped by this statement are
-- new, so only the others are checked for a change row already written.
CREATE OR REPLACE FUNCTION {schema}.bump_scope_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH touched AS (
        SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id FROM changed c
    ), bumped AS (
        INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
        SELECT t.tenant_id, t.subject_type, t.subject_id, 1 FROM touched t
        ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE SET version = v.version + 1
            WHERE v.xmin <> pg_current_xact_id()::xid
        RETURNING v.tenant_id, v.subject_type, v.subject_id, v.version
    ), scopes AS (
        SELECT b.tenant_id, b.subject_type, b.subject_id, b.version, true AS fresh FROM bumped b
        UNION ALL
        SELECT v.tenant_id, v.subject_type, v.subject_id, v.version, false
        FROM {schema}.scope_versions v JOIN touched t USING (tenant_id, subject_type, subject_id)
        WHERE v.xmin = pg_current_xact_id()::xid
          AND NOT EXISTS (SELECT 1 FROM bumped b WHERE b.tenant_id = v.tenant_id
              AND b.subject_type = v.subject_type AND b.subject_id = v.subject_id)
    )
    INSERT INTO {schema}.scope_changes AS x (tenant_id, subject_type, subject_id, record_id, version)
    SELECT DISTINCT s.tenant_id, s.subject_type, s.subject_id, c.id, s.version
    FROM changed c JOIN scopes s USING (tenant_id, subject_type, subject_id)
    WHERE s.fresh OR NOT EXISTS (SELECT 1 FROM {schema}.scope_changes y
        WHERE y.tenant_id = s.tenant_id AND y.subject_type = s.subject_type
          AND y.subject_id = s.subject_id AND y.record_id = c.id AND y.version = s.version)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, record_id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END
$$;

-- The same for embeddings, whose rows name their record in record_id.
CREATE OR REPLACE FUNCTION {schema}.bump_scope_versions_embeddings() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH touched AS (
        SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id FROM changed c
    ), bumped AS (
        INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
        SELECT t.tenant_id, t.subject_type, t.subject_id, 1 FROM touched t
        ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE SET version = v.version + 1
            WHERE v.xmin <> pg_current_xact_id()::xid
        RETURNING v.tenant_id, v.subject_type, v.subject_id, v.version
    ), scopes AS (
        SELECT b.tenant_id, b.subject_type, b.subject_id, b.version, true AS fresh FROM bumped b
        UNION ALL
        SELECT v.tenant_id, v.subject_type, v.subject_id, v.version, false
        FROM {schema}.scope_versions v JOIN touched t USING (tenant_id, subject_type, subject_id)
        WHERE v.xmin = pg_current_xact_id()::xid
          AND NOT EXISTS (SELECT 1 FROM bumped b WHERE b.tenant_id = v.tenant_id
              AND b.subject_type = v.subject_type AND b.subject_id = v.subject_id)
    )
    INSERT INTO {schema}.scope_changes AS x (tenant_id, subject_type, subject_id, record_id, version)
    SELECT DISTINCT s.tenant_id, s.subject_type, s.subject_id, c.record_id, s.version
    FROM changed c JOIN scopes s USING (tenant_id, subject_type, subject_id)
    WHERE s.fresh OR NOT EXISTS (SELECT 1 FROM {schema}.scope_changes y
        WHERE y.tenant_id = s.tenant_id AND y.subject_type = s.subject_type
          AND y.subject_id = s.subject_id AND y.record_id = c.record_id AND y.version = s.version)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, record_id) DO UPDATE SET version = EXCLUDED.version;
    RETURN NULL;
END
$$;
