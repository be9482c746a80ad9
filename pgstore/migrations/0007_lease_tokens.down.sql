-- Undoes version 7: lease tokens and the jobs' reap and hand-back
-- counters. Version 6 code counts failures in attempt again; the counters
-- dropped here are not folded back into it.
ALTER TABLE {schema}.embedding_leases DROP COLUMN lease_token;
ALTER TABLE {schema}.jobs
    DROP CONSTRAINT jobs_max_reaps_positive,
    DROP COLUMN max_reaps,
    DROP COLUMN hand_backs,
    DROP COLUMN reaps,
    DROP COLUMN failures,
    DROP COLUMN run_ref,
    DROP COLUMN lease_token;
DROP SEQUENCE {schema}.lease_tokens;
