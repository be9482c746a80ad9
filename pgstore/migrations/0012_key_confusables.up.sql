-- memorykit schema, version 12: record keys in the canonical form of
-- memorykit.NormalizeKey that maps look-alike characters to one key (every
-- character outside ASCII replaced by its UTS #39 confusable prototype, a
-- combining dot above after "i" or "j" removed, the braille blank and the
-- Hangul fillers treated as white space).
--
-- A key stored in the earlier form, such as one holding a Cyrillic "е",
-- would no longer be found by the key its spelling now canonicalises to,
-- and two active records whose keys only looked different would stay side
-- by side. PostgreSQL cannot compute the mapping, so pgstore re-keys those
-- rows in Go, in this migration's transaction, right after this file runs
-- (rekeyRecords in rekey.go): when two active records of one Scope and kind
-- now hold one key, the one updated last stays active and the other is
-- superseded with a revision. Keys of printable ASCII only are already in
-- the new form and are not touched; nor are erased tombstones, whose key
-- is a digest.
COMMENT ON COLUMN {schema}.records.key IS
    'canonical key: memorykit.NormalizeKey (schema 12: look-alike characters mapped to their UTS #39 prototype)';
