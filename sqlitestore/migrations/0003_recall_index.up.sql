-- Recall on a Scope the process has not loaded yet is answered from the
-- file: an FTS5 index of each active record's terms and key (as hashes,
-- never the text; see termToken in sqlrecall.go), and the columns
-- recallability and ranking read: times in Unix nanoseconds, clamped to
-- the int64 range, NULL for an open bound of the effective window.
-- embeddings.rec is the row number of the vector's record, so the vector
-- scan of a Scope reads the records' recall index and the embeddings, not
-- the records' rows.
-- recall_scopes lists the Scopes whose rows are complete in the index: a
-- Scope written before this schema joins it the first time it is loaded.
ALTER TABLE records ADD COLUMN updated_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN from_ns INTEGER;
ALTER TABLE records ADD COLUMN until_ns INTEGER;
DROP INDEX records_scope;
CREATE INDEX records_recall ON records (tenant_id, subject_type, subject_id, status, from_ns, until_ns);
CREATE VIRTUAL TABLE recall_terms USING fts5(tokens, content = '', contentless_delete = 1, detail = none, tokenize = 'ascii');
CREATE TABLE recall_scopes (
	tenant_id    TEXT NOT NULL,
	subject_type TEXT NOT NULL,
	subject_id   TEXT NOT NULL,
	PRIMARY KEY (tenant_id, subject_type, subject_id)
) WITHOUT ROWID;
ALTER TABLE embeddings ADD COLUMN rec INTEGER;
UPDATE embeddings SET rec = (SELECT r.rowid FROM records r WHERE r.id = embeddings.record_id);
CREATE INDEX embeddings_rec ON embeddings (rec, profile);
