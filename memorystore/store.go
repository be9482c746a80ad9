// Package memorystore keeps every memorykit store in process memory.
//
// It is the embedded default for a single-process Host and the fast double
// that tests compose. It follows exactly the contract written on
// storekit.Store and checked by the storetest conformance suites; nothing
// survives a restart.
//
// A Store is safe for concurrent use. One read/write mutex serialises
// writes, so every multi-step change (an activation that supersedes, a job
// completion that stores candidates) is atomic. Values are deep-copied on
// the way in and out, so callers never share memory with the store.
package memorystore

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Config is what New needs. Every field is required: there is no default
// clock, no permissive guard and no default tombstone secret.
type Config struct {
	// Clock is the only source of "now" for timestamps, leases and retry
	// times.
	Clock clock.Clock
	// Guard validates every write (Limits and the Host's ContentValidator).
	Guard *memorykit.WriteGuard
	// Tombstones digests the key of every erased record (see
	// memorykit.TombstoneKeyer).
	Tombstones *memorykit.TombstoneKeyer
	// MaxRecords bounds how many records the store holds, whatever their
	// status (forgotten and erased records keep their place until they are
	// purged). A create or batch past it fails with ErrUnavailable, reason
	// ReasonStoreFull, and changes nothing. Zero means DefaultMaxRecords;
	// negative is invalid.
	MaxRecords int
}

// DefaultMaxRecords is the bound Config.MaxRecords zero stands for.
const DefaultMaxRecords = 1_000_000

// ReasonStoreFull is the reason code of a write refused because the store
// holds Config.MaxRecords records. It is not recoverable by retrying alone:
// records must be purged first.
const ReasonStoreFull = "store_full"

// Store implements storekit.Store in memory.
type Store struct {
	// maxRecords is the effective Config.MaxRecords.
	maxRecords int
	clk        clock.Clock
	guard      *memorykit.WriteGuard
	keyer      *memorykit.TombstoneKeyer

	// mu guards everything below. Writers hold it exclusively for the whole
	// state change; the Host's ContentValidator runs before it is taken.
	mu      sync.RWMutex
	records map[string]*entry
	// scopes holds every record of each Scope by key, any kind and status,
	// for List, purges and the KeyOwner rule (keyGovernedLocked).
	scopes    map[memorykit.Scope]*scopeRecords
	embStates map[embKey]*embState
	jobs      map[string]*storekit.Job
	// pendingIdx holds, per profile asked about, the records that may
	// need a vector of it (see pending.go).
	pendingIdx map[string]map[string]*entry
	// indexes holds each Scope's recall index (see scopeIndex).
	indexes map[memorykit.Scope]*scopeIndex
	// jobErased holds, per leased job that erase or purge scrubbed, the
	// key digests whose proposals are dropped when its worker hands it
	// back (see erasure.go).
	jobErased map[string][]string
	// purges holds the progress of every unfinished purge by Scope.
	purges map[memorykit.Scope]*memorykit.PurgeReport
	// leaseSeq is the last fencing token issued to any job or embedding
	// lease; tokens grow across the store, hence per job and record.
	leaseSeq int64
	// embTokens holds the token of each record's latest embedding lease
	// and the content hash it was issued for. It outlives puts (as
	// pgstore's lease rows do), so a stale put is refused after a newer
	// holder stored its vector.
	embTokens map[embKey]embToken
	// journal, when set (NewJournaled), collects what each write changed
	// for TakeChanges; nil in a plain Store.
	journal *journal
}

// embToken is the fencing token of a record's latest embedding lease for
// one profile, at one content hash.
type embToken struct {
	hash  string
	token int64
}

var (
	_ storekit.Store  = (*Store)(nil)
	_ storekit.Purger = (*Store)(nil)
)

// entry is one record with its audit trail.
type entry struct {
	rec memorykit.Record
	// trail is the audit trail: nil for a record untouched since a create
	// without a reason (see trail).
	trail *trail
	// embeddings holds the record's vector per profile.
	embeddings embeddingSet
	// ix is the record's place in its scope's recall index while it is
	// active; nil otherwise.
	ix *indexState
}

// trail is a record's audit trail. Until the record first changes after
// its create, revisions is nil and the trail is the one create revision,
// which the record as it still is and createReason describe completely:
// most records are never touched, and a stored Revision costs ~190 bytes
// besides the strings it shares with the record. An entry whose create had
// no reason needs no trail at all until then. Read it with history, change
// it after ownHistory.
type trail struct {
	revisions    []storekit.Revision
	createReason string
}

// history returns e's revisions, oldest first. The caller must not change
// them (see ownHistory); a lazy create revision shares the record's
// metadata and sources, so clone before handing it out.
func (e *entry) history() []storekit.Revision {
	if e.trail == nil || e.trail.revisions == nil {
		return []storekit.Revision{e.createRevision()}
	}
	return e.trail.revisions
}

// ownHistory stores e's create revision if it was derived, and returns
// the trail, which the caller may then change. Every change to the record
// or its trail calls it first.
func (e *entry) ownHistory() *trail {
	if e.trail == nil {
		e.trail = &trail{}
	}
	if e.trail.revisions == nil {
		e.trail.revisions = []storekit.Revision{e.createRevision().Clone()}
		e.trail.createReason = ""
	}
	return e.trail
}

// createReasonOf is the reason of e's create while its trail is derived.
func (e *entry) createReasonOf() string {
	if e.trail == nil {
		return ""
	}
	return e.trail.createReason
}

// createRevision is the create revision of a record untouched since its
// create: the revision entry.record would have stored then.
func (e *entry) createRevision() storekit.Revision {
	r := &e.rec
	return storekit.Revision{
		RecordID:    r.ID,
		Version:     r.Version,
		Action:      memorykit.ActionCreate,
		Actor:       r.CreatedBy,
		Reason:      e.createReasonOf(),
		Status:      r.Status,
		ContentHash: r.ContentHash,
		Content:     r.Content,
		Metadata:    r.Metadata,
		Sources:     r.Sources,
		At:          r.CreatedAt,
	}
}

// activeKey identifies the one active record a Scope may hold per kind and
// canonical key. The active records of a Scope are exactly the records in
// its recall index, so the index finds it (see activeEntry).
type activeKey struct {
	scope memorykit.Scope
	kind  memorykit.Kind
	key   string
}

// embKey identifies a record's embedding state for one profile.
type embKey struct {
	recordID string
	profile  string
}

// embedding is a stored vector of one profile, current only while hash
// equals the record's content hash. While the record is in its Scope's
// recall index the vector lives in a slab row, with its norm, and vector
// is nil (read it with Store.vectorOf). at is when it was stored, in UTC
// microseconds since the Unix epoch (see stored): the stores' timestamps
// have that precision, and an int64 is a third of a time.Time.
type embedding struct {
	profile string
	hash    string
	vector  []float32
	at      int64
}

// stored is when the embedding was stored.
func (m *embedding) stored() time.Time { return time.UnixMicro(m.at).UTC() }

// embeddingSet is a record's embeddings, at most one per profile: a slice,
// as a record rarely has more than one, is smaller than a map.
type embeddingSet []embedding

// get returns the embedding of profile, or nil. The pointer is valid until
// the set changes.
func (m embeddingSet) get(profile string) *embedding {
	for i := range m {
		if m[i].profile == profile {
			return &m[i]
		}
	}
	return nil
}

// put returns the set with emb as its embedding of emb.profile.
func (m embeddingSet) put(emb embedding) embeddingSet {
	if old := m.get(emb.profile); old != nil {
		*old = emb
		return m
	}
	return append(m, emb)
}

// del returns the set without an embedding of profile, and whether it had
// one.
func (m embeddingSet) del(profile string) (embeddingSet, bool) {
	for i := range m {
		if m[i].profile == profile {
			return append(m[:i], m[i+1:]...), true
		}
	}
	return m, false
}

// embState is the lease, retry and park state of a record's embedding for
// one profile. It belongs to one content hash: once the record's content
// hash moves on, the state no longer applies and is treated as absent.
type embState struct {
	hash        string
	attempt     int
	leasedBy    string
	leaseExpiry time.Time
	retryAt     time.Time
	parked      bool
	reason      string
	// token is the fencing token of the latest lease.
	token int64
}

// New builds an empty Store. A nil Clock, Guard or Tombstones is
// ErrInvalidConfig.
func New(cfg Config) (*Store, error) {
	const op = "memorystore.new"
	if cfg.Clock == nil {
		return nil, memorykit.ConfigError(op, "clock", "missing")
	}
	if cfg.Guard == nil {
		return nil, memorykit.ConfigError(op, "guard", "missing")
	}
	if cfg.Tombstones == nil {
		return nil, memorykit.ConfigError(op, "tombstones", "missing")
	}
	if cfg.MaxRecords < 0 {
		return nil, memorykit.ConfigError(op, "max_records", "negative")
	}
	maxRecords := cfg.MaxRecords
	if maxRecords == 0 {
		maxRecords = DefaultMaxRecords
	}
	return &Store{
		maxRecords: maxRecords,
		clk:        cfg.Clock,
		guard:      cfg.Guard,
		keyer:      cfg.Tombstones,
		jobErased:  make(map[string][]string),
		purges:     make(map[memorykit.Scope]*memorykit.PurgeReport),
		records:    make(map[string]*entry),
		scopes:     make(map[memorykit.Scope]*scopeRecords),
		embStates:  make(map[embKey]*embState),
		embTokens:  make(map[embKey]embToken),
		jobs:       make(map[string]*storekit.Job),
		indexes:    make(map[memorykit.Scope]*scopeIndex),
	}, nil
}

// now reads the injected clock at the stores' shared precision.
func (s *Store) now() time.Time { return stamp(s.clk.Now()) }

// stamp converts a time to UTC microseconds; the zero time stays zero.
func stamp(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// live fails when ctx is done, before any state is read or written.
func live(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", err)
	}
	return nil
}

func notFound(op string) error {
	return memorykit.NewError(op, memorykit.ErrNotFound, "not_found")
}

// lookup returns the record with id in scope, or nil. A record in another
// Scope is indistinguishable from a missing one.
func (s *Store) lookup(scope memorykit.Scope, id string) *entry {
	e := s.records[id]
	if e == nil || e.rec.Scope != scope {
		return nil
	}
	return e
}

// noDimensionBound is the vector dimension bound memorystore passes to
// storekit.CheckVector: it keeps vectors of any length.
const noDimensionBound = 0

func cloneVector(v []float32) []float32 { return append([]float32(nil), v...) }
