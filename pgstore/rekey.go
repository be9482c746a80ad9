package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// dataSteps are Go steps that run in a migration's transaction right after
// its SQL, for changes SQL cannot compute. They are keyed by the
// migration's name without its number, so renumbering a file keeps its
// step.
var dataSteps = map[string]func(ctx context.Context, tx pgx.Tx, schema, ext string, now time.Time) error{
	"key_canonical_form": rekeyStep(rekeyReason),
	"key_confusables":    rekeyStep(confusablesReason),
}

// migrationActor is the actor of the lifecycle actions a migration itself
// records: the "supersede" revisions of rekeyRecords.
var migrationActor = memorykit.Actor{Kind: memorykit.ActorOperator, ID: "pgstore-migration"}

// rekeyReason is the reason of the supersede revisions rekeyRecords writes
// in migration 5 (invisible characters, case folding).
const rekeyReason = "key_canonical_form"

// confusablesReason is the reason of those it writes in migration 12
// (look-alike characters).
const confusablesReason = "key_confusables"

// rekeyStep is rekeyRecords as a migration's data step, recording reason.
func rekeyStep(reason string) func(ctx context.Context, tx pgx.Tx, schema, ext string, now time.Time) error {
	return func(ctx context.Context, tx pgx.Tx, schema, ext string, now time.Time) error {
		return rekeyRecords(ctx, tx, schema, ext, now, reason)
	}
}

// rekeyRecords brings every stored key to storekit.NormalizeKey's current
// form and recomputes the record's full-text terms, which include the
// key. When two active records of one Scope and kind end up with the same
// key, the one updated last stays active and the other is superseded by
// migrationActor, with a revision, as a newer write would have done. A key
// that canonicalises to nothing (it held only invisible characters) is
// left as it is: no key can reach it, and it collides with none. Keys of
// printable ASCII only (among them every erased tombstone's digest, from
// migration 6 on) are in every form so far and are not read.
//
// Erased tombstones keep no content; only their key changes. Embeddings
// are left as they are: they belong to the content hash, which does not
// change.
func rekeyRecords(ctx context.Context, tx pgx.Tx, schema, ext string, now time.Time, reason string) error {
	q := func(tmpl string) string { return renderSQL(tmpl, schema, ext) }
	type row struct {
		id, tenant, subjectType, subjectID, kind, key, status, content string
		updated                                                        time.Time
	}
	// Newest first, so a record re-keyed earlier in the loop is never
	// older than the one that collides with it later.
	rows, err := tx.Query(ctx, q(`SELECT id, tenant_id, subject_type, subject_id, kind, key, status, content, updated_at
		FROM {schema}.records WHERE key ~ '[^ -~]' ORDER BY updated_at DESC, id DESC`))
	if err != nil {
		return err
	}
	var todo []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.tenant, &r.subjectType, &r.subjectID, &r.kind, &r.key, &r.status, &r.content, &r.updated); err != nil {
			rows.Close()
			return err
		}
		todo = append(todo, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	supersede := func(id string) error {
		_, err := tx.Exec(ctx, q(rekeySupersede), id, string(memorykit.StatusSuperseded), string(migrationActor.Kind), migrationActor.ID,
			now, string(memorykit.ActionSupersede), reason)
		return err
	}
	for _, r := range todo {
		key := storekit.NormalizeKey(r.key)
		if key == r.key || key == "" {
			continue
		}
		if r.status == string(memorykit.StatusActive) {
			var holder string
			var holderUpdated time.Time
			err := tx.QueryRow(ctx, q(`SELECT id, updated_at FROM {schema}.records
				WHERE tenant_id = $1 AND subject_type = $2 AND subject_id = $3 AND kind = $4 AND key = $5
				  AND status = 'active'`), r.tenant, r.subjectType, r.subjectID, r.kind, key).Scan(&holder, &holderUpdated)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return err
			default:
				loser := r.id
				if holderUpdated.Before(r.updated) || holderUpdated.Equal(r.updated) && holder < r.id {
					loser = holder
				}
				if err := supersede(loser); err != nil {
					return err
				}
			}
		}
		scope := memorykit.Scope{TenantID: r.tenant, SubjectType: memorykit.SubjectType(r.subjectType), SubjectID: r.subjectID}
		if _, err := tx.Exec(ctx, q(`UPDATE {schema}.records SET key = $2,
				search_tsv = CASE WHEN status = 'erased' THEN search_tsv ELSE array_to_tsvector($3::text[]) END
			WHERE id = $1`), r.id, key, ftsTerms(scope, storekit.IndexTerms(key, r.content))); err != nil {
			return err
		}
	}
	return nil
}

// rekeySupersede is touch_plain as of schema 12, whose revisions have no
// tenant_id column yet: the data steps of versions 5 and 12 run before
// version 13 adds it.
const rekeySupersede = `WITH u AS (
	UPDATE {schema}.records SET status = $2, version = version + 1,
		touched_by_kind = $3, touched_by_id = $4, updated_at = $5
	WHERE id = $1
	RETURNING *
), rev AS (
	INSERT INTO {schema}.revisions (record_id, version, action, actor_kind, actor_id, reason,
		status, content_hash, content, metadata, sources, at)
	SELECT id, version, $6, $3, $4, $7, status, content_hash, content, metadata, sources, $5
	FROM u
)
SELECT 1 FROM u`
