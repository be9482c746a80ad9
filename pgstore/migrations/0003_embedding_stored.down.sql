-- Undoes version 3: embedding lease rows no longer outlive the put.
ALTER TABLE {schema}.embedding_leases DROP COLUMN stored;
