-- memorykit schema, version 5: fencing tokens on job and embedding leases.
--
-- Leases used to be checked by worker ID alone. A worker restarted under
-- the same ID (a hostname, a pod name) could then complete, fail or release
-- the lease of the job's next holder with a call from its first life, once
-- the reaper had taken that first lease back and the job was leased again.
-- Every lease now takes a token from one sequence per schema, so tokens
-- grow per job and per record even across rebuilds that delete lease rows;
-- the holder's calls carry the token and a stale one is refused.
CREATE SEQUENCE {schema}.lease_tokens AS bigint;

ALTER TABLE {schema}.jobs
    ADD COLUMN lease_token bigint NOT NULL DEFAULT 0;

ALTER TABLE {schema}.embedding_leases
    ADD COLUMN lease_token bigint NOT NULL DEFAULT 0;
