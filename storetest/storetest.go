// Package storetest holds the conformance suites every storekit.Store
// implementation must pass, and small test doubles other packages' tests
// reuse. It is a test-support package: nothing in it belongs in a
// production composition.
//
// A store package runs everything with
//
//	func TestConformance(t *testing.T) {
//		storetest.RunAll(t, storetest.Harness{New: newStore, Dump: dumpStore})
//	}
//
// Every case builds its own store with h.New (h.NewSession, when set, for
// the few cases that need sessions of their own) and its own mock clock
// set to a fixed 2026 date, and calls t.Parallel: cases share nothing.
//
// # Decisions where the contract is silent
//
// The suites check the doc comments of storekit.Store and the types it
// uses. Where those are silent, the suites pin down the behaviour below, so
// that memorystore and pgstore agree:
//
//   - Input is validated before any lookup. A malformed Scope is
//     ErrInvalidScope; any other malformed field (IDs included, also on
//     reads) is ErrInvalidInput, even when the record or job does not
//     exist. A done context fails the call with an error matching
//     context.Canceled (or DeadlineExceeded) and changes nothing.
//   - Create: with in.ID taken, ErrAlreadyExists is reported before the
//     Expect condition is checked. A zero EffectiveFrom becomes the clock's
//     now, and EffectiveUntil must be after the effective start even when
//     that start was defaulted (otherwise ErrInvalidInput). Caller-given
//     times are stored in UTC, truncated to microseconds.
//   - The "supersede" revision of a replaced record carries the actor and
//     reason of the create or activation that replaced it, and that actor
//     becomes the record's TouchedBy.
//   - Every revision's snapshot (content, hash, metadata, sources) is the
//     record after the action, for every action, until Erase scrubs it.
//   - Empty metadata and sources may come back as nil or as empty values;
//     the suites treat both alike.
//   - FindActive and ListFilter.Key canonicalise the key they are given
//     with NormalizeKey (an invalid key is ErrInvalidInput). Recall's
//     ExactKeys are compared byte for byte, as given.
//   - Transitions report ErrNotFound, ErrVersionConflict and
//     ErrInvalidTransition; the suites never combine two of these causes in
//     one call, so their order is left open.
//   - Leases (jobs and embeddings) expire once the clock reaches their
//     expiry; the suites only probe clearly before and clearly after.
//   - LeaseEmbeddings hands out records in ascending record ID order across
//     every Scope. Attempt counts leases at the record's current content
//     hash only: a Correct starts the count again at 1.
//   - PutEmbedding needs no unexpired lease (vectors are deterministic),
//     but its LeaseToken must not be older than the record's latest lease
//     at p.ContentHash (ErrLeaseLost). It is ErrNotFound for a record
//     outside p.Scope and ErrStale when the record is not active at
//     p.ContentHash. ReleaseEmbedding is ErrStale in the same case and
//     ErrLeaseLost when the worker holds no lease under its LeaseToken.
//     PutEmbedding rejects an empty or non-finite vector and a malformed
//     content hash with ErrInvalidInput.
//   - LeaseEmbeddings and LeaseJobs need a valid worker ID, a positive TTL
//     and 1 <= Max <= Limits.MaxListSize; CompleteJob takes at most
//     MaxListSize candidates, each a StatusCandidate record in the job's
//     Scope (otherwise ErrInvalidInput and nothing is stored).
//   - CompleteJob, FailJob and ReleaseJob all require the worker to hold an
//     unexpired lease under the LeaseToken the call carries (ErrLeaseLost
//     otherwise, even for the same worker ID once the job was leased
//     again); every lease gets a greater token. A zero FailJob.RetryAt
//     means now. Queued, done and failed jobs hold no lease: LeasedBy is
//     empty and LeaseExpiresAt zero.
//   - Recall breaks ties inside every channel (equal matched terms and
//     weight, equal cosine similarity, or any two exact hits) newer
//     UpdatedAt first, then smaller ID. A batch stamps its items at
//     storekit.BatchItemTime, so items of one batch are never tied on
//     time and rank in their batch order (later first), run after run.
//   - Recall rejects a non-positive channel limit, and a non-nil query
//     vector that is empty, non-finite or has an invalid profile, with
//     ErrInvalidInput.
//   - Erase and purge keep a revision's reason only when it is a reason
//     code (storekit.ScrubReason), in every revision of the record. Purge
//     leaves records that were already erased as they are, and gives every
//     other record exactly one "purge" revision carrying the purge's actor
//     and reason code. A purge report's QueueEntries count is
//     store-specific (what the store keeps of embedding leases and queues);
//     the suites only require it to be positive when leases existed.
package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Harness is what a Store implementation hands to the conformance suites.
type Harness struct {
	// New returns a fresh store, empty unless Populated, that reads time
	// from clk, validates writes with guard and digests erased keys with
	// NewTombstones(t). It registers its own cleanup with t.Cleanup.
	New func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) storekit.Store
	// NewSession, when set, is used instead of New by the cases that need
	// a store with database sessions of its own: they call it from several
	// goroutines at once, cut calls off mid-statement with a cancelled
	// context, or purge (which may run maintenance outside any
	// transaction). A store whose New serves a case on one session (one
	// transaction, rolled back when the case ends) sets it; nil means New
	// serves every case.
	NewSession func(t *testing.T, clk clock.Clock, guard *memorykit.WriteGuard) storekit.Store
	// Dump renders everything the store holds as text (every table / map).
	Dump func(t *testing.T, s storekit.Store) string
	// Populated says that the stores New and NewSession return already
	// hold data of tenants the suites never use, as a store shared by
	// many tenants does: records with vectors of every profile in
	// Profiles (so none of them is pending for a profile the suites
	// use), revisions, embedding queue rows and leases of a profile the
	// suites never use, and jobs that are not leasable. Every case runs
	// then as on an empty store, except that job counts are taken
	// relative to the counts the store held when the case began, and
	// the case of DeleteAllEmbeddings, whose effect on every tenant's
	// vectors it cannot tell from its own, skips.
	Populated bool
	// Leave names cases (by subtest name, such as
	// "PurgeResumesAfterKill") that this run skips, each with the reason
	// it reports: for a harness that runs the suites once more under
	// another condition and bounds that run's cost, while another run of
	// its covers them. Nil runs every case.
	Leave map[string]string
}

// Profiles returns every embedding profile the suites use. A harness
// that sets Populated gives its other tenants' active records a current
// vector of each, so they are never pending work the suites would see.
func Profiles() []string {
	return []string{"p", "test/bad-v1", "test/canary-v1", "test/canary-v2", "test/emb-v1", "test/emb-v2",
		"test/erase-v1", "test/iso-v1", "test/iso-v2", "test/purge-v1", "test/purge-v2", "test/recall-v1",
		"test/v1", "test/vec-v1", "test/vec-v2"}
}

// RunAll runs every conformance suite as a subtest.
func RunAll(t *testing.T, h Harness) {
	t.Helper()
	checkHarness(t, h)
	t.Run("Lifecycle", func(t *testing.T) { RunLifecycleConformance(t, h) })
	t.Run("Recall", func(t *testing.T) { RunRecallConformance(t, h) })
	t.Run("FullText", func(t *testing.T) { RunFullTextRecallConformance(t, h) })
	t.Run("Embedding", func(t *testing.T) { RunEmbeddingConformance(t, h) })
	t.Run("Job", func(t *testing.T) { RunJobConformance(t, h) })
	t.Run("Isolation", func(t *testing.T) { RunIsolationConformance(t, h) })
	t.Run("BadInput", func(t *testing.T) { RunBadInputConformance(t, h) })
	t.Run("Batch", func(t *testing.T) { RunBatchConformance(t, h) })
	t.Run("Erasure", func(t *testing.T) { RunErasureConformance(t, h) })
}

func checkHarness(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Dump == nil {
		t.Fatal("storetest: Harness.New and Harness.Dump are both required")
	}
}

// Epoch is the instant every case's mock clock starts at. It has a
// sub-microsecond part on purpose, so the suites see stores truncate.
var Epoch = time.Date(2026, time.March, 2, 9, 30, 0, 123456789, time.UTC)

// Limits returns valid memorykit.Limits for tests: the one Limits fixture
// of memorykit's tests, roomy enough for its worker and runtime tests.
func Limits() memorykit.Limits {
	return memorykit.Limits{
		Version: 1, MaxKeyBytes: 128, MaxContentBytes: 4096, MaxMetadataEntries: 8,
		MaxMetadataBytes: 1024, MaxSources: 8, MaxSourceBytes: 512, MaxListSize: 100,
		MaxJobPayloadBytes: 16384, MaxReasonBytes: 1024,
	}
}

// AllowAllValidator is a TEST DOUBLE ContentValidator that accepts every
// write. memorykit ships no allow-all validator in production code; use
// this only in tests that are not about content policy.
type AllowAllValidator struct{}

// ValidateContent accepts c.
func (AllowAllValidator) ValidateContent(context.Context, memorykit.ContentCheck) error { return nil }

// RejectMarker is the text MarkerValidator refuses in NewGuard.
const RejectMarker = "REJECT-THIS-MEMORY"

// errMarker is what MarkerValidator returns; stores must not print it.
var errMarker = errors.New("storetest: content carries the reject marker")

// MarkerValidator is a TEST DOUBLE ContentValidator that rejects any write
// whose key, content, reason, metadata (keys or values) or source (kinds or
// refs) contains Marker, ignoring case (keys reach validators canonicalised, that
// is lower-cased), and accepts everything else.
type MarkerValidator struct {
	Marker string
}

// ValidateContent rejects c when any of its text contains v.Marker.
func (v MarkerValidator) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if v.Marker == "" {
		return errors.New("storetest: MarkerValidator has no marker")
	}
	texts := []string{c.Key, c.Content, c.Reason}
	for k, val := range c.Metadata {
		texts = append(texts, k, val)
	}
	for _, s := range c.Sources {
		texts = append(texts, s.Kind, s.Ref)
	}
	marker := strings.ToLower(v.Marker)
	for _, s := range texts {
		if strings.Contains(strings.ToLower(s), marker) {
			return errMarker
		}
	}
	return nil
}

// NewGuard returns a WriteGuard with Limits() and a MarkerValidator for
// RejectMarker.
func NewGuard(t testing.TB) *memorykit.WriteGuard {
	t.Helper()
	g, err := memorykit.NewWriteGuard(Limits(), MarkerValidator{Marker: RejectMarker})
	if err != nil {
		t.Fatalf("storetest: NewWriteGuard: %v", err)
	}
	return g
}

// TestTombstoneSecret is the tombstone key secret NewTombstones uses. It is
// for tests only.
const TestTombstoneSecret = "storetest tombstone secret: never use in production"

// NewTombstones returns the tombstone keyer the conformance suites expect
// a store under test to be built with (TestTombstoneSecret).
func NewTombstones(t testing.TB) *memorykit.TombstoneKeyer {
	t.Helper()
	k, err := memorykit.NewTombstoneKeyer([]byte(TestTombstoneSecret))
	if err != nil {
		t.Fatalf("storetest: NewTombstoneKeyer: %v", err)
	}
	return k
}

// Scope returns the project Scope for tenant and project, failing the test
// when they are malformed.
func Scope(t testing.TB, tenant, project string) memorykit.Scope {
	t.Helper()
	s, err := memorykit.ProjectScope(tenant, project)
	if err != nil {
		t.Fatalf("storetest: ProjectScope(%q, %q): %v", tenant, project, err)
	}
	return s
}

// NewClock returns a mock clock set to Epoch.
func NewClock() *clock.Mock {
	c := clock.NewMock()
	c.Set(Epoch)
	return c
}
