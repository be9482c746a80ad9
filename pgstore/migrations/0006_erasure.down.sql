-- Undoes version 6: purge progress and the erase marks of leased jobs.
-- Tombstone keys already replaced by their keyed digests stay digests:
-- the plain keys are gone by design.
DROP TABLE {schema}.purges;
ALTER TABLE {schema}.jobs DROP COLUMN erased_keys;
