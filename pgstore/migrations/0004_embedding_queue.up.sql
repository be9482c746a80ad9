-- memorykit schema, version 4: a queue of the records that may need an
-- embedding, so leasing does not walk every active record.
--
-- Until version 3, LeaseEmbeddings and PendingEmbeddings started from all
-- active records and probed embeddings and embedding_leases for each. Once
-- most records are embedded that is pure overhead: at 10k records one lease
-- round took ~58 ms, an idle worker's poll read the whole table, and a
-- backfill grew quadratically. Now:
--
--   * embedding_profiles lists the profiles a worker has asked for. A
--     profile is registered by its first LeaseEmbeddings, which fills the
--     queue for it (pgstore: registerProfile).
--   * embedding_queue holds (profile, record) for every active record that
--     may lack a current embedding of a registered profile. It is a hint,
--     never the truth: LeaseEmbeddings still checks each row against the
--     records, embeddings and embedding_leases exactly as before, so a row
--     too many costs a probe and nothing else. The invariant that matters
--     is the other way round: every active record without a current
--     embedding of a registered profile has a row.
--
-- Who keeps the invariant:
--   * the records triggers below add rows when a record becomes active or
--     its content hash changes, and remove them when it stops being active;
--   * PutEmbedding(s) removes the row in the transaction that stores the
--     vector (holding the record's share lock, so no content change can
--     slip in between);
--   * CreateBatch removes the rows of the items it stores with a vector;
--   * DeleteEmbeddings adds rows for the active records it strips;
--   * registration fills the queue while holding a lock on records that
--     excludes every writer, so no record can become active unseen between
--     the fill and the triggers seeing the new profile.
-- An index on the profile alone served only a rebuild of a whole profile,
-- and the planner preferred it to the primary key for the per-record
-- probes of the lease statement while the tables had no statistics,
-- reading every embedding of the profile per probe.
DROP INDEX {schema}.embeddings_profile;

CREATE TABLE {schema}.embedding_profiles (
    profile  text COLLATE "C" PRIMARY KEY
);

CREATE TABLE {schema}.embedding_queue (
    profile    text COLLATE "C" NOT NULL,
    record_id  text COLLATE "C" NOT NULL,
    PRIMARY KEY (profile, record_id)
);

-- The records' queue rows, for the triggers and for erase.
CREATE INDEX embedding_queue_record ON {schema}.embedding_queue (record_id);

CREATE FUNCTION {schema}.records_queue_insert() RETURNS trigger
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

CREATE FUNCTION {schema}.records_queue_update() RETURNS trigger
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

CREATE FUNCTION {schema}.records_queue_delete() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    DELETE FROM {schema}.embedding_queue q
    USING old_rows o
    WHERE q.record_id = o.id;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER records_queue_insert AFTER INSERT ON {schema}.records
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.records_queue_insert();
CREATE TRIGGER records_queue_update AFTER UPDATE ON {schema}.records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.records_queue_update();
CREATE TRIGGER records_queue_delete AFTER DELETE ON {schema}.records
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.records_queue_delete();

-- Profiles already in use are registered now, with their queues filled.
-- The migration runs under the schema's migration lock, before any store
-- of this version writes.
INSERT INTO {schema}.embedding_profiles (profile)
SELECT profile FROM {schema}.embeddings
UNION
SELECT profile FROM {schema}.embedding_leases;

INSERT INTO {schema}.embedding_queue (profile, record_id)
SELECT p.profile, r.id
FROM {schema}.embedding_profiles p
JOIN {schema}.records r ON r.status = 'active'
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.embeddings e
    WHERE e.record_id = r.id AND e.profile = p.profile AND e.content_hash = r.content_hash);
