-- memorykit schema, version 5: record keys in the canonical form of
-- memorykit.NormalizeKey as of issue 10 (characters that render as nothing
-- removed, NFKC, full case folding, one ASCII space between words).
--
-- Keys were stored canonicalised with the earlier form (NFKC, lower case,
-- white space collapsed), so a key holding a zero-width space, a soft
-- hyphen, a "ß" or another character the new form changes would no longer
-- be found by the key its spelling now canonicalises to. PostgreSQL cannot
-- compute the new form itself (no case folding before version 18, and the
-- set of removed characters is memorykit's), so pgstore re-keys those rows
-- in Go, in this migration's transaction, right after this file runs (see
-- rekeyRecords in rekey.go). Keys of printable ASCII only are already in
-- the new form and are not touched.
COMMENT ON COLUMN {schema}.records.key IS
    'canonical key: memorykit.NormalizeKey (schema 5: invisible characters removed, NFKC, case folded)';
