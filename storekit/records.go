package storekit

import (
	"time"

	"github.com/goagents/memorykit"
)

// ReasonKeyGoverned is the reason code of the ErrVersionConflict a Create
// returns when its ActiveExpectation.KeyOwner condition fails.
const ReasonKeyGoverned = "key_governed"

// GovernsKeyAgainst reports whether rec, a record holding some canonical
// key in a Scope (under any kind), makes that key governed against actor:
// whether rec carries a decision by anyone but actor. This is the rule
// behind ActiveExpectation.KeyOwner, and so behind the model write: a
// model's write is active at once only while no record of its key governs
// it.
//
//   - A candidate never governs: it is a pending proposal, not a decision.
//   - actor's own history does not govern: a record actor created that no
//     one else touched since (version 1), or that actor's own later write
//     superseded (version 2, superseded, touched by actor).
//   - Anything else governs: an active record another actor wrote,
//     reviewed, activated or corrected; and a record that anyone else
//     superseded, rejected, forgot or erased. So a key a person forgot,
//     erased or rejected is not new to the model.
//
// Stores evaluate the same rule in their own terms (pgstore in SQL); the
// storetest lifecycle suite checks that they agree.
func GovernsKeyAgainst(rec memorykit.Record, actor memorykit.Actor) bool {
	if rec.Status == memorykit.StatusCandidate {
		return false
	}
	if rec.CreatedBy != actor || rec.TouchedBy != actor {
		return true
	}
	own := rec.Version == 1 || rec.Status == memorykit.StatusSuperseded && rec.Version == 2
	return !own
}

// Transition is the input for a lifecycle action on one record.
type Transition struct {
	Scope memorykit.Scope
	ID    string
	Actor memorykit.Actor
	// Reason is a short human note for the audit trail. It is stored, never
	// logged.
	Reason string
	// ExpectVersion, when non-zero, must equal the record's current version.
	ExpectVersion int64
}

// Correction is the input for replacing a record's content and sources.
type Correction struct {
	Transition
	Content string
	Sources []memorykit.Source
	// Metadata replaces the metadata when non-nil.
	Metadata map[string]string
}

// ListFilter selects records for List.
type ListFilter struct {
	Scope memorykit.Scope
	// Statuses to include; empty means every status.
	Statuses []memorykit.Status
	// Kind, when set, restricts to one kind.
	Kind memorykit.Kind
	// Key, when set, restricts to one canonical key. It also matches the
	// erased tombstones of that key, which keep only its keyed digest
	// (TombstoneKeyer.Digest), so a lookup by key still finds them.
	Key string
	// Limit must be 1..Limits.MaxListSize.
	Limit int
	// AfterID continues a listing after this record ID (order: ID ascending).
	AfterID string
}

// Revision is one entry of a record's audit trail. Content, Sources, Metadata
// and ContentHash are the snapshot after the action; Erase scrubs them from
// every revision of the record.
type Revision struct {
	RecordID    string
	Version     int64
	Action      memorykit.Action
	Actor       memorykit.Actor
	Reason      string
	Status      memorykit.Status
	ContentHash string
	Content     string
	Metadata    map[string]string
	Sources     []memorykit.Source
	At          time.Time
}

// Clone returns a deep copy.
func (v Revision) Clone() Revision {
	if v.Metadata != nil {
		m := make(map[string]string, len(v.Metadata))
		for k, val := range v.Metadata {
			m[k] = val
		}
		v.Metadata = m
	}
	if v.Sources != nil {
		v.Sources = append([]memorykit.Source(nil), v.Sources...)
	}
	return v
}
