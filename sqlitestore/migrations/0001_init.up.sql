-- The first schema: every entity the in-process mirror holds, one row per
-- record, revision, vector, embedding lease, fencing token, job and
-- unfinished purge. Records, revisions, leases and jobs keep their fields
-- as JSON in body; the columns beside it are what lookups and the erasure
-- verifier filter on.
CREATE TABLE records (
	id           TEXT PRIMARY KEY,
	tenant_id    TEXT NOT NULL,
	subject_type TEXT NOT NULL,
	subject_id   TEXT NOT NULL,
	body         TEXT NOT NULL
);
CREATE TABLE revisions (
	record_id TEXT NOT NULL,
	seq       INTEGER NOT NULL,
	body      TEXT NOT NULL,
	PRIMARY KEY (record_id, seq)
);
CREATE TABLE embeddings (
	record_id    TEXT NOT NULL,
	profile      TEXT NOT NULL,
	content_hash TEXT NOT NULL,
	vector       BLOB NOT NULL,
	at           TEXT NOT NULL,
	PRIMARY KEY (record_id, profile)
);
CREATE TABLE embedding_leases (
	record_id TEXT NOT NULL,
	profile   TEXT NOT NULL,
	body      TEXT NOT NULL,
	PRIMARY KEY (record_id, profile)
);
CREATE TABLE embedding_tokens (
	record_id    TEXT NOT NULL,
	profile      TEXT NOT NULL,
	content_hash TEXT NOT NULL,
	token        INTEGER NOT NULL,
	PRIMARY KEY (record_id, profile)
);
CREATE TABLE jobs (
	id           TEXT PRIMARY KEY,
	tenant_id    TEXT NOT NULL,
	subject_type TEXT NOT NULL,
	subject_id   TEXT NOT NULL,
	state        TEXT NOT NULL,
	body         TEXT NOT NULL,
	erased_keys  TEXT NOT NULL
);
CREATE TABLE purges (
	tenant_id    TEXT NOT NULL,
	subject_type TEXT NOT NULL,
	subject_id   TEXT NOT NULL,
	body         TEXT NOT NULL,
	PRIMARY KEY (tenant_id, subject_type, subject_id)
);
CREATE TABLE meta (
	name  TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);
