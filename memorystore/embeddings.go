package memorystore

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// currentState returns the lease/retry/park state of e's embedding for
// profile at e's current content hash, or nil when there is none.
func (s *Store) currentState(e *entry, profile string) *embState {
	st := s.embStates[embKey{recordID: e.rec.ID, profile: profile}]
	if st == nil || st.hash != e.rec.ContentHash {
		return nil
	}
	return st
}

// pending reports whether e is active and lacks an embedding of profile at
// its current content hash.
func (s *Store) pending(e *entry, profile string) bool {
	if e.rec.Status != memorykit.StatusActive {
		return false
	}
	emb := e.embeddings.get(profile)
	return emb == nil || emb.hash != e.rec.ContentHash
}

// LeaseEmbeddings implements storekit.EmbeddingStore. Records are leased
// in ID order across every Scope.
func (s *Store) LeaseEmbeddings(ctx context.Context, p storekit.EmbeddingLease) ([]storekit.EmbeddingTask, error) {
	const op = "memorystore.lease_embeddings"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckEmbeddingLease(s.guard, op, p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	now := s.now()
	var picked []*entry
	for _, e := range s.pendingCandidates(p.Profile) {
		if !s.pending(e, p.Profile) || p.Scope != nil && e.rec.Scope != *p.Scope {
			continue
		}
		if st := s.currentState(e, p.Profile); st != nil {
			if st.leasedBy != "" || st.parked || st.retryAt.After(now) {
				continue
			}
		}
		picked = append(picked, e)
	}
	sort.Slice(picked, func(i, j int) bool { return picked[i].rec.ID < picked[j].rec.ID })
	if len(picked) > p.Max {
		picked = picked[:p.Max]
	}
	expiry := stamp(now.Add(p.TTL))
	tasks := make([]storekit.EmbeddingTask, 0, len(picked))
	for _, e := range picked {
		k := embKey{recordID: e.rec.ID, profile: p.Profile}
		st := s.currentState(e, p.Profile)
		if st == nil {
			st = &embState{hash: e.rec.ContentHash}
			s.embStates[k] = st
		}
		st.attempt++
		st.leasedBy = p.WorkerID
		st.leaseExpiry = expiry
		st.retryAt = time.Time{}
		st.token = s.nextLeaseToken()
		s.embTokens[k] = embToken{hash: e.rec.ContentHash, token: st.token}
		s.changedEmbeddings(e.rec.ID, p.Profile)
		tasks = append(tasks, storekit.EmbeddingTask{
			RecordID:    e.rec.ID,
			Scope:       e.rec.Scope,
			Profile:     p.Profile,
			ContentHash: e.rec.ContentHash,
			Text:        e.rec.EmbeddingText(),
			Attempt:     st.attempt,
			LeaseToken:  st.token,
		})
	}
	return tasks, nil
}

// PutEmbedding implements storekit.EmbeddingStore.
func (s *Store) PutEmbedding(ctx context.Context, p storekit.EmbeddingPut) error {
	const op = "memorystore.put_embedding"
	if err := live(ctx, op); err != nil {
		return err
	}
	if err := storekit.CheckEmbeddingPut(op, p, noDimensionBound); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return err
	}
	return s.putLocked(op, p)
}

// PutEmbeddings implements storekit.EmbeddingBatchPutter: each put is
// applied as PutEmbedding would, all under one hold of the lock.
func (s *Store) PutEmbeddings(ctx context.Context, puts []storekit.EmbeddingPut) ([]error, error) {
	const op = "memorystore.put_embeddings"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	if err := storekit.CheckBatchSize(s.guard, op, len(puts)); err != nil {
		return nil, err
	}
	errs := make([]error, len(puts))
	for i, p := range puts {
		if err := storekit.CheckEmbeddingPut(op, p, noDimensionBound); err != nil {
			errs[i] = storekit.BatchItemError(i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	// Only the last accepted put of each record and profile is applied,
	// as pgstore does: the earlier ones would have been overwritten.
	last := make(map[embKey]int)
	for i, p := range puts {
		if errs[i] != nil {
			continue
		}
		if _, err := s.checkPut(op, p); err != nil {
			errs[i] = storekit.BatchItemError(i, err)
			continue
		}
		last[embKey{recordID: p.RecordID, profile: p.Profile}] = i
	}
	for i, p := range puts {
		if errs[i] == nil && last[embKey{recordID: p.RecordID, profile: p.Profile}] == i {
			if err := s.putLocked(op, p); err != nil {
				errs[i] = storekit.BatchItemError(i, err)
			}
		}
	}
	return errs, nil
}

// checkPut returns the entry a validated put is for, or the error
// PutEmbedding reports for it; s.mu is held.
func (s *Store) checkPut(op string, p storekit.EmbeddingPut) (*entry, error) {
	e := s.lookup(p.Scope, p.RecordID)
	if e == nil {
		return nil, notFound(op)
	}
	if e.rec.Status != memorykit.StatusActive || e.rec.ContentHash != p.ContentHash {
		return nil, memorykit.NewError(op, memorykit.ErrStale, "content_changed")
	}
	if t, ok := s.embTokens[embKey{recordID: p.RecordID, profile: p.Profile}]; ok && t.hash == p.ContentHash && t.token > p.LeaseToken {
		return nil, memorykit.NewError(op, memorykit.ErrLeaseLost, storekit.ReasonStaleLeaseToken)
	}
	return e, nil
}

// putLocked stores a validated put; s.mu is held.
func (s *Store) putLocked(op string, p storekit.EmbeddingPut) error {
	e, err := s.checkPut(op, p)
	if err != nil {
		return err
	}
	k := embKey{recordID: p.RecordID, profile: p.Profile}
	s.changedEmbeddings(p.RecordID, p.Profile)
	delete(s.embStates, k)
	if old := e.embeddings.get(p.Profile); old != nil && old.hash == p.ContentHash && slices.Equal(s.vectorOf(e, old), p.Vector) {
		return nil
	}
	e.embeddings = e.embeddings.put(embedding{profile: p.Profile, hash: p.ContentHash, vector: cloneVector(p.Vector), at: s.now().UnixMicro()})
	s.syncVector(e, p.Profile)
	return nil
}

// ReleaseEmbedding implements storekit.EmbeddingStore. A release for a
// record that is no longer active at r.ContentHash is ErrStale.
func (s *Store) ReleaseEmbedding(ctx context.Context, r storekit.EmbeddingRelease) error {
	const op = "memorystore.release_embedding"
	if err := live(ctx, op); err != nil {
		return err
	}
	if err := storekit.CheckEmbeddingRelease(op, r); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return err
	}
	e := s.lookup(r.Scope, r.RecordID)
	if e == nil {
		return notFound(op)
	}
	if e.rec.Status != memorykit.StatusActive || e.rec.ContentHash != r.ContentHash {
		return memorykit.NewError(op, memorykit.ErrStale, "content_changed")
	}
	st := s.currentState(e, r.Profile)
	if st != nil && st.token != r.LeaseToken {
		return memorykit.NewError(op, memorykit.ErrLeaseLost, storekit.ReasonStaleLeaseToken)
	}
	if st == nil || st.leasedBy != r.WorkerID {
		return memorykit.NewError(op, memorykit.ErrLeaseLost, storekit.ReasonNotLeaseHolder)
	}
	s.changedEmbeddings(e.rec.ID, r.Profile)
	st.leasedBy = ""
	st.leaseExpiry = time.Time{}
	st.reason = r.Reason
	if r.Park {
		st.parked = true
	} else {
		st.retryAt = stamp(r.RetryAt)
	}
	return nil
}

// PendingEmbeddings implements storekit.EmbeddingStore.
func (s *Store) PendingEmbeddings(ctx context.Context, profile string) (int, error) {
	const op = "memorystore.pending_embeddings"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	if err := storekit.ValidateProfile(op, profile); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.countPending(profile), nil
}

// PendingEmbeddingsIn implements storekit.ScopedPendingCounter.
func (s *Store) PendingEmbeddingsIn(ctx context.Context, scope memorykit.Scope, profile string) (int, error) {
	const op = "memorystore.pending_embeddings_in"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	if err := scope.Validate(); err != nil {
		return 0, err
	}
	if err := storekit.ValidateProfile(op, profile); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, e := range s.records {
		if e.rec.Scope == scope && s.pending(e, profile) {
			n++
		}
	}
	return n, nil
}

// DeleteEmbeddings implements storekit.EmbeddingStore.
func (s *Store) DeleteEmbeddings(ctx context.Context, profile string, scope memorykit.Scope) (int, error) {
	return s.deleteEmbeddings(ctx, "memorystore.delete_embeddings", profile, &scope)
}

// DeleteAllEmbeddings implements storekit.EmbeddingStore.
func (s *Store) DeleteAllEmbeddings(ctx context.Context, profile string) (int, error) {
	return s.deleteEmbeddings(ctx, "memorystore.delete_all_embeddings", profile, nil)
}

// deleteEmbeddings deletes the profile's embeddings and lease state in
// scope, or everywhere when scope is nil.
func (s *Store) deleteEmbeddings(ctx context.Context, op, profile string, scope *memorykit.Scope) (int, error) {
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	if err := storekit.ValidateProfile(op, profile); err != nil {
		return 0, err
	}
	if scope != nil {
		if err := scope.Validate(); err != nil {
			return 0, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	in := func(k embKey) bool {
		return k.profile == profile && (scope == nil || s.records[k.recordID].rec.Scope == *scope)
	}
	n := 0
	for _, e := range s.records {
		if scope != nil && e.rec.Scope != *scope {
			continue
		}
		var ok bool
		if e.embeddings, ok = e.embeddings.del(profile); ok {
			s.syncVector(e, profile)
			s.changedEmbeddings(e.rec.ID, profile)
			n++
		}
	}
	for k := range s.embStates {
		if in(k) {
			delete(s.embStates, k)
			s.changedEmbeddings(k.recordID, k.profile)
		}
	}
	for k := range s.embTokens {
		if in(k) {
			delete(s.embTokens, k)
			s.changedEmbeddings(k.recordID, k.profile)
		}
	}
	return n, nil
}

// ReapEmbeddingLeases implements storekit.EmbeddingStore. A lease is
// expired once the clock reaches its expiry.
func (s *Store) ReapEmbeddingLeases(ctx context.Context) (int, error) {
	const op = "memorystore.reap_embedding_leases"
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := live(ctx, op); err != nil {
		return 0, err
	}
	now := s.now()
	n := 0
	for k, st := range s.embStates {
		if st.leasedBy != "" && !now.Before(st.leaseExpiry) {
			s.changedEmbeddings(k.recordID, k.profile)
			st.leasedBy = ""
			st.leaseExpiry = time.Time{}
			n++
		}
	}
	return n, nil
}
