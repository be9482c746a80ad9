-- Scopes are loaded into memory one at a time, when first used, so the
-- columns lookups across Scopes filter on move out of the JSON body: a
-- record's status and content hash (which records wait for a vector),
-- and indexes by Scope for records and jobs and by state for jobs.
ALTER TABLE records ADD COLUMN status TEXT NOT NULL DEFAULT '';
ALTER TABLE records ADD COLUMN content_hash TEXT NOT NULL DEFAULT '';
-- trail = 0: the record's one revision is its create, without a reason,
-- as the record still describes it, so loading the Scope need not read it.
ALTER TABLE records ADD COLUMN trail INTEGER NOT NULL DEFAULT 1;
UPDATE records SET status = json_extract(body, '$.Status'), content_hash = json_extract(body, '$.ContentHash');
CREATE INDEX records_scope ON records (tenant_id, subject_type, subject_id);
CREATE INDEX records_status ON records (status, id);
CREATE INDEX jobs_scope ON jobs (tenant_id, subject_type, subject_id);
CREATE INDEX jobs_state ON jobs (state);
-- Open reports how many records the file holds without counting them.
INSERT INTO meta (name, value) SELECT 'records', count(*) FROM records;
