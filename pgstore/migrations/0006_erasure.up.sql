-- memorykit schema, version 6: complete erasure and project purge.
--
-- jobs.erased_keys: the keyed key digests (memorykit.TombstoneKeyer) of the
-- records an erase removed while the job was leased; the worker's hand-back
-- drops its proposals for those keys ('*': every proposal, after a purge)
-- and finishes the job as a content-free tombstone. The payload itself is
-- scrubbed at erase time.
ALTER TABLE {schema}.jobs ADD COLUMN erased_keys text[] COLLATE "C" NOT NULL DEFAULT '{}';

-- One row per Scope that was ever purged: the progress of the running (or
-- interrupted) purge, or the report of the last finished one. A row whose
-- finished_at is NULL holds writes to the Scope off (ErrPurging). It holds
-- ids, counts, actor ids, a reason code and times only.
CREATE TABLE {schema}.purges (
    tenant_id      text COLLATE "C" NOT NULL,
    subject_type   text COLLATE "C" NOT NULL,
    subject_id     text COLLATE "C" NOT NULL,
    actor_kind     text COLLATE "C" NOT NULL,
    actor_id       text COLLATE "C" NOT NULL,
    reason         text COLLATE "C" NOT NULL,
    started_at     timestamptz NOT NULL,
    finished_at    timestamptz,
    records        integer NOT NULL DEFAULT 0,
    record_ids     text[] COLLATE "C" NOT NULL DEFAULT '{}',
    revisions      integer NOT NULL DEFAULT 0,
    embeddings     integer NOT NULL DEFAULT 0,
    jobs           integer NOT NULL DEFAULT 0,
    queue_entries  integer NOT NULL DEFAULT 0,
    digest         text COLLATE "C" NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, subject_type, subject_id)
);
