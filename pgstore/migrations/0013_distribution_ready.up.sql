-- memorykit schema, version 13: a schema that Citus can distribute by
-- tenant (see Distribute and docs/scale.md), unchanged in behaviour and
-- cost on a single PostgreSQL server.
--
-- Citus places every row of a distributed table on the shard of its
-- distribution column, tenant_id, and keeps the shards of all these tables
-- for one tenant on one node (co-location). For that:
--
--   * Every primary key and foreign key holds tenant_id. The keys keep
--     their old leading columns and gain tenant_id last, so a lookup by
--     record id alone still reads one index range on a single server.
--     revisions, embedding_leases and embedding_queue gain a tenant_id
--     column (filled from the records) for their keys and foreign keys.
--   * The trigger functions join and conflict on the new keys. Their
--     distributed forms, which Citus can run on a shard, are installed by
--     Distribute (citus_triggers.sql), not here: on one server they cost
--     about half again as much on a batch insert.
--
-- The job queue (jobs) keeps its key on id: it is not distributed (see
-- Distribute), so leasing stays one SKIP LOCKED statement over all
-- tenants.

ALTER TABLE {schema}.revisions DROP CONSTRAINT revisions_record_id_fkey;
ALTER TABLE {schema}.embeddings DROP CONSTRAINT embeddings_record_id_fkey;
ALTER TABLE {schema}.embedding_leases DROP CONSTRAINT embedding_leases_record_id_fkey;

ALTER TABLE {schema}.revisions ADD COLUMN tenant_id text COLLATE "C";
ALTER TABLE {schema}.embedding_leases ADD COLUMN tenant_id text COLLATE "C";
ALTER TABLE {schema}.embedding_queue ADD COLUMN tenant_id text COLLATE "C";
UPDATE {schema}.revisions v SET tenant_id = r.tenant_id FROM {schema}.records r WHERE r.id = v.record_id;
UPDATE {schema}.embedding_leases l SET tenant_id = r.tenant_id FROM {schema}.records r WHERE r.id = l.record_id;
UPDATE {schema}.embedding_queue q SET tenant_id = r.tenant_id FROM {schema}.records r WHERE r.id = q.record_id;
-- Queue rows are hints (migration 0004): one whose record is gone is
-- dropped rather than left without a tenant.
DELETE FROM {schema}.embedding_queue WHERE tenant_id IS NULL;
ALTER TABLE {schema}.revisions ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE {schema}.embedding_leases ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE {schema}.embedding_queue ALTER COLUMN tenant_id SET NOT NULL;

ALTER TABLE {schema}.records DROP CONSTRAINT records_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE {schema}.revisions DROP CONSTRAINT revisions_pkey, ADD PRIMARY KEY (record_id, version, tenant_id);
ALTER TABLE {schema}.embeddings DROP CONSTRAINT embeddings_pkey, ADD PRIMARY KEY (record_id, profile, tenant_id);
ALTER TABLE {schema}.embedding_leases DROP CONSTRAINT embedding_leases_pkey,
    ADD PRIMARY KEY (record_id, profile, tenant_id);
ALTER TABLE {schema}.embedding_queue DROP CONSTRAINT embedding_queue_pkey,
    ADD PRIMARY KEY (profile, record_id, tenant_id);
ALTER TABLE {schema}.recall_text DROP CONSTRAINT recall_text_pkey, ADD PRIMARY KEY (record_id, tenant_id);

ALTER TABLE {schema}.revisions ADD CONSTRAINT revisions_record_fkey
    FOREIGN KEY (record_id, tenant_id) REFERENCES {schema}.records (id, tenant_id);
ALTER TABLE {schema}.embeddings ADD CONSTRAINT embeddings_record_fkey
    FOREIGN KEY (record_id, tenant_id) REFERENCES {schema}.records (id, tenant_id);
ALTER TABLE {schema}.embedding_leases ADD CONSTRAINT embedding_leases_record_fkey
    FOREIGN KEY (record_id, tenant_id) REFERENCES {schema}.records (id, tenant_id);

-- The trigger functions, adapted to the keys above and otherwise as
-- before (they read the transition tables directly, which is the fast
-- form on one server). Distribute replaces them with the forms Citus
-- needs (citus_triggers.sql).

-- recall_text, term_df and embeddings.live (migration 0002).
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
        FROM old_rows o JOIN new_rows n ON n.id = o.id AND n.tenant_id = o.tenant_id
        WHERE e.record_id = n.id AND e.tenant_id = n.tenant_id
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
        WHERE t.record_id = o.id AND t.tenant_id = o.tenant_id
          AND NOT EXISTS (SELECT 1 FROM unnest(news) n WHERE n.id = o.id AND n.tenant_id = o.tenant_id);
    END IF;

    INSERT INTO {schema}.recall_text AS t (record_id, tenant_id, subject_type, subject_id,
        effective_from, effective_until, updated_at, terms)
    SELECT n.id, n.tenant_id, n.subject_type, n.subject_id, n.effective_from, n.effective_until,
        n.updated_at, n.search_tsv
    FROM unnest(news) n
    ON CONFLICT (record_id, tenant_id) DO UPDATE SET
        effective_from = excluded.effective_from,
        effective_until = excluded.effective_until,
        updated_at = excluded.updated_at,
        terms = excluded.terms;

    RETURN NULL;
END
$fn$;

-- The embedding queue (migration 0004): its rows now carry the tenant.
CREATE OR REPLACE FUNCTION {schema}.records_queue_insert() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    INSERT INTO {schema}.embedding_queue (profile, record_id, tenant_id)
    SELECT p.profile, n.id, n.tenant_id
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
    WHERE q.record_id = n.id AND q.tenant_id = n.tenant_id AND n.status <> 'active';

    INSERT INTO {schema}.embedding_queue (profile, record_id, tenant_id)
    SELECT p.profile, n.id, n.tenant_id
    FROM new_rows n
    JOIN old_rows o ON o.id = n.id AND o.tenant_id = n.tenant_id
    CROSS JOIN {schema}.embedding_profiles p
    WHERE n.status = 'active'
      AND (o.status <> 'active' OR o.content_hash IS DISTINCT FROM n.content_hash)
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.embeddings e
          WHERE e.record_id = n.id AND e.tenant_id = n.tenant_id AND e.profile = p.profile
            AND e.content_hash = n.content_hash)
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
    WHERE q.record_id = o.id AND q.tenant_id = o.tenant_id;
    RETURN NULL;
END
$fn$;
