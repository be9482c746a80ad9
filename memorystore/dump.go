package memorystore

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Dump renders every piece of the store's state as text: records with
// their search terms, revisions, embeddings with their vectors, embedding
// lease/retry/park state, jobs with their payloads, the erase marks of
// leased jobs and unfinished purges. Lines are sorted,
// so two dumps of the same state are equal byte for byte.
//
// Dump exists for tests (the erase canary test and "nothing changed"
// checks). Its output holds content; never log it.
func (s *Store) Dump() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var b strings.Builder
	for _, id := range sortedKeys(s.records) {
		e := s.records[id]
		r := e.rec
		fmt.Fprintf(&b, "record %q scope=%q kind=%q key=%q status=%q version=%d hash=%q content=%q metadata=%s sources=%s from=%s until=%s created_by=%s touched_by=%s created=%s updated=%s\n",
			r.ID, r.Scope.String(), r.Kind, r.Key, r.Status, r.Version, r.ContentHash, r.Content,
			dumpMap(r.Metadata), dumpSources(r.Sources), ts(r.EffectiveFrom), ts(r.EffectiveUntil),
			dumpActor(r.CreatedBy), dumpActor(r.TouchedBy), ts(r.CreatedAt), ts(r.UpdatedAt))
		// A scrubbed record has no hash and no terms.
		var terms []string
		if r.ContentHash != "" {
			terms = storekit.IndexTerms(r.Key, r.Content)
		}
		fmt.Fprintf(&b, "  terms %q\n", terms)
		for _, v := range e.history() {
			fmt.Fprintf(&b, "  revision version=%d action=%q actor=%s reason=%q status=%q hash=%q content=%q metadata=%s sources=%s at=%s\n",
				v.Version, v.Action, dumpActor(v.Actor), v.Reason, v.Status, v.ContentHash, v.Content,
				dumpMap(v.Metadata), dumpSources(v.Sources), ts(v.At))
		}
	}
	var lines []string
	for id, e := range s.records {
		for i := range e.embeddings {
			emb := &e.embeddings[i]
			lines = append(lines, fmt.Sprintf("embedding record=%q profile=%q hash=%q at=%s vector=%v\n",
				id, emb.profile, emb.hash, ts(emb.stored()), s.vectorOf(e, emb)))
		}
	}
	for k, st := range s.embStates {
		lines = append(lines, fmt.Sprintf("embedding_state record=%q profile=%q hash=%q attempt=%d leased_by=%q lease_expiry=%s retry_at=%s parked=%t reason=%q\n",
			k.recordID, k.profile, st.hash, st.attempt, st.leasedBy, ts(st.leaseExpiry), ts(st.retryAt), st.parked, st.reason))
	}
	var active []string
	for id, e := range s.records {
		if r := &e.rec; r.Status == memorykit.StatusActive {
			active = append(active, fmt.Sprintf("active scope=%q kind=%q key=%q record=%q\n", r.Scope.String(), r.Kind, r.Key, id))
		}
	}
	sort.Strings(lines)
	sort.Strings(active)
	for _, l := range lines {
		b.WriteString(l)
	}
	for _, l := range active {
		b.WriteString(l)
	}
	for _, id := range sortedKeys(s.jobs) {
		j := s.jobs[id]
		fmt.Fprintf(&b, "job %q scope=%q run_ref=%q state=%q lease_token=%d attempt=%d failures=%d/%d reaps=%d hand_backs=%d/%d available=%s leased_by=%q lease_expiry=%s last_error=%q candidates=%d created=%s updated=%s payload=%q\n",
			j.ID, j.Scope.String(), j.RunRef, j.State, j.LeaseToken, j.Attempt, j.Failures, j.MaxAttempts, j.Reaps, j.HandBacks, j.MaxReaps, ts(j.AvailableAt), j.LeasedBy,
			ts(j.LeaseExpiresAt), j.LastError, j.Candidates, ts(j.CreatedAt), ts(j.UpdatedAt), j.Payload)
	}
	for _, id := range sortedKeys(s.jobErased) {
		fmt.Fprintf(&b, "job_erased %q keys=%q\n", id, s.jobErased[id])
	}
	purging := make([]string, 0, len(s.purges))
	for scope, r := range s.purges {
		purging = append(purging, fmt.Sprintf("purge scope=%q actor=%s reason=%q records=%q started=%s\n",
			scope.String(), dumpActor(r.Actor), r.Reason, r.RecordIDs, ts(r.StartedAt)))
	}
	sort.Strings(purging)
	for _, l := range purging {
		b.WriteString(l)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339Nano)
}

func dumpActor(a memorykit.Actor) string { return string(a.Kind) + ":" + a.ID }

func dumpMap(m map[string]string) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q=%q", k, m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func dumpSources(src []memorykit.Source) string {
	parts := make([]string, len(src))
	for i, x := range src {
		parts[i] = fmt.Sprintf("%q:%q", x.Kind, x.Ref)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
