-- memorykit schema, version 1.
--
-- {schema} is replaced by the store's quoted schema name and {ext} by the
-- quoted schema that holds the pgvector extension, so nothing here depends on
-- the session's search_path. Identifiers and keys use the "C" collation so
-- ORDER BY and range comparisons are byte order, the same order Go's string
-- comparison gives memorystore.

CREATE TABLE {schema}.records (
    id               text COLLATE "C" PRIMARY KEY,
    tenant_id        text COLLATE "C" NOT NULL,
    subject_type     text COLLATE "C" NOT NULL,
    subject_id       text COLLATE "C" NOT NULL,
    kind             text COLLATE "C" NOT NULL,
    key              text COLLATE "C" NOT NULL,
    content          text NOT NULL,
    metadata         jsonb,          -- NULL when the record has no metadata map
    sources          jsonb,          -- NULL when the record has no source list
    status           text COLLATE "C" NOT NULL,
    version          bigint NOT NULL CHECK (version > 0),
    content_hash     text COLLATE "C" NOT NULL,
    effective_from   timestamptz NOT NULL,
    effective_until  timestamptz,   -- NULL means open-ended
    created_by_kind  text COLLATE "C" NOT NULL,
    created_by_id    text COLLATE "C" NOT NULL,
    touched_by_kind  text COLLATE "C" NOT NULL,
    touched_by_id    text COLLATE "C" NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    -- Full-text terms, computed in Go with memorykit.IndexTerms(key, content)
    -- so both stores match exactly the same terms, stored verbatim as the
    -- lexemes of a tsvector (array_to_tsvector: no text search parser, no
    -- stemming). A tsvector keeps its lexemes sorted, so testing a query
    -- term is a binary search instead of a scan of an array. Emptied on
    -- erase.
    search_tsv       tsvector NOT NULL,
    CONSTRAINT records_status_valid CHECK (status IN
        ('candidate', 'active', 'rejected', 'superseded', 'inactive', 'erased'))
);

-- At most one active record per Scope, kind and key. Writers serialise on an
-- advisory lock first, so this index is a last line of defence.
CREATE UNIQUE INDEX records_one_active
    ON {schema}.records (tenant_id, subject_type, subject_id, kind, key)
    WHERE status = 'active';

-- Per-scope listing and every recall channel start from the scope's
-- records. The INCLUDE columns are everything the vector channel and the
-- recallable count need, so those read the index alone; only the full-text
-- channel visits the heap (for search_tsv). The full-text query is a scan of
-- one scope's recallable records, without a GIN index, which is what
-- project-sized memories need.
CREATE INDEX records_scope_status
    ON {schema}.records (tenant_id, subject_type, subject_id, status, id)
    INCLUDE (content_hash, effective_from, effective_until, updated_at);

CREATE INDEX records_scope_key
    ON {schema}.records (tenant_id, subject_type, subject_id, key);

-- The audit trail: one row per lifecycle action. Erase scrubs content_hash,
-- content, metadata and sources of every row of the record.
CREATE TABLE {schema}.revisions (
    record_id     text COLLATE "C" NOT NULL REFERENCES {schema}.records (id),
    version       bigint NOT NULL,
    action        text COLLATE "C" NOT NULL,
    actor_kind    text COLLATE "C" NOT NULL,
    actor_id      text COLLATE "C" NOT NULL,
    reason        text NOT NULL,
    status        text COLLATE "C" NOT NULL,
    content_hash  text COLLATE "C" NOT NULL,
    content       text NOT NULL,
    metadata      jsonb,
    sources       jsonb,
    at            timestamptz NOT NULL,
    PRIMARY KEY (record_id, version)
);

-- Embeddings live in a narrow table of their own, apart from the records, so
-- the exact per-scope vector scan reads only vectors plus the few columns
-- that decide whether a vector is current (record id and content hash), and
-- a record's lifecycle updates never rewrite its vectors.
--
-- The scope index leads with (tenant, subject, profile, dims): the vector
-- channel filters on all of them (pgvector refuses to compare vectors of
-- different lengths), so one index range yields exactly the candidate rows.
-- Whether a vector is current (record active, effective, same content hash)
-- is checked against records_scope_status, whose INCLUDE columns answer it
-- without visiting the records heap. The vector itself is not an INCLUDE column: a btree entry is limited to
-- roughly 2.7 kB, about 670 float32 dimensions, and common embedding models
-- are larger. Storage MAIN keeps vectors inline in the heap where they fit,
-- which avoids a TOAST lookup per row during the scan. There is no ANN
-- index: recall is an exact scan inside one scope, which is what a project's
-- memory needs and keeps results identical to memorystore.
CREATE TABLE {schema}.embeddings (
    record_id     text COLLATE "C" NOT NULL REFERENCES {schema}.records (id),
    profile       text COLLATE "C" NOT NULL,
    tenant_id     text COLLATE "C" NOT NULL,
    subject_type  text COLLATE "C" NOT NULL,
    subject_id    text COLLATE "C" NOT NULL,
    content_hash  text COLLATE "C" NOT NULL,
    dims          integer NOT NULL CHECK (dims > 0),
    embedding     {ext}.vector NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (record_id, profile)
);
ALTER TABLE {schema}.embeddings ALTER COLUMN embedding SET STORAGE MAIN;

CREATE INDEX embeddings_scope
    ON {schema}.embeddings (tenant_id, subject_type, subject_id, profile, dims)
    INCLUDE (record_id, content_hash);

CREATE INDEX embeddings_profile
    ON {schema}.embeddings (profile);

-- Lease, retry and park state of the embedding work for one record and
-- profile. content_hash says which content the state belongs to: a row whose
-- hash is not the record's current hash is treated as absent (fresh state).
CREATE TABLE {schema}.embedding_leases (
    record_id         text COLLATE "C" NOT NULL REFERENCES {schema}.records (id),
    profile           text COLLATE "C" NOT NULL,
    content_hash      text COLLATE "C" NOT NULL,
    worker_id         text COLLATE "C",
    lease_expires_at  timestamptz,
    attempts          integer NOT NULL DEFAULT 0,
    retry_at          timestamptz,
    parked            boolean NOT NULL DEFAULT false,
    reason            text COLLATE "C" NOT NULL DEFAULT '',
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (record_id, profile),
    CONSTRAINT embedding_leases_lease_pair CHECK ((worker_id IS NULL) = (lease_expires_at IS NULL))
);

CREATE INDEX embedding_leases_expiry
    ON {schema}.embedding_leases (lease_expires_at)
    WHERE worker_id IS NOT NULL;

-- The durable extraction queue, shared by every Host on the database.
CREATE TABLE {schema}.jobs (
    id                text COLLATE "C" PRIMARY KEY,
    tenant_id         text COLLATE "C" NOT NULL,
    subject_type      text COLLATE "C" NOT NULL,
    subject_id        text COLLATE "C" NOT NULL,
    payload           text NOT NULL,
    state             text COLLATE "C" NOT NULL,
    attempt           integer NOT NULL DEFAULT 0,
    max_attempts      integer NOT NULL CHECK (max_attempts > 0),
    available_at      timestamptz NOT NULL,
    leased_by         text COLLATE "C" NOT NULL DEFAULT '',
    lease_expires_at  timestamptz,
    last_error        text COLLATE "C" NOT NULL DEFAULT '',
    candidates        integer NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    CONSTRAINT jobs_state_valid CHECK (state IN ('queued', 'leased', 'done', 'failed'))
);

CREATE INDEX jobs_queued
    ON {schema}.jobs (available_at, id)
    WHERE state = 'queued';

CREATE INDEX jobs_leased
    ON {schema}.jobs (lease_expires_at)
    WHERE state = 'leased';
