package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// ScopeCounts are one Scope's numbers for an operator's status report.
type ScopeCounts struct {
	// PendingEmbeddings counts the Scope's active records lacking a
	// current embedding of the profile, parked ones included.
	PendingEmbeddings int
	// Jobs counts the Scope's extraction jobs by state.
	Jobs storekit.JobCounts
}

// CountScope returns the ScopeCounts of one Scope for an embedding
// profile.
func (s *Store) CountScope(ctx context.Context, profile string, scope memorykit.Scope) (ScopeCounts, error) {
	const op = "sqlitestore.count_scope"
	pending, err := s.PendingEmbeddingsIn(ctx, scope, profile)
	if err != nil {
		return ScopeCounts{}, err
	}
	out := ScopeCounts{PendingEmbeddings: pending}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.broken(op); err != nil {
		return ScopeCounts{}, err
	}
	// The jobs table is in step with the mirror while s.mu is held.
	err = s.each(ctx, `SELECT state, count(*) FROM jobs WHERE tenant_id = ? AND subject_type = ? AND subject_id = ? GROUP BY state`,
		func(rows *sql.Rows) error {
			var state string
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				return err
			}
			switch storekit.JobState(state) {
			case storekit.JobQueued:
				out.Jobs.Queued = n
			case storekit.JobLeased:
				out.Jobs.Leased = n
			case storekit.JobDone:
				out.Jobs.Done = n
			case storekit.JobFailed:
				out.Jobs.Failed = n
			}
			return nil
		}, scope.TenantID, string(scope.SubjectType), scope.SubjectID)
	if err != nil {
		return ScopeCounts{}, mapErr(op, err)
	}
	return out, nil
}

// FileSchemaVersion reads the schema version of the file at path without
// changing it (Open would migrate): 0 when the file does not exist or was
// never migrated. A file a running store holds is ErrUnavailable with
// reason ReasonLocked.
func FileSchemaVersion(ctx context.Context, path string) (int, error) {
	const op = "sqlitestore.file_schema_version"
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, memorykit.WrapError(op, memorykit.ErrUnavailable, "stat_failed", err)
	}
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro&_pragma=busy_timeout(200)"))
	if err != nil {
		return 0, mapErr(op, err)
	}
	defer db.Close()
	var exists int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&exists); err != nil {
		return 0, mapErr(op, err)
	}
	if exists == 0 {
		return 0, nil
	}
	var v int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, mapErr(op, err)
	}
	return v, nil
}
