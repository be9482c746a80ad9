-- memorykit schema, version 2: a storage layout that makes recall cheap.
--
-- Version 1 answered full-text recall by testing every recallable record of
-- the scope (to count document frequencies) and vector recall by an exact
-- scan of the scope's vectors joined to the records. Both grow with the
-- scope; at 10k records per scope one recall took 80 ms and more. Version 2
-- keeps what those scans computed up to date at write time, in the same
-- transaction, so recall reads only what it needs:
--
--   * term_df: per-scope document frequencies of every term over the active
--     records, plus the number of active records (the row with term '').
--     IDF no longer needs a pass over the scope.
--   * records.search_tsv now holds each term prefixed with a tag of the
--     record's scope ("<tag>.<term>", see scope_terms below), so that one
--     GIN index serves every scope while a posting list holds one scope's
--     records. pgstore computes the tagged lexemes in Go when it writes.
--   * recall_text: one narrow row per active record with those terms,
--     under that GIN index. Full-text recall fetches only the records that
--     contain a query term, and usually only those containing one of the
--     rarer query terms (see recallsql.go for the exact bound that lets it
--     skip the records holding nothing but very common terms).
--   * embeddings.live and embeddings.half: whether a vector is current (its
--     record active at the vector's content hash), and the vector at half
--     precision, under a partial covering btree. Vector recall ranks the
--     scope's current vectors by an index-only scan of ~780 bytes per 384-d
--     vector (instead of visiting 1.5 kB heap rows and joining records),
--     then re-ranks the best candidates exactly at full precision.
--
-- Measured on a 2-core machine, PostgreSQL 15, pgvector 0.8.0, 384-d
-- vectors, 10k records in one scope among 161k, while other test runs
-- shared the machine (docs/benchmarks.md has the controlled numbers): the
-- v1 full-text pass ~56 ms, the v1 vector scan-and-join ~24 ms; index-only
-- scans over a covering index holding the full vectors ~15 ms, holding
-- half-precision vectors ~9 ms, holding 1-bit binary_quantize codes ~3 ms.
-- The 1-bit codes were rejected: with the local feature-hashing embedder
-- (signed, many exact zeros) the 1-bit nearest 400 of 10k held only 6% of
-- the true top 10, where half precision re-ranked from the nearest 24
-- found all of them.
--
-- All of it is maintained by one statement-level trigger on records (below),
-- so every write path -- single creates, lifecycle actions, batch inserts
-- and job completions -- keeps it exact without the Go code repeating it.

-- Scope tag: the first 12 hex digits of md5(tenant/subject_type/subject_id).
-- Two scopes sharing a tag would only share posting lists; every query
-- still filters on the scope columns. pgstore computes the same tag in Go
-- (scopeTag); this function only converts version 1 rows and is dropped
-- below.
CREATE FUNCTION {schema}.scope_terms(tenant text, subject_type text, subject_id text, terms tsvector)
RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT g.tag || l
        FROM (SELECT left(md5(tenant || '/' || subject_type || '/' || subject_id), 12) || '.' AS tag) g,
            unnest(tsvector_to_array(terms)) AS l))
$$;

-- One row per active record, whatever its effective window: the window is
-- checked at query time. record_id is the records primary key; the trigger
-- below is the only writer.
CREATE TABLE {schema}.recall_text (
    record_id        text COLLATE "C" PRIMARY KEY,
    tenant_id        text COLLATE "C" NOT NULL,
    subject_type     text COLLATE "C" NOT NULL,
    subject_id       text COLLATE "C" NOT NULL,
    effective_from   timestamptz NOT NULL,
    effective_until  timestamptz,
    updated_at       timestamptz NOT NULL,
    terms            tsvector NOT NULL  -- records.search_tsv
);

CREATE INDEX recall_text_terms ON {schema}.recall_text USING gin (terms);

-- A scope's records newest first: the order in which records that tie on
-- matched terms and weight are ranked (see recallsql.go).
CREATE INDEX recall_text_recent
    ON {schema}.recall_text (tenant_id, subject_type, subject_id, updated_at DESC, record_id);

-- Active records outside their effective window are rare; these find them
-- (to leave them out of n, df and every channel) without a scope scan.
-- Records not yet in effect are rare everywhere, so recall_text_from has no
-- scope columns; that also keeps the planner from intersecting a whole
-- scope's index range with the GIN results.
CREATE INDEX recall_text_from
    ON {schema}.recall_text (effective_from);
CREATE INDEX recall_text_until
    ON {schema}.recall_text (tenant_id, subject_type, subject_id, effective_until)
    WHERE effective_until IS NOT NULL;

-- df counts the active records of a scope holding term (a tagged lexeme);
-- the row with term '' counts all active records of the scope, and its
-- max_from is at least the latest effective_from any of them ever had (it
-- never decreases): while the clock is past it, no active record of the
-- scope can be waiting for its window to open, and recall skips looking
-- for one. Rows reaching zero are deleted, so an erased record's words do
-- not linger here.
CREATE TABLE {schema}.term_df (
    tenant_id     text COLLATE "C" NOT NULL,
    subject_type  text COLLATE "C" NOT NULL,
    subject_id    text COLLATE "C" NOT NULL,
    term          text COLLATE "C" NOT NULL,
    df            bigint NOT NULL,  -- no CHECK: an upsert's proposed row carries a negative delta
    max_from      timestamptz,      -- '' rows only
    PRIMARY KEY (tenant_id, subject_type, subject_id, term)
);

ALTER TABLE {schema}.embeddings ADD COLUMN live boolean NOT NULL DEFAULT false;
-- Storage EXTERNAL: inline while the row fits, otherwise out of line, but
-- never compressed, so reading a vector never decompresses it.
ALTER TABLE {schema}.embeddings ALTER COLUMN embedding SET STORAGE EXTERNAL;
-- Keep rows of up to 4 kB whole in the heap: a 384-d vector with its half
-- precision copy makes a ~2.5 kB row, which the default 2 kB target would
-- split into the TOAST table on every insert and every re-rank read.
ALTER TABLE {schema}.embeddings SET (toast_tuple_target = 4000);
-- The vector at half precision, normalised (so any finite vector fits the
-- half-float range; cosine distance ignores length). NULL above 1024
-- dimensions, where it would not fit a btree entry.
ALTER TABLE {schema}.embeddings
    ADD COLUMN half {ext}.halfvec GENERATED ALWAYS AS (
        CASE WHEN dims <= 1024 THEN {ext}.l2_normalize(embedding)::{ext}.halfvec END) STORED;

-- Candidates for the vector channel: the current vectors of one scope,
-- profile and dimension at half precision, read by an index-only scan.
CREATE INDEX embeddings_live
    ON {schema}.embeddings (tenant_id, subject_type, subject_id, profile, dims)
    INCLUDE (record_id, half)
    WHERE live AND dims <= 1024;

-- Backfill from version 1 data.
UPDATE {schema}.records
SET search_tsv = {schema}.scope_terms(tenant_id, subject_type, subject_id, search_tsv)
WHERE search_tsv <> ''::tsvector;
DROP FUNCTION {schema}.scope_terms(text, text, text, tsvector);

INSERT INTO {schema}.recall_text (record_id, tenant_id, subject_type, subject_id,
    effective_from, effective_until, updated_at, terms)
SELECT id, tenant_id, subject_type, subject_id, effective_from, effective_until, updated_at, search_tsv
FROM {schema}.records
WHERE status = 'active';

INSERT INTO {schema}.term_df (tenant_id, subject_type, subject_id, term, df)
SELECT r.tenant_id, r.subject_type, r.subject_id, w.term COLLATE "C", count(*)
FROM {schema}.records r,
    unnest(array_append(tsvector_to_array(r.search_tsv), '')) AS w(term)
WHERE r.status = 'active'
GROUP BY 1, 2, 3, 4;

UPDATE {schema}.term_df d SET max_from = m.max_from
FROM (SELECT tenant_id, subject_type, subject_id, max(effective_from) AS max_from
      FROM {schema}.records WHERE status = 'active' GROUP BY 1, 2, 3) m
WHERE d.term = '' AND d.tenant_id = m.tenant_id AND d.subject_type = m.subject_type
  AND d.subject_id = m.subject_id;

UPDATE {schema}.embeddings e SET live = true
FROM {schema}.records r
WHERE r.id = e.record_id AND r.status = 'active' AND r.content_hash = e.content_hash;

-- The trigger: after every statement that inserts, updates or deletes
-- records, bring recall_text, term_df and embeddings.live in line with the
-- changed rows.
--
-- Locking: every statement that changes any df row of a scope first locks
-- the scope's '' row (scopes in key order), and only then upserts the
-- counts. So one transaction at a time changes a scope's counts (it holds
-- the '' row until it commits) and two writers never wait on each other's
-- df rows in opposite orders; the counts themselves need no ordering.
-- Statements that change no active record (candidates, rejections, erasing
-- a tombstone) take no df lock. The functions raise work_mem so a large
-- batch aggregates its terms in memory.
CREATE FUNCTION {schema}.records_sync() RETURNS trigger
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

-- Inserts (single creates, batches, job candidates) only ever add rows, so
-- they get a lean version of the same work that reads the transition
-- table directly.
CREATE FUNCTION {schema}.records_sync_insert() RETURNS trigger
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

CREATE TRIGGER records_sync_insert AFTER INSERT ON {schema}.records
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.records_sync_insert();
CREATE TRIGGER records_sync_update AFTER UPDATE ON {schema}.records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.records_sync();
CREATE TRIGGER records_sync_delete AFTER DELETE ON {schema}.records
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.records_sync();
