// Package testkit is the one kit for memorykit's own tests: test doubles
// (an authorizer that grants explicit permissions, a recording EventSink, a
// content validator, fault-injecting recall stores and embedders), the
// backend matrix (Each runs a test on memorystore and on pgstore), a clock
// Driver for actors, fixtures that plant records recall must never return,
// and a canary check for content leaks. It is internal: nothing here ships
// to Hosts.
//
// Its fixture values are storetest's: a mock clock starts at
// storetest.Epoch and NewGuard enforces storetest.Limits, so memorykit's
// tests and the public conformance suites share one Epoch and one Limits.
// The PostgreSQL plumbing is the sub-package pgtest, apart because
// pgstore's in-package tests use it and this package imports pgstore.
package testkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/storetest"
)

// NewClock returns a mock clock set to storetest.Epoch.
func NewClock() *clock.Mock {
	return storetest.NewClock()
}

// Policy returns a valid recall policy for the local hash-v1 embedder.
func Policy() memorykit.RecallPolicy {
	return memorykit.RecallPolicy{
		Version: 1, ExactLimit: 5, FullTextLimit: 20, VectorLimit: 20, RRFK: 60,
		ExactWeight: 1, FullTextWeight: 1, VectorWeight: 1, MaxItems: 8, MaxTokens: 1200,
		MaxEntryRunes: 600, MaxQueryRunes: 2000, MaxQueryTerms: 64, Deadline: 2 * time.Second,
		EmbeddingProfile: "memorykit/hash-v1", EmbeddingDimension: 384,
	}
}

// Validator rejects content or a reason containing Marker; an empty Marker accepts all.
// It is a test double, not a content policy.
type Validator struct{ Marker string }

// ValidateContent implements memorykit.ContentValidator.
func (v Validator) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if v.Marker != "" && (strings.Contains(c.Content, v.Marker) || strings.Contains(c.Reason, v.Marker)) {
		return errors.New("content rejected by test validator")
	}
	return nil
}

// RejectMarker is the marker NewGuard's validator rejects.
const RejectMarker = "REJECT-ME"

// NewGuard returns a WriteGuard with storetest.Limits() and a validator
// rejecting RejectMarker.
func NewGuard(t testing.TB) *memorykit.WriteGuard {
	t.Helper()
	g, err := memorykit.NewWriteGuard(storetest.Limits(), Validator{Marker: RejectMarker})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// NewTombstones returns a tombstone keyer with a fixed test secret.
func NewTombstones(t testing.TB) *memorykit.TombstoneKeyer {
	t.Helper()
	k, err := memorykit.NewTombstoneKeyer([]byte("testkit tombstone secret, tests only!"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// MemStore returns an empty memorystore on clk.
func MemStore(t testing.TB, clk clock.Clock) *memorystore.Store {
	t.Helper()
	s, err := memorystore.New(memorystore.Config{Clock: clk, Guard: NewGuard(t), Tombstones: NewTombstones(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Scope returns a valid project scope or fails the test.
func Scope(t testing.TB, tenant, project string) memorykit.Scope {
	t.Helper()
	s, err := memorykit.ProjectScope(tenant, project)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Principal returns a principal of tenant acting as kind:id.
func Principal(tenant string, kind memorykit.ActorKind, id string) memorykit.Principal {
	return memorykit.Principal{TenantID: tenant, Actor: memorykit.Actor{Kind: kind, ID: id}}
}

// Authorizer grants exactly the listed permissions per actor ID and scope.
// Anything not granted is denied. It is a test double.
type Authorizer struct {
	mu     sync.Mutex
	grants map[string]bool
	calls  int
}

// NewAuthorizer returns an Authorizer with no grants.
func NewAuthorizer() *Authorizer { return &Authorizer{grants: make(map[string]bool)} }

// Grant allows actorID the permissions on scope.
func (a *Authorizer) Grant(actorID string, scope memorykit.Scope, perms ...memorykit.Permission) *Authorizer {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range perms {
		a.grants[grantKey(actorID, scope, p)] = true
	}
	return a
}

// Revoke removes every grant.
func (a *Authorizer) Revoke() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.grants = make(map[string]bool)
}

// Calls reports how many times Authorize ran.
func (a *Authorizer) Calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// Authorize implements memorykit.Authorizer.
func (a *Authorizer) Authorize(_ context.Context, p memorykit.Principal, perm memorykit.Permission, scope memorykit.Scope) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.grants[grantKey(p.Actor.ID, scope, perm)] {
		return nil
	}
	return errors.New("not granted")
}

func grantKey(actor string, s memorykit.Scope, p memorykit.Permission) string {
	return fmt.Sprintf("%s|%s|%s|%s|%s", actor, s.TenantID, s.SubjectType, s.SubjectID, p)
}
