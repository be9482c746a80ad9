package pgstore

import (
	"encoding/json"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// recordCols lists the records columns scanRecord reads, in order. Use it
// with a table alias via recordColsOf.
const recordCols = `id, tenant_id, subject_type, subject_id, kind, key, content, metadata, sources,
	status, version, content_hash, effective_from, effective_until,
	created_by_kind, created_by_id, touched_by_kind, touched_by_id, created_at, updated_at`

// recordColsR is recordCols qualified with the alias r.
const recordColsR = `r.id, r.tenant_id, r.subject_type, r.subject_id, r.kind, r.key, r.content, r.metadata, r.sources,
	r.status, r.version, r.content_hash, r.effective_from, r.effective_until,
	r.created_by_kind, r.created_by_id, r.touched_by_kind, r.touched_by_id, r.created_at, r.updated_at`

// scanner is what pgx.Row and pgx.Rows have in common.
type scanner interface {
	Scan(dest ...any) error
}

// recordDest holds scan targets for one record row.
type recordDest struct {
	r                  memorykit.Record
	subjectType, kind  string
	status             string
	meta, src          []byte
	until              *time.Time
	cbKind, tbKind     string
	effFrom            time.Time
	created, updated   time.Time
	createdID, touchID string
}

func (d *recordDest) targets() []any {
	return []any{
		&d.r.ID, &d.r.Scope.TenantID, &d.subjectType, &d.r.Scope.SubjectID, &d.kind, &d.r.Key,
		&d.r.Content, &d.meta, &d.src, &d.status, &d.r.Version, &d.r.ContentHash,
		&d.effFrom, &d.until, &d.cbKind, &d.createdID, &d.tbKind, &d.touchID, &d.created, &d.updated,
	}
}

func (d *recordDest) record() (memorykit.Record, error) {
	r := d.r
	r.Scope.SubjectType = memorykit.SubjectType(d.subjectType)
	r.Kind = memorykit.Kind(d.kind)
	r.Status = memorykit.Status(d.status)
	r.EffectiveFrom = d.effFrom.UTC()
	if d.until != nil {
		r.EffectiveUntil = d.until.UTC()
	}
	r.CreatedBy = memorykit.Actor{Kind: memorykit.ActorKind(d.cbKind), ID: d.createdID}
	r.TouchedBy = memorykit.Actor{Kind: memorykit.ActorKind(d.tbKind), ID: d.touchID}
	r.CreatedAt = d.created.UTC()
	r.UpdatedAt = d.updated.UTC()
	var err error
	if r.Metadata, err = decodeMetadata(d.meta); err != nil {
		return memorykit.Record{}, err
	}
	if r.Sources, err = decodeSources(d.src); err != nil {
		return memorykit.Record{}, err
	}
	return r, nil
}

// scanRecord reads one row laid out as recordCols.
func scanRecord(row scanner) (memorykit.Record, error) {
	var d recordDest
	if err := row.Scan(d.targets()...); err != nil {
		return memorykit.Record{}, err
	}
	return d.record()
}

// sourceJSON is a Source as stored in jsonb.
type sourceJSON struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
}

// encodeMetadata returns the jsonb parameter for m: NULL when it is empty,
// so empty metadata has one representation (nil), as in memorystore.
func encodeMetadata(m map[string]string) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// encodeSources returns the jsonb parameter for src: NULL when it is
// empty.
func encodeSources(src []memorykit.Source) (any, error) {
	if len(src) == 0 {
		return nil, nil
	}
	out := make([]sourceJSON, len(src))
	for i, s := range src {
		out[i] = sourceJSON{Kind: s.Kind, Ref: s.Ref}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func decodeMetadata(b []byte) (map[string]string, error) {
	if b == nil {
		return nil, nil
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeSources(b []byte) ([]memorykit.Source, error) {
	if b == nil {
		return nil, nil
	}
	var in []sourceJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	out := make([]memorykit.Source, len(in))
	for i, s := range in {
		out[i] = memorykit.Source{Kind: s.Kind, Ref: s.Ref}
	}
	return out, nil
}

// scanRevision reads one revisions row: record_id, version, action,
// actor_kind, actor_id, reason, status, content_hash, content, metadata,
// sources, at.
func scanRevision(row scanner) (storekit.Revision, error) {
	var (
		v                         storekit.Revision
		action, actorKind, status string
		meta, src                 []byte
		at                        time.Time
	)
	if err := row.Scan(&v.RecordID, &v.Version, &action, &actorKind, &v.Actor.ID, &v.Reason, &status,
		&v.ContentHash, &v.Content, &meta, &src, &at); err != nil {
		return storekit.Revision{}, err
	}
	v.Action = memorykit.Action(action)
	v.Actor.Kind = memorykit.ActorKind(actorKind)
	v.Status = memorykit.Status(status)
	v.At = at.UTC()
	var err error
	if v.Metadata, err = decodeMetadata(meta); err != nil {
		return storekit.Revision{}, err
	}
	if v.Sources, err = decodeSources(src); err != nil {
		return storekit.Revision{}, err
	}
	return v, nil
}

// jobCols lists the jobs columns scanJob reads.
const jobCols = `id, tenant_id, subject_type, subject_id, payload, state, attempt, max_attempts,
	available_at, leased_by, lease_expires_at, last_error, candidates, created_at, updated_at, lease_token,
	failures, reaps, hand_backs, max_reaps, run_ref`

func scanJob(row scanner) (storekit.Job, error) {
	var (
		j                   storekit.Job
		subjectType, state  string
		avail, created, upd time.Time
		expires             *time.Time
	)
	if err := row.Scan(&j.ID, &j.Scope.TenantID, &subjectType, &j.Scope.SubjectID, &j.Payload, &state,
		&j.Attempt, &j.MaxAttempts, &avail, &j.LeasedBy, &expires, &j.LastError, &j.Candidates,
		&created, &upd, &j.LeaseToken, &j.Failures, &j.Reaps, &j.HandBacks, &j.MaxReaps, &j.RunRef); err != nil {
		return storekit.Job{}, err
	}
	j.Scope.SubjectType = memorykit.SubjectType(subjectType)
	j.State = storekit.JobState(state)
	j.AvailableAt = avail.UTC()
	if expires != nil {
		j.LeaseExpiresAt = expires.UTC()
	}
	j.CreatedAt = created.UTC()
	j.UpdatedAt = upd.UTC()
	return j, nil
}

// nullTime returns nil for the zero time, else t as PostgreSQL stores it.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return pgTime(t)
}
