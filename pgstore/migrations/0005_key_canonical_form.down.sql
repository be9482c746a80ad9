-- Undoes version 5 as far as it can be undone: the column comment. The
-- re-keying version 5 did in Go (rekeyRecords) is one-way: the earlier
-- form of a key (invisible characters, unfolded case) is not kept, so the
-- keys stay in the canonical form of issue 10, as do the supersede
-- revisions that resolved collisions. Version 4 code reads them as keys it
-- would itself have written for the folded spelling.
COMMENT ON COLUMN {schema}.records.key IS NULL;
