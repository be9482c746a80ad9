package memorystore

import (
	"context"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

var (
	_ storekit.BatchCreator         = (*Store)(nil)
	_ storekit.EmbeddingBatchPutter = (*Store)(nil)
)

// CreateBatch implements storekit.BatchCreator: every item is validated as
// Create validates it, then, under one hold of the write lock, the whole
// batch is checked against the store (IDs, windows, expectations in order)
// before the first record is written, so a rejected batch changes nothing.
func (s *Store) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	const op = "memorystore.create_batch"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	checked, err := storekit.CheckBatch(ctx, s.guard, op, items, noDimensionBound)
	if err != nil {
		return nil, err
	}
	if len(checked) == 0 {
		return []memorykit.Record{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	for _, in := range checked {
		if s.purges[in.Scope] != nil {
			return nil, storekit.PurgingError(op)
		}
	}
	now := s.now()
	if err := s.planBatch(op, checked, now); err != nil {
		return nil, err
	}
	for i, in := range checked {
		at := storekit.BatchItemTime(now, i, len(checked))
		if _, err := s.createLocked(op, in, at); err != nil {
			// Unreachable: planBatch checked everything createLocked can
			// reject, under the same lock.
			return nil, storekit.BatchItemError(i, err)
		}
		if emb := items[i].Embedding; emb != nil {
			e := s.records[in.ID]
			e.embeddings = e.embeddings.put(embedding{profile: emb.Profile, hash: e.rec.ContentHash, vector: cloneVector(emb.Vector), at: at.UnixMicro()})
			s.syncVector(e, emb.Profile)
			s.changedEmbeddings(e.rec.ID, emb.Profile)
		}
	}
	out := make([]memorykit.Record, len(checked))
	for i, in := range checked {
		out[i] = s.records[in.ID].rec.Clone()
	}
	return out, nil
}

// planBatch checks the batch against the store as the items will be
// applied, in order (item i at storekit.BatchItemTime(now, i, n)), and
// gives every item without an ID a fresh one. The
// caller holds s.mu for writing.
func (s *Store) planBatch(op string, items []memorykit.NewRecord, now time.Time) error {
	if err := s.roomLocked(op, len(items)); err != nil {
		return err
	}
	taken := make(map[string]bool, len(items))
	for i, in := range items {
		if in.ID == "" {
			continue
		}
		if s.records[in.ID] != nil {
			return storekit.BatchItemError(i, memorykit.NewError(op, memorykit.ErrAlreadyExists, "id_taken"))
		}
		taken[in.ID] = true
	}
	// holder is the active record of a Scope/kind/key as the items before
	// the current one leave it (nil: none).
	type holder struct {
		id      string
		version int64
	}
	overlay := make(map[activeKey]*holder)
	for i := range items {
		in := &items[i]
		if in.ID == "" {
			for in.ID == "" || s.records[in.ID] != nil || taken[in.ID] {
				in.ID = storekit.NewRecordID(now)
			}
			taken[in.ID] = true
		}
		from := stamp(in.EffectiveFrom)
		if from.IsZero() {
			from = storekit.BatchItemTime(now, i, len(items))
		}
		if until := stamp(in.EffectiveUntil); !until.IsZero() && !until.After(from) {
			return storekit.BatchItemError(i, memorykit.FieldError(op, "effective_until", "not_after_effective_from"))
		}
		if in.Status != memorykit.StatusActive {
			continue
		}
		ak := activeKey{scope: in.Scope, kind: in.Kind, key: in.Key}
		h, ok := overlay[ak]
		if !ok {
			if cur := s.activeEntry(ak); cur != nil {
				h = &holder{id: cur.rec.ID, version: cur.rec.Version}
			}
		}
		if x := in.Expect; x != nil {
			holderID, version := "", int64(0)
			if h != nil {
				holderID, version = h.id, h.version
			}
			if err := x.Check(op, holderID, version); err != nil {
				return storekit.BatchItemError(i, err)
			}
		}
		overlay[ak] = &holder{id: in.ID, version: 1}
	}
	return nil
}
