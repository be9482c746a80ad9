-- Undoes version 12 as far as it can be undone: the column comment goes
-- back to version 5's. The re-keying version 12 did in Go (rekeyRecords) is
-- one-way: the earlier spelling of a key is not kept, so the keys stay in
-- the form that maps look-alike characters, as do the supersede revisions
-- that resolved collisions. Version 11 code reads them as keys it would
-- itself have written for the Latin spelling.
COMMENT ON COLUMN {schema}.records.key IS
    'canonical key: memorykit.NormalizeKey (schema 5: invisible characters removed, NFKC, case folded)';
