-- memorykit schema, version 3: embedding lease rows outlive the put.
--
-- PutEmbedding used to delete the record's lease row. A lease statement
-- whose snapshot was taken before that put committed could then find no
-- embedding and no lease row, insert a fresh lease, and hand an already
-- embedded record to a second worker: wasted Embed calls, found by the
-- two-worker drain tests. The row now stays, marked stored for its content
-- hash, and the lease upsert (which re-reads the latest row version under
-- its lock) refuses a stored row until the content hash changes or a
-- rebuild deletes it.
ALTER TABLE {schema}.embedding_leases
    ADD COLUMN stored boolean NOT NULL DEFAULT false;
