package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// touch runs the named touch statement (touch_plain, touch_erase or
// touch_correct in sql/lifecycle.sql) applying lifecycle rule r, which the
// caller has checked, to rec: the record takes the rule's status.
func (s *Store) touch(ctx context.Context, tx pgx.Tx, stmt string, rec memorykit.Record, r storekit.LifecycleRule,
	actor memorykit.Actor, reason string, now time.Time, extra ...any) (memorykit.Record, error) {
	args := append([]any{rec.ID, string(r.Target(rec.Status)), string(actor.Kind), actor.ID, now, string(r.Action()), reason}, extra...)
	return scanRecord(tx.QueryRow(ctx, s.stmt(stmt), args...))
}

// Create implements storekit.LifecycleStore. It is a batch of one: after
// CheckNew it takes the path of CreateBatch (writeBatch), with errors
// reported without an item position.
func (s *Store) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	const op = "pgstore.create"
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	in, err := s.guard.CheckNew(ctx, op, in)
	if err != nil {
		return memorykit.Record{}, err
	}
	r := batchRow{in: in, superseder: -1}
	if r.meta, err = encodeMetadata(in.Metadata); err != nil {
		return memorykit.Record{}, memorykit.WrapError(op, memorykit.ErrInvalidInput, "metadata_encoding", err)
	}
	if r.src, err = encodeSources(in.Sources); err != nil {
		return memorykit.Record{}, memorykit.WrapError(op, memorykit.ErrInvalidInput, "sources_encoding", err)
	}
	r.terms = termsValue(scopeTag(in.Scope), storekit.IndexTerms(in.Key, in.Content))
	rows := []batchRow{r}
	now := s.now()
	err = s.inTx(ctx, op, func(tx pgx.Tx) error {
		return s.writeBatch(ctx, tx, op, rows, now, asIs)
	})
	if in.ID != "" && errors.Is(err, memorykit.ErrAlreadyExists) {
		// Report the holder of the ID when it is in the caller's Scope.
		if existing, gerr := s.Get(ctx, in.Scope, in.ID); gerr == nil {
			return existing, err
		}
		return memorykit.Record{}, err
	}
	if err != nil {
		return memorykit.Record{}, err
	}
	s.wrote(in.Scope)
	return rows[0].rec.Clone(), nil
}

// keyGoverned reports whether any record of scope holding the canonical
// key governs it against owner (see storekit.GovernsKeyAgainst). It is
// the one place pgstore matches records to a key for that rule. The caller
// holds the key's advisory lock, which every active create and activation
// of the key takes whatever its kind, so two governed creates of one key
// cannot both pass.
func (s *Store) keyGoverned(ctx context.Context, tx pgx.Tx, scope memorykit.Scope, key string, owner memorykit.Actor) (bool, error) {
	var governed bool
	err := tx.QueryRow(ctx, s.stmt("key_governed"), scope.TenantID, string(scope.SubjectType), scope.SubjectID, key,
		string(owner.Kind), owner.ID, s.tombstoneKey(scope, key)).Scan(&governed)
	return governed, err
}

// activeForUpdate locks and returns the active record of a Scope, kind and
// key, if any.
func (s *Store) activeForUpdate(ctx context.Context, tx pgx.Tx, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, bool, error) {
	rec, err := scanRecord(tx.QueryRow(ctx, s.stmt("active_for_update"), scope.TenantID, string(scope.SubjectType), scope.SubjectID, string(kind), key))
	if errors.Is(err, pgx.ErrNoRows) {
		return memorykit.Record{}, false, nil
	}
	return rec, err == nil, err
}

// Get implements storekit.LifecycleStore.
func (s *Store) Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error) {
	const op = "pgstore.get"
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	if err := storekit.CheckScopedID(op, scope, id); err != nil {
		return memorykit.Record{}, err
	}
	rec, err := scanRecord(s.pool.QueryRow(ctx, s.stmt("get"),
		id, scope.TenantID, string(scope.SubjectType), scope.SubjectID))
	if errors.Is(err, pgx.ErrNoRows) {
		return memorykit.Record{}, notFound(op)
	}
	if err != nil {
		return memorykit.Record{}, mapErr(op, err)
	}
	return rec, nil
}

// FindActive implements storekit.LifecycleStore. The key is canonicalised
// first, so any spelling of a key finds its record.
func (s *Store) FindActive(ctx context.Context, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, error) {
	const op = "pgstore.find_active"
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	key, err := storekit.CheckActiveKey(s.guard, op, scope, kind, key)
	if err != nil {
		return memorykit.Record{}, err
	}
	rec, err := scanRecord(s.pool.QueryRow(ctx, s.stmt("find_active"),
		scope.TenantID, string(scope.SubjectType), scope.SubjectID, string(kind), key))
	if errors.Is(err, pgx.ErrNoRows) {
		return memorykit.Record{}, notFound(op)
	}
	if err != nil {
		return memorykit.Record{}, mapErr(op, err)
	}
	return rec, nil
}

// List implements storekit.LifecycleStore.
func (s *Store) List(ctx context.Context, f storekit.ListFilter) ([]memorykit.Record, error) {
	const op = "pgstore.list"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	f, err := storekit.CheckList(s.guard, op, f)
	if err != nil {
		return nil, err
	}
	statuses := make([]string, 0, len(f.Statuses))
	for _, st := range f.Statuses {
		statuses = append(statuses, string(st))
	}
	rows, err := s.pool.Query(ctx, s.stmt("list"),
		f.Scope.TenantID, string(f.Scope.SubjectType), f.Scope.SubjectID, f.AfterID,
		statuses, string(f.Kind), f.Key, f.Limit, s.tombstoneKey(f.Scope, f.Key))
	if err != nil {
		return nil, mapErr(op, err)
	}
	defer rows.Close()
	out := make([]memorykit.Record, 0)
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, mapErr(op, err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(op, err)
	}
	return out, nil
}

// Activate implements storekit.LifecycleStore. Activations and active
// creates of one Scope and key (of any kind) serialise on a transaction advisory
// lock, so concurrent activations leave exactly one active record.
func (s *Store) Activate(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "pgstore.activate", t, storekit.RuleActivate)
}

// Reject implements storekit.LifecycleStore.
func (s *Store) Reject(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "pgstore.reject", t, storekit.RuleReject)
}

// Forget implements storekit.LifecycleStore.
func (s *Store) Forget(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "pgstore.forget", t, storekit.RuleForget)
}

// Erase implements storekit.LifecycleStore. The record, every revision
// snapshot, its embeddings and its embedding lease rows are scrubbed in one
// transaction.
func (s *Store) Erase(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	return s.transition(ctx, "pgstore.erase", t, storekit.RuleErase)
}

// lockTarget locks a transition's record and checks it against rule r
// (expected version, starting status).
func (s *Store) lockTarget(ctx context.Context, tx pgx.Tx, op string, t storekit.Transition, r storekit.LifecycleRule) (memorykit.Record, error) {
	if err := s.holdScope(ctx, tx, op, t.Scope); err != nil {
		return memorykit.Record{}, err
	}
	rec, err := scanRecord(tx.QueryRow(ctx, s.stmt("lock_target"), t.ID, t.Scope.TenantID, string(t.Scope.SubjectType), t.Scope.SubjectID))
	if errors.Is(err, pgx.ErrNoRows) {
		return memorykit.Record{}, notFound(op)
	}
	if err != nil {
		return memorykit.Record{}, err
	}
	return rec, r.Check(op, t, rec)
}

func (s *Store) transition(ctx context.Context, op string, t storekit.Transition, r storekit.LifecycleRule) (memorykit.Record, error) {
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	if err := storekit.CheckAction(ctx, s.guard, op, r.Action(), t); err != nil {
		return memorykit.Record{}, err
	}
	now := s.now()
	var out memorykit.Record
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		if r.Action() == memorykit.ActionActivate {
			// Kind and key never change, so they can be read before the
			// key lock, which must come before any row lock.
			peek, err := scanRecord(tx.QueryRow(ctx, s.stmt("transition"),
				t.ID, t.Scope.TenantID, string(t.Scope.SubjectType), t.Scope.SubjectID))
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound(op)
			}
			if err != nil {
				return err
			}
			if err := s.lockKey(ctx, tx, t.Scope, peek.Key); err != nil {
				return err
			}
		}
		rec, err := s.lockTarget(ctx, tx, op, t, r)
		if err != nil {
			return err
		}
		switch r.Action() {
		case memorykit.ActionActivate:
			cur, found, err := s.activeForUpdate(ctx, tx, rec.Scope, rec.Kind, rec.Key)
			if err != nil {
				return err
			}
			if found && cur.ID != rec.ID {
				if _, err := s.touch(ctx, tx, "touch_plain", cur, storekit.RuleSupersede, t.Actor, t.Reason, now); err != nil {
					return err
				}
			}
		case memorykit.ActionErase:
			out, err = s.erase(ctx, tx, rec, r, t.Actor, t.Reason, now)
			return err
		}
		out, err = s.touch(ctx, tx, "touch_plain", rec, r, t.Actor, t.Reason, now)
		if isUniqueViolation(err, "records_one_active") {
			return memorykit.WrapError(op, memorykit.ErrVersionConflict, "active_record_changed", err)
		}
		return err
	})
	if err != nil {
		return memorykit.Record{}, err
	}
	s.wrote(t.Scope)
	return out, nil
}

// Correct implements storekit.LifecycleStore. The Host's validator runs
// outside the transaction; kind and key never change, and the version and
// status are checked again under the row lock.
func (s *Store) Correct(ctx context.Context, c storekit.Correction) (memorykit.Record, error) {
	const op = "pgstore.correct"
	if err := live(ctx, op); err != nil {
		return memorykit.Record{}, err
	}
	if err := storekit.CheckTransition(op, c.Transition); err != nil {
		return memorykit.Record{}, err
	}
	peek, err := s.Get(ctx, c.Scope, c.ID)
	if err != nil {
		if errors.Is(err, memorykit.ErrNotFound) {
			return memorykit.Record{}, notFound(op)
		}
		return memorykit.Record{}, err
	}
	if err := storekit.RuleCorrect.Check(op, c.Transition, peek); err != nil {
		return memorykit.Record{}, err
	}
	if err := storekit.CheckCorrection(ctx, s.guard, op, peek.Kind, peek.Key, c); err != nil {
		return memorykit.Record{}, err
	}
	src, err := encodeSources(c.Sources)
	if err != nil {
		return memorykit.Record{}, memorykit.WrapError(op, memorykit.ErrInvalidInput, "sources_encoding", err)
	}
	meta, err := encodeMetadata(c.Metadata)
	if err != nil {
		return memorykit.Record{}, memorykit.WrapError(op, memorykit.ErrInvalidInput, "metadata_encoding", err)
	}
	now := s.now()
	var out memorykit.Record
	err = s.inTx(ctx, op, func(tx pgx.Tx) error {
		rec, err := s.lockTarget(ctx, tx, op, c.Transition, storekit.RuleCorrect)
		if err != nil {
			return err
		}
		out, err = s.touch(ctx, tx, "touch_correct", rec, storekit.RuleCorrect, c.Actor, c.Reason, now,
			c.Content, storekit.ContentHash(c.Content), src, c.Metadata != nil, meta,
			ftsTerms(rec.Scope, storekit.IndexTerms(rec.Key, c.Content)))
		return err
	})
	if err != nil {
		return memorykit.Record{}, err
	}
	s.wrote(c.Scope)
	return out, nil
}

// Revisions implements storekit.LifecycleStore.
func (s *Store) Revisions(ctx context.Context, scope memorykit.Scope, id string) ([]storekit.Revision, error) {
	const op = "pgstore.revisions"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckScopedID(op, scope, id); err != nil {
		return nil, err
	}
	// Every record has at least its "create" revision, so no row means no
	// record in this Scope.
	rows, err := s.pool.Query(ctx, s.stmt("revisions"), id, scope.TenantID, string(scope.SubjectType), scope.SubjectID)
	if err != nil {
		return nil, mapErr(op, err)
	}
	defer rows.Close()
	var out []storekit.Revision
	for rows.Next() {
		rev, err := scanRevision(rows)
		if err != nil {
			return nil, mapErr(op, err)
		}
		out = append(out, rev)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(op, err)
	}
	found := len(out) > 0
	if !found {
		return nil, notFound(op)
	}
	return out, nil
}
