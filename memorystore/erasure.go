package memorystore

import (
	"context"
	"sort"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// purgeBatch is how many records one step of a purge erases under one
// hold of the write lock; the context is checked between steps.
const purgeBatch = 8

// tombstoneKey is the key an erased record of scope holds in place of
// canonicalKey. Every lookup of records by canonical key (List's Key
// filter, and any rule that asks whether a key was ever decided on) must
// also match erased records whose Key equals it, or an erased key would
// look new.
func (s *Store) tombstoneKey(scope memorykit.Scope, canonicalKey string) string {
	return s.keyer.Digest(scope, canonicalKey)
}

// erasure counts what one erase touched, for a purge report.
type erasure struct {
	revisions, embeddings, queue, jobs int
}

// eraseLocked turns e into a tombstone with rule r (erase) or as a purge
// (r the zero rule): it scrubs the record and every revision, replaces the
// key by its keyed digest, drops embeddings and embedding state, and
// scrubs the extraction jobs the record came from. The caller holds s.mu
// for writing and has checked the transition.
func (s *Store) eraseLocked(e *entry, r storekit.LifecycleRule, actor memorykit.Actor, reason string, now time.Time) erasure {
	jobs := storekit.ErasureJobIDs(e.rec, e.ownHistory().revisions)
	texts := storekit.ErasedTexts(e.rec, e.ownHistory().revisions)
	digest := s.tombstoneKey(e.rec.Scope, e.rec.Key)
	if e.ix != nil {
		// Out of the recall index while the index still knows the key.
		s.unindex(e)
	}
	var n erasure
	n.embeddings = len(e.embeddings)
	for k := range s.embStates {
		if k.recordID == e.rec.ID {
			n.queue++
		}
	}
	s.scrub(e)
	s.rekeyLocked(e, digest)
	if r.Action() == memorykit.ActionErase {
		e.touch(r, actor, reason, now)
	} else {
		e.rec.Status = memorykit.StatusErased
		e.rec.Version++
		e.rec.TouchedBy = actor
		e.rec.UpdatedAt = now
		e.record(memorykit.ActionPurge, actor, reason, now)
	}
	revs := e.trail.revisions
	for i := range revs {
		revs[i].Reason = storekit.ScrubReason(revs[i].Reason)
	}
	n.revisions = len(revs)
	s.sync(e)
	s.changed(e)
	own := make(map[string]bool, len(jobs))
	for _, id := range jobs {
		own[id] = true
		if j := s.jobs[id]; j != nil && j.Scope == e.rec.Scope {
			if s.scrubJobLocked(j, digest, now) {
				n.jobs++
			}
			s.dropRunRefLocked(j)
		}
	}
	if r.Action() != memorykit.ActionErase {
		// A purge scrubs every job of the Scope when its last step is done.
		return n
	}
	for id, j := range s.jobs {
		if !own[id] && j.Scope == e.rec.Scope && s.scrubQuotingJobLocked(j, texts, now) {
			n.jobs++
		}
	}
	return n
}

// scrubQuotingJobLocked finishes an unfinished job of the erased record's
// Scope whose payload quotes texts (storekit.PayloadQuotes) as a failed
// tombstone with reason storekit.ReasonErasedContent, dropping its lease
// and run reference, and reports whether it did. The caller holds s.mu
// for writing.
func (s *Store) scrubQuotingJobLocked(j *storekit.Job, texts []string, now time.Time) bool {
	if (j.State != storekit.JobQueued && j.State != storekit.JobLeased) || !storekit.PayloadQuotes(j.Payload, texts) {
		return false
	}
	s.changedJob(j.ID)
	delete(s.jobErased, j.ID)
	tombstone(j, storekit.JobFailed)
	j.LastError = storekit.ReasonErasedContent
	j.RunRef = ""
	j.UpdatedAt = now
	return true
}

// dropRunRefLocked removes the run reference (the Host's turn id) from a
// job erase or purge scrubbed; it reports whether there was one. The
// caller holds s.mu for writing.
func (s *Store) dropRunRefLocked(j *storekit.Job) bool {
	if j.RunRef == "" {
		return false
	}
	s.changedJob(j.ID)
	j.RunRef = ""
	return true
}

// scrubJobLocked scrubs one extraction job for an erase whose key digest
// is digest (storekit.PurgeAllKeys for a purge). A queued job is finished
// at once as a failed tombstone with reason storekit.ReasonErased; a
// leased one loses its payload now and is finished when its worker hands
// it back (erasedHandback), dropping its proposals for the digest. Done and
// failed jobs hold no content. It reports whether the job was scrubbed
// now for the first time.
func (s *Store) scrubJobLocked(j *storekit.Job, digest string, now time.Time) bool {
	s.changedJob(j.ID)
	switch j.State {
	case storekit.JobQueued:
		tombstone(j, storekit.JobFailed)
		j.LastError = storekit.ReasonErased
		j.UpdatedAt = now
		return true
	case storekit.JobLeased:
		j.Payload = ""
		j.UpdatedAt = now
		marks, seen := s.jobErased[j.ID]
		for _, d := range marks {
			if d == digest {
				return false
			}
		}
		s.jobErased[j.ID] = append(marks, digest)
		return !seen
	}
	return false
}

// erasedHandback finishes a scrubbed job whose worker hands it back with a
// failure, a release or an expired lease: it becomes a failed tombstone
// with reason storekit.ReasonErased. It reports whether the job was one.
// The caller holds s.mu for writing and has checked the lease.
func (s *Store) erasedHandback(j *storekit.Job, now time.Time) bool {
	if _, ok := s.jobErased[j.ID]; !ok {
		return false
	}
	delete(s.jobErased, j.ID)
	s.changedJob(j.ID)
	tombstone(j, storekit.JobFailed)
	j.LastError = storekit.ReasonErased
	j.UpdatedAt = now
	return true
}

// erasedCompletion drops the proposals of a scrubbed job that erase
// removed, and forgets the job's erase marks. The caller holds s.mu for
// writing and has checked the lease.
func (s *Store) erasedCompletion(j *storekit.Job, in []memorykit.NewRecord) ([]memorykit.NewRecord, bool) {
	keys, ok := s.jobErased[j.ID]
	if !ok {
		return in, false
	}
	delete(s.jobErased, j.ID)
	s.changedJob(j.ID)
	return storekit.DropErasedProposals(s.keyer, j.Scope, keys, in), true
}

// Purge implements storekit.Purger.
func (s *Store) Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error) {
	const op = "memorystore.purge"
	if err := live(ctx, op); err != nil {
		return memorykit.PurgeReport{}, err
	}
	if err := storekit.CheckPurge(op, scope, actor, reason); err != nil {
		return memorykit.PurgeReport{}, err
	}
	s.mu.Lock()
	rep := s.purges[scope]
	if rep == nil {
		rep = &memorykit.PurgeReport{Scope: scope, Actor: actor, Reason: reason, StartedAt: s.now(), RecordIDs: []string{}}
		s.purges[scope] = rep
	}
	s.mu.Unlock()
	for {
		if err := live(ctx, op); err != nil {
			return memorykit.PurgeReport{}, err
		}
		if done := s.purgeStep(scope, rep); done {
			break
		}
	}
	if err := live(ctx, op); err != nil {
		return memorykit.PurgeReport{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, j := range s.jobs {
		if j.Scope != scope {
			continue
		}
		scrubbed := s.scrubJobLocked(j, storekit.PurgeAllKeys, now)
		if dropped := s.dropRunRefLocked(j); scrubbed || dropped {
			rep.Jobs++
		}
	}
	rep.FinishedAt = now
	sort.Strings(rep.RecordIDs)
	rep.Digest = storekit.PurgeReportDigest(*rep)
	delete(s.purges, scope)
	out := *rep
	out.RecordIDs = append([]string{}, rep.RecordIDs...)
	return out, nil
}

// purgeStep erases up to purgeBatch records of the Scope that are not
// erased yet, adding to rep; it reports true when none was left.
func (s *Store) purgeStep(scope memorykit.Scope, rep *memorykit.PurgeReport) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for e := range s.scopes[scope].all() {
		if e.rec.Status != memorykit.StatusErased {
			ids = append(ids, e.rec.ID)
		}
	}
	if len(ids) == 0 {
		return true
	}
	sort.Strings(ids)
	if len(ids) > purgeBatch {
		ids = ids[:purgeBatch]
	}
	now := s.now()
	for _, id := range ids {
		e := s.records[id]
		n := s.eraseLocked(e, storekit.LifecycleRule{}, rep.Actor, rep.Reason, now)
		rep.Records++
		rep.RecordIDs = append(rep.RecordIDs, id)
		rep.Revisions += n.revisions
		rep.Embeddings += n.embeddings
		rep.QueueEntries += n.queue
		rep.Jobs += n.jobs
	}
	return false
}

// rekeyLocked moves e in s.scopes from its canonical key to key (the
// tombstone digest), so no in-memory index keeps an erased record's key
// while the KeyOwner rule still finds the tombstone through the digest.
// The caller holds s.mu for writing.
func (s *Store) rekeyLocked(e *entry, key string) {
	recs := s.scopes[e.rec.Scope]
	recs.remove(e, e.rec.Key)
	e.rec.Key = key
	recs.add(e)
}
