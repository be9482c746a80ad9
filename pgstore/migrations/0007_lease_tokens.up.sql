-- memorykit schema, version 7: fencing tokens on job and embedding leases.
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

-- run_ref keeps the Host's reference of the turn (not content), which the
-- Extractor sees. Infrastructure faults no longer use up a job's attempts. max_attempts now
-- bounds failures (attempts whose Extractor reported an error); a lease
-- reaped after expiry or handed back on drain counts in reaps or
-- hand_backs, which max_reaps bounds. Jobs already queued keep a
-- conservative count: every earlier lease except a running one is taken
-- for a failure, and max_reaps starts at max_attempts.
ALTER TABLE {schema}.jobs
    ADD COLUMN run_ref text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN failures integer NOT NULL DEFAULT 0,
    ADD COLUMN reaps integer NOT NULL DEFAULT 0,
    ADD COLUMN hand_backs integer NOT NULL DEFAULT 0,
    ADD COLUMN max_reaps integer NOT NULL DEFAULT 1;

UPDATE {schema}.jobs SET
    max_reaps = max_attempts,
    failures = greatest(attempt - CASE WHEN state = 'leased' THEN 1 ELSE 0 END, 0);

ALTER TABLE {schema}.jobs
    ALTER COLUMN max_reaps DROP DEFAULT,
    ADD CONSTRAINT jobs_max_reaps_positive CHECK (max_reaps > 0);
