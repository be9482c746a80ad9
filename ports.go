package memorykit

import (
	"context"
)

// Embedder turns texts into vectors for one embedding profile. It must be
// deterministic for its profile: the same input gives the same vector.
// Provider failures worth retrying (rate limits, timeouts, 5xx) must be
// returned as recoverable (see Recoverable); recall then drops only the
// vector channel and workers back off.
type Embedder interface {
	// Profile names the model and its version, such as "memorykit/hash-v1".
	Profile() string
	// Dimension is the length of every vector Embed returns.
	Dimension() int
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Permission is what a principal asks to do; the Authorizer decides.
type Permission string

const (
	// PermRead allows recall, search and read of recallable memory.
	PermRead Permission = "read"
	// PermWrite allows trusted explicit and projection writes.
	PermWrite Permission = "write"
	// PermModelWrite allows a model's remember_project_memory write.
	PermModelWrite Permission = "model_write"
	// PermReview allows listing candidates, activate, reject, correct,
	// forget and reading audit history.
	PermReview Permission = "review"
	// PermErase allows erasing records.
	PermErase Permission = "erase"
	// PermExtract allows enqueuing extraction jobs.
	PermExtract Permission = "extract"
)

// Valid reports whether p is a known Permission.
func (p Permission) Valid() bool {
	switch p {
	case PermRead, PermWrite, PermModelWrite, PermReview, PermErase, PermExtract:
		return true
	}
	return false
}

// Principal is the authenticated party a request acts for. The Host builds
// it from authenticated identity; nothing a model or body sends sets it.
type Principal struct {
	TenantID string
	Actor    Actor
}

// Validate checks the principal's tenant and actor.
func (p Principal) Validate() error {
	if err := validateID("principal.validate", "tenant_id", p.TenantID); err != nil {
		return err
	}
	return p.Actor.Validate()
}

// Authorizer is the Host's fail-closed project authorizer. It returns nil
// only when the principal may perform perm on scope; any error denies.
type Authorizer interface {
	Authorize(ctx context.Context, p Principal, perm Permission, scope Scope) error
}

// Authorize is the one gate every memorykit entry point passes through. It
// fails closed: a nil Authorizer, an invalid Scope or principal, a tenant
// mismatch between principal and Scope, or any Authorizer error is a denial.
// Authorizer errors are reported as ErrForbidden and never printed.
func Authorize(ctx context.Context, az Authorizer, p Principal, perm Permission, scope Scope) error {
	const op = "authorize"
	if az == nil {
		return &Error{Op: op, Kind: ErrForbidden, Reason: "no_authorizer"}
	}
	if err := scope.Validate(); err != nil {
		return err
	}
	if !perm.Valid() {
		return &Error{Op: op, Kind: ErrForbidden, Reason: "unknown_permission"}
	}
	if err := p.Validate(); err != nil {
		return &Error{Op: op, Kind: ErrForbidden, Reason: "invalid_principal", Err: err}
	}
	if p.TenantID != scope.TenantID {
		return &Error{Op: op, Kind: ErrForbidden, Reason: "tenant_mismatch"}
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: op, Kind: ErrForbidden, Reason: "context_done", Err: err}
	}
	if err := az.Authorize(ctx, p, perm, scope); err != nil {
		return &Error{Op: op, Kind: ErrForbidden, Reason: "denied", Err: err}
	}
	return nil
}

// ExtractionInput is what an Extractor sees for one job.
type ExtractionInput struct {
	JobID string
	Scope Scope
	// RunRef is the run reference the turn was enqueued with (empty for a
	// job enqueued without one).
	RunRef  string
	Payload string
	Attempt int
	// Related are active, currently effective memories of the job's Scope
	// that recall found for the transcript, best first, so an Extractor
	// can propose an update of an existing key rather than a near-copy
	// under a new one. The runtime fills it; it is empty when the lookup
	// found nothing or failed. Like the Payload it is untrusted text.
	Related []RelatedMemory
}

// RelatedMemory is one active memory shown to an Extractor: its kind, its
// canonical key and its content, nothing else.
type RelatedMemory struct {
	Kind    Kind
	Key     string
	Content string
}

// Proposal is one candidate memory an Extractor proposes. It is validated
// like any write and stored only as a candidate.
type Proposal struct {
	Kind     Kind
	Key      string
	Content  string
	Metadata map[string]string
	Sources  []Source
}

// Extractor is the Host's model-backed extraction: it reads a finished turn
// and proposes candidate memories. Recoverable errors are retried with
// backoff up to the job's attempt limit.
type Extractor interface {
	Extract(ctx context.Context, in ExtractionInput) ([]Proposal, error)
}

// EventSink receives content-free events. Emit must not block for long; it
// is called on request and worker paths.
type EventSink interface {
	Emit(e Event)
}
