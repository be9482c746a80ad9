-- Undoes version 1: every table (their indexes go with them). The schema
-- and schema_migrations stay; they belong to the migrator.
DROP TABLE {schema}.jobs;
DROP TABLE {schema}.embedding_leases;
DROP TABLE {schema}.embeddings;
DROP TABLE {schema}.revisions;
DROP TABLE {schema}.records;
