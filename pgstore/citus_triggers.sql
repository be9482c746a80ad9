-- The trigger functions of a distributed schema, installed by Distribute
-- over those of migration 13 ({schema} and {ext} are filled in as in the
-- migrations). They do what the single-server functions do, in the shape
-- Citus needs: Citus runs a distributed table's triggers on the node
-- holding the shard, where a statement must stay on the changed rows'
-- co-located shards, and its planner cannot read a transition table
-- inside a statement. So each function reads its transition tables once,
-- into arrays, returns early when nothing changed, and restricts every
-- statement to the tenants of the changed rows; the transaction id is read
-- once into a variable (Citus refuses volatile functions in ON CONFLICT DO
-- UPDATE). On a single server these forms are correct too, but about half
-- again as slow on a batch insert, which is why migration 13 keeps the
-- lean forms there.

-- Scope versions and change rows (migrations 0008-0010), from arrays.
CREATE OR REPLACE FUNCTION {schema}.bump_scope_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    me xid := pg_current_xact_id()::xid;
    tenants text[];
    stypes text[];
    sids text[];
    ids text[];
BEGIN
    SELECT array_agg(c.tenant_id), array_agg(c.subject_type), array_agg(c.subject_id), array_agg(c.id)
    INTO tenants, stypes, sids, ids FROM changed c;
    IF tenants IS NULL THEN
        RETURN NULL;
    END IF;
    WITH c AS MATERIALIZED (
        SELECT * FROM unnest(tenants, stypes, sids, ids) AS c(tenant_id, subject_type, subject_id, id)
    ), bumped AS (
        INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
        SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id, 1 FROM c
        WHERE c.tenant_id = ANY (tenants)
        ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE
            SET version = v.version + CASE WHEN v.xmin = me THEN 0 ELSE 1 END
        RETURNING v.tenant_id, v.subject_type, v.subject_id, v.version
    )
    INSERT INTO {schema}.scope_changes AS x (tenant_id, subject_type, subject_id, record_id, version)
    SELECT DISTINCT b.tenant_id, b.subject_type, b.subject_id, c.id, b.version
    FROM c JOIN bumped b USING (tenant_id, subject_type, subject_id)
    WHERE c.tenant_id = ANY (tenants)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, record_id) DO UPDATE SET version = EXCLUDED.version
        WHERE x.version <> EXCLUDED.version;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION {schema}.bump_scope_versions_embeddings() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    me xid := pg_current_xact_id()::xid;
    tenants text[];
    stypes text[];
    sids text[];
    ids text[];
BEGIN
    SELECT array_agg(c.tenant_id), array_agg(c.subject_type), array_agg(c.subject_id), array_agg(c.record_id)
    INTO tenants, stypes, sids, ids FROM changed c;
    IF tenants IS NULL THEN
        RETURN NULL;
    END IF;
    WITH c AS MATERIALIZED (
        SELECT * FROM unnest(tenants, stypes, sids, ids) AS c(tenant_id, subject_type, subject_id, id)
    ), bumped AS (
        INSERT INTO {schema}.scope_versions AS v (tenant_id, subject_type, subject_id, version)
        SELECT DISTINCT c.tenant_id, c.subject_type, c.subject_id, 1 FROM c
        WHERE c.tenant_id = ANY (tenants)
        ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, subject_type, subject_id) DO UPDATE
            SET version = v.version + CASE WHEN v.xmin = me THEN 0 ELSE 1 END
        RETURNING v.tenant_id, v.subject_type, v.subject_id, v.version
    )
    INSERT INTO {schema}.scope_changes AS x (tenant_id, subject_type, subject_id, record_id, version)
    SELECT DISTINCT b.tenant_id, b.subject_type, b.subject_id, c.id, b.version
    FROM c JOIN bumped b USING (tenant_id, subject_type, subject_id)
    WHERE c.tenant_id = ANY (tenants)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, record_id) DO UPDATE SET version = EXCLUDED.version
        WHERE x.version <> EXCLUDED.version;
    RETURN NULL;
END
$$;

-- recall_text, term_df and embeddings.live (migration 0002), from arrays.
-- Locking is as before: the scopes' '' rows first, in key order.
CREATE OR REPLACE FUNCTION {schema}.records_sync() RETURNS trigger
LANGUAGE plpgsql
SET work_mem = '64MB'
AS $fn$
DECLARE
    olds {schema}.records[] := '{}';
    news {schema}.records[] := '{}';
    tenants text[];
    ch_ids text[];
    ch_tenants text[];
    ch_active boolean[];
    ch_hashes text[];
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
        SELECT array_agg(n.id), array_agg(n.tenant_id), array_agg(n.status = 'active'), array_agg(n.content_hash)
        INTO ch_ids, ch_tenants, ch_active, ch_hashes
        FROM old_rows o JOIN new_rows n ON n.id = o.id AND n.tenant_id = o.tenant_id
        WHERE o.status IS DISTINCT FROM n.status OR o.content_hash IS DISTINCT FROM n.content_hash;
        IF ch_ids IS NOT NULL THEN
            UPDATE {schema}.embeddings e
            SET live = (n.active AND n.hash = e.content_hash)
            FROM unnest(ch_ids, ch_tenants, ch_active, ch_hashes) AS n(id, tenant_id, active, hash)
            WHERE e.record_id = n.id AND e.tenant_id = n.tenant_id
              AND e.tenant_id = ANY (ch_tenants)
              AND e.live IS DISTINCT FROM (n.active AND n.hash = e.content_hash);
        END IF;
    END IF;

    IF cardinality(olds) = 0 AND cardinality(news) = 0 THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(DISTINCT x.tenant_id) INTO tenants
    FROM (SELECT tenant_id FROM unnest(olds) UNION ALL SELECT tenant_id FROM unnest(news)) x;

    INSERT INTO {schema}.term_df AS d (tenant_id, subject_type, subject_id, term, df, max_from)
    SELECT x.tenant_id, x.subject_type, x.subject_id, '', 0::bigint, max(x.effective_from)
    FROM (SELECT tenant_id, subject_type, subject_id, NULL::timestamptz AS effective_from FROM unnest(olds)
          UNION ALL SELECT tenant_id, subject_type, subject_id, effective_from FROM unnest(news)) x
    WHERE x.tenant_id = ANY (tenants)
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
    WHERE x.tenant_id = ANY (tenants)
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
          AND d.subject_id = g.subject_id AND d.term = g.term AND d.df = 0
          AND d.tenant_id = ANY (tenants);

        DELETE FROM {schema}.recall_text t
        USING unnest(olds) o
        WHERE t.record_id = o.id AND t.tenant_id = o.tenant_id
          AND t.tenant_id = ANY (tenants)
          AND NOT EXISTS (SELECT 1 FROM unnest(news) n WHERE n.id = o.id AND n.tenant_id = o.tenant_id);
    END IF;

    INSERT INTO {schema}.recall_text AS t (record_id, tenant_id, subject_type, subject_id,
        effective_from, effective_until, updated_at, terms)
    SELECT n.id, n.tenant_id, n.subject_type, n.subject_id, n.effective_from, n.effective_until,
        n.updated_at, n.search_tsv
    FROM unnest(news) n
    WHERE n.tenant_id = ANY (tenants)
    ON CONFLICT (record_id, tenant_id) DO UPDATE SET
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
DECLARE
    news {schema}.records[];
    tenants text[];
BEGIN
    SELECT array_agg(n), array_agg(DISTINCT n.tenant_id) INTO news, tenants FROM new_rows n
    WHERE n.status = 'active';
    IF news IS NULL THEN
        RETURN NULL;
    END IF;

    -- The scopes' '' rows first, in order (see Locking in 0002); then the
    -- counts, aggregated by hashing, in any order.
    INSERT INTO {schema}.term_df AS d (tenant_id, subject_type, subject_id, term, df, max_from)
    SELECT n.tenant_id, n.subject_type, n.subject_id, '', 0::bigint, max(n.effective_from)
    FROM unnest(news) n
    WHERE n.tenant_id = ANY (tenants)
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, subject_type, subject_id, term)
    DO UPDATE SET df = d.df, max_from = greatest(d.max_from, excluded.max_from);

    INSERT INTO {schema}.term_df AS d (tenant_id, subject_type, subject_id, term, df)
    SELECT n.tenant_id, n.subject_type, n.subject_id, w.term COLLATE "C", count(*)
    FROM unnest(news) n, unnest(array_append(tsvector_to_array(n.search_tsv), '')) AS w(term)
    WHERE n.tenant_id = ANY (tenants)
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, subject_type, subject_id, term) DO UPDATE SET df = d.df + excluded.df;

    INSERT INTO {schema}.recall_text AS t (record_id, tenant_id, subject_type, subject_id,
        effective_from, effective_until, updated_at, terms)
    SELECT n.id, n.tenant_id, n.subject_type, n.subject_id, n.effective_from, n.effective_until,
        n.updated_at, n.search_tsv
    FROM unnest(news) n
    WHERE n.tenant_id = ANY (tenants);

    RETURN NULL;
END
$fn$;

-- The embedding queue (migration 0004), from arrays.
CREATE OR REPLACE FUNCTION {schema}.records_queue_insert() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    ids text[];
    tenants text[];
    profiles text[];
BEGIN
    SELECT array_agg(n.id), array_agg(n.tenant_id) INTO ids, tenants FROM new_rows n
    WHERE n.status = 'active';
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(p.profile) INTO profiles FROM {schema}.embedding_profiles p;
    IF profiles IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO {schema}.embedding_queue (profile, record_id, tenant_id)
    SELECT p.profile, n.id, n.tenant_id
    FROM unnest(ids, tenants) AS n(id, tenant_id) CROSS JOIN unnest(profiles) AS p(profile)
    WHERE n.tenant_id = ANY (tenants)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION {schema}.records_queue_update() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    gone_ids text[];
    gone_tenants text[];
    ids text[];
    tenants text[];
    hashes text[];
    profiles text[];
BEGIN
    SELECT array_agg(n.id), array_agg(n.tenant_id) INTO gone_ids, gone_tenants FROM new_rows n
    WHERE n.status <> 'active';
    IF gone_ids IS NOT NULL THEN
        DELETE FROM {schema}.embedding_queue q
        USING unnest(gone_ids, gone_tenants) AS n(id, tenant_id)
        WHERE q.record_id = n.id AND q.tenant_id = n.tenant_id AND q.tenant_id = ANY (gone_tenants);
    END IF;

    -- A record that became active, or whose content changed, needs a
    -- vector unless it already has one for its current content (it was
    -- embedded before it left the active status, say).
    SELECT array_agg(n.id), array_agg(n.tenant_id), array_agg(n.content_hash) INTO ids, tenants, hashes
    FROM new_rows n JOIN old_rows o ON o.id = n.id AND o.tenant_id = n.tenant_id
    WHERE n.status = 'active'
      AND (o.status <> 'active' OR o.content_hash IS DISTINCT FROM n.content_hash);
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(p.profile) INTO profiles FROM {schema}.embedding_profiles p;
    IF profiles IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO {schema}.embedding_queue (profile, record_id, tenant_id)
    SELECT p.profile, n.id, n.tenant_id
    FROM unnest(ids, tenants, hashes) AS n(id, tenant_id, hash) CROSS JOIN unnest(profiles) AS p(profile)
    WHERE n.tenant_id = ANY (tenants)
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.embeddings e
          WHERE e.record_id = n.id AND e.tenant_id = n.tenant_id AND e.profile = p.profile
            AND e.content_hash = n.hash AND e.tenant_id = ANY (tenants))
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION {schema}.records_queue_delete() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    ids text[];
    tenants text[];
BEGIN
    SELECT array_agg(o.id), array_agg(o.tenant_id) INTO ids, tenants FROM old_rows o;
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    DELETE FROM {schema}.embedding_queue q
    USING unnest(ids, tenants) AS o(id, tenant_id)
    WHERE q.record_id = o.id AND q.tenant_id = o.tenant_id AND q.tenant_id = ANY (tenants);
    RETURN NULL;
END
$fn$;
