-- Undoes version 2: the recall layout. The sync triggers go with their
-- functions (CASCADE); records.search_tsv loses the scope tag of its
-- lexemes ("<12 hex digits>.<term>" back to "<term>"), the form version 1
-- stored.
DROP FUNCTION {schema}.records_sync() CASCADE;
DROP FUNCTION {schema}.records_sync_insert() CASCADE;
DROP TABLE {schema}.recall_text;
DROP TABLE {schema}.term_df;
DROP INDEX {schema}.embeddings_live;
ALTER TABLE {schema}.embeddings DROP COLUMN half, DROP COLUMN live;
ALTER TABLE {schema}.embeddings RESET (toast_tuple_target);
ALTER TABLE {schema}.embeddings ALTER COLUMN embedding SET STORAGE MAIN;
UPDATE {schema}.records
SET search_tsv = array_to_tsvector(ARRAY(
    SELECT substr(l, 14) FROM unnest(tsvector_to_array(search_tsv)) AS l))
WHERE search_tsv <> ''::tsvector;
