package pgstore

import (
	"context"
	"encoding/binary"
	"hash/fnv"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit"
)

// live fails when ctx is done, before anything is sent to the database.
func live(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", err)
	}
	return nil
}

func notFound(op string) error {
	return memorykit.NewError(op, memorykit.ErrNotFound, "not_found")
}

// inTx runs fn in a READ COMMITTED transaction and commits when fn returns
// nil. Errors from fn and from the driver are mapped with mapErr.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return mapErr(op, withCtx(ctx, err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return mapErr(op, withCtx(ctx, err))
	}
	if err := tx.Commit(ctx); err != nil {
		return mapErr(op, withCtx(ctx, err))
	}
	return nil
}

// keyLock is the transaction advisory lock that serialises every change of
// which record is active for one Scope and canonical key, whatever the
// kind: the model write rule (ActiveExpectation.KeyOwner) looks at every
// kind of a key, so its check and insert must not interleave with another
// active create of the key under another kind. The schema is part of the
// key so independent stores on one database do not contend.
func (s *Store) keyLock(scope memorykit.Scope, key string) int64 {
	h := fnv.New64a()
	var n [8]byte
	for _, p := range []string{s.schema, scope.TenantID, string(scope.SubjectType), scope.SubjectID, key} {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return int64(h.Sum64())
}

func (s *Store) lockKey(ctx context.Context, tx pgx.Tx, scope memorykit.Scope, key string) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", s.keyLock(scope, key))
	return err
}
