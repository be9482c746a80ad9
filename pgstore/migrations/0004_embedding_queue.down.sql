-- Undoes version 4: the embedding queue, its triggers and the registered
-- profiles; the index on embeddings.profile comes back.
DROP FUNCTION {schema}.records_queue_insert() CASCADE;
DROP FUNCTION {schema}.records_queue_update() CASCADE;
DROP FUNCTION {schema}.records_queue_delete() CASCADE;
DROP TABLE {schema}.embedding_queue;
DROP TABLE {schema}.embedding_profiles;
CREATE INDEX embeddings_profile
    ON {schema}.embeddings (profile);
