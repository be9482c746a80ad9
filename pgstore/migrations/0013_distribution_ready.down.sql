-- Undoes version 13: the keys and foreign keys on record ids alone, the
-- tenant columns of revisions, embedding_leases and embedding_queue, and
-- the trigger functions of versions 2, 4 and 10. It fails when two tenants
-- hold records with one id, which version 12 could not store.

ALTER TABLE {schema}.revisions DROP CONSTRAINT revisions_record_fkey;
ALTER TABLE {schema}.embeddings DROP CONSTRAINT embeddings_record_fkey;
ALTER TABLE {schema}.embedding_leases DROP CONSTRAINT embedding_leases_record_fkey;

ALTER TABLE {schema}.records DROP CONSTRAINT records_pkey, ADD PRIMARY KEY (id);
ALTER TABLE {schema}.revisions DROP CONSTRAINT revisions_pkey, ADD PRIMARY KEY (record_id, version);
ALTER TABLE {schema}.embeddings DROP CONSTRAINT embeddings_pkey, ADD PRIMARY KEY (record_id, profile);
ALTER TABLE {schema}.embedding_leases DROP CONSTRAINT embedding_leases_pkey, ADD PRIMARY KEY (record_id, profile);
ALTER TABLE {schema}.embedding_queue DROP CONSTRAINT embedding_queue_pkey, ADD PRIMARY KEY (profile, record_id);
ALTER TABLE {schema}.recall_text DROP CONSTRAINT recall_text_pkey, ADD PRIMARY KEY (record_id);

ALTER TABLE {schema}.revisions DROP COLUMN tenant_id;
ALTER TABLE {schema}.embedding_leases DROP COLUMN tenant_id;
ALTER TABLE {schema}.embedding_queue DROP COLUMN tenant_id;

ALTER TABLE {schema}.revisions ADD CONSTRAINT revisions_record_id_fkey
    FOREIGN KEY (record_id) REFERENCES {schema}.records (id);
ALTER TABLE {schema}.embeddings ADD CONSTRAINT embeddings_record_id_fkey
    FOREIGN KEY (record_id) REFERENCES {schema}.records (id);
ALTER TABLE {schema}.embedding_leases ADD CONSTRAINT embedding_leases_record_id_fkey
    FOREIGN KEY (record_id) REFERENCES {schema}.records (id);

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

CREATE OR REPLACE FUNCTION {schema}.records_sync() RETURNS trigger
LANGUAGE plpgsql
SET work_mem = '64MB'
AS $fn$
DECLARE
    olds {schema}.records[] := '{}';
    news {schema}.records[] := '{}';
BEGIN
    IF TG_OP <> 'INSERT' THEN
        SELECT coalesce(array_agg(o), '{}') INTO olds FROM old_rows o
        WHERE o.status = 'active';
    END IF;
    IF TG_OP <> 'DELETE' THEN
        SELECT coalesce(array_agg(n), '{}') INTO news FROM new_rows n
        WHERE n.status = 'active';
    END IF;

    IF TG_OP = 'UPDATE' THEN
        -- A vector is current while its record is active at its hash.
        UPDATE {schema}.embeddings e
        SET live = (n.status = 'active' AND n.content_hash = e.content_hash)
        FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE e.record_id = n.id
          AND (o.status IS DISTINCT FROM n.status OR o.content_hash IS DISTINCT FROM n.content_hash)
          AND e.live IS DISTINCT FROM (n.status = 'active' AND n.content_hash = e.content_hash);
    END IF;

    IF cardinality(olds) = 0 AND cardinality(news) = 0 THEN
        RETURN NULL;
    END IF;

    INSERT INTO {schema}.term_df AS d (tenant_id, subject_type, subject_id, term, df, max_from)
    SELECT x.tenant_id, x.subject_type, x.subject_id, '', 0::bigint, max(x.effective_from)
    FROM (SELECT tenant_id, subject_type, subject_id, NULL::timestamptz AS effective_from FROM unnest(olds)
          UNION ALL SELECT tenant_id, subject_type, subject_id, effective_from FROM unnest(news)) x
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, subject_type, subject_id, term)
    DO UPDATE SET df = d.df, max_from = greatest(d.max_from, excluded.max_from);

    INSERT INTO {schema}.term_df AS d (tenant_id, subject_type, subject_id, term, df)
    SELECT x.tenant_id, x.subject_type, x.subject_id, x.term, sum(x.delta)
    FROM (
        SELECT o.tenant_id, o.subject_type, o.subject_id, w.term COLLATE "C", -1 AS delta
        FROM unnest(olds) o, unnest(array_append(tsvector_to_array(o.search_tsv), '')) AS w(term)
        UNION ALL
        SELECT n.tenant_id, n.subject_type, n.subject_id, w.term COLLATE "C", 1
        FROM unnest(news) n, unnest(array_append(tsvector_to_array(n.search_tsv), '')) AS w(term)
    ) x
    GROUP BY 1, 2, 3, 4
    HAVING sum(x.delta) <> 0
    ON CONFLICT (tenant_id, subject_type, subject_id, term) DO UPDATE SET df = d.df + excluded.df;

    IF cardinality(olds) > 0 THEN
        DELETE FROM {schema}.term_df d
        USING (
            SELECT DISTINCT o.tenant_id, o.subject_type, o.subject_id, w.term COLLATE "C" AS term
            FROM unnest(olds) o, unnest(tsvector_to_array(o.search_tsv)) AS w(term)
        ) g
        WHERE d.tenant_id = g.tenant_id AND d.subject_type = g.subject_type
          AND d.subject_id = g.subject_id AND d.term = g.term AND d.df = 0;

        DELETE FROM {schema}.recall_text t
        USING unnest(olds) o
        WHERE t.record_id = o.id
          AND NOT EXISTS (SELECT 1 FROM unnest(news) n WHERE n.id = o.id);
    END IF;

    INSERT INTO {schema}.recall_text AS t (record_id, tenant_id, subject_type, subject_id,
        effective_from, effective_until, updated_at, terms)
    SELECT n.id, n.tenant_id, n.subject_type, n.subject_id, n.effective_from, n.effective_until,
        n.updated_at, n.search_tsv
    FROM unnest(news) n
    ON CONFLICT (record_id) DO UPDATE SET
        effective_from = excluded.effective_from,
        effective_until = excluded.effective_until,
        updated_at = excluded.updated_at,
        terms = excluded.terms;

    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION {schema}.records_sync_insert() RETURNS trigger
LANGUAGE plpgsql
SET work_mem = '64MB'
AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows WHERE status = 'active') THEN
        RETURN NULL;
    END IF;

    -- The scopes' '' rows first, in order (see Locking above); then the
    -- counts, aggregated by hashing, in any order.
    INSERT INTO {schema}.term_df AS d (tenant_id, subject_type, subject_id, term, df, max_from)
    SELECT n.tenant_id, n.subject_type, n.subject_id, '', 0::bigint, max(n.effective_from)
    FROM new_rows n WHERE n.status = 'active'
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, subject_type, subject_id, term)
    DO UPDATE SET df = d.df, max_from = greatest(d.max_from, excluded.max_from);

    INSERT INTO {schema}.term_df AS d (tenant_id, subject_type, subject_id, term, df)
    SELECT n.tenant_id, n.subject_type, n.subject_id, w.term COLLATE "C", count(*)
    FROM new_rows n, unnest(array_append(tsvector_to_array(n.search_tsv), '')) AS w(term)
    WHERE n.status = 'active'
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, term) DO UPDATE SET df = d.df + excluded.df;

    INSERT INTO {schema}.recall_text AS t (record_id, tenant_id, subject_type, subject_id,
        effective_from, effective_until, updated_at, terms)
    SELECT n.id, n.tenant_id, n.subject_type, n.subject_id, n.effective_from, n.effective_until,
        n.updated_at, n.search_tsv
    FROM new_rows n
    WHERE n.status = 'active';

    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION {schema}.records_queue_insert() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    INSERT INTO {schema}.embedding_queue (profile, record_id)
    SELECT p.profile, n.id
    FROM new_rows n CROSS JOIN {schema}.embedding_profiles p
    WHERE n.status = 'active'
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION {schema}.records_queue_update() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    DELETE FROM {schema}.embedding_queue q
    USING new_rows n
    WHERE q.record_id = n.id AND n.status <> 'active';

    -- A record that became active, or whose content changed, needs a
    -- vector unless it already has one for its current content (it was
    -- embedded before it left the active status, say).
    INSERT INTO {schema}.embedding_queue (profile, record_id)
    SELECT p.profile, n.id
    FROM new_rows n
    JOIN old_rows o ON o.id = n.id
    CROSS JOIN {schema}.embedding_profiles p
    WHERE n.status = 'active'
      AND (o.status <> 'active' OR o.content_hash IS DISTINCT FROM n.content_hash)
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.embeddings e
          WHERE e.record_id = n.id AND e.profile = p.profile AND e.content_hash = n.content_hash)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION {schema}.records_queue_delete() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    DELETE FROM {schema}.embedding_queue q
    USING old_rows o
    WHERE q.record_id = o.id;
    RETURN NULL;
END
$fn$;
