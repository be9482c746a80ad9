package memorykit

import "github.com/goagents/memorykit/internal/plumbing/textrule"

// SubjectType is the kind of subject a Scope belongs to.
type SubjectType string

const (
	// SubjectProject is the only subject type V1 compositions build.
	SubjectProject SubjectType = "project"
	// SubjectUser is a future-shaped storage value. Every V1 entry point
	// rejects it with ErrInvalidScope.
	SubjectUser SubjectType = "user"
)

// Scope is the unit of memory isolation: {TenantID, SubjectType, SubjectID}.
// Hosts build it only from an authenticated tenant and a trusted project
// route, with ProjectScope; nothing a model or request body sends may set or
// widen it.
type Scope struct {
	TenantID    string
	SubjectType SubjectType
	SubjectID   string
}

// ProjectScope builds and validates the project Scope for a tenant.
func ProjectScope(tenantID, projectID string) (Scope, error) {
	s := Scope{TenantID: tenantID, SubjectType: SubjectProject, SubjectID: projectID}
	if err := s.Validate(); err != nil {
		return Scope{}, err
	}
	return s, nil
}

// Validate checks that the Scope is a well-formed V1 project Scope. A user
// Scope, an unknown subject type or a malformed identifier is ErrInvalidScope.
func (s Scope) Validate() error {
	const op = "scope.validate"
	if r := textrule.IDProblem(s.TenantID); r != "" {
		return &Error{Op: op, Kind: ErrInvalidScope, Field: "tenant_id", Reason: r}
	}
	switch s.SubjectType {
	case SubjectProject:
	case SubjectUser:
		return &Error{Op: op, Kind: ErrInvalidScope, Field: "subject_type", Reason: "user_scope_not_supported"}
	default:
		return &Error{Op: op, Kind: ErrInvalidScope, Field: "subject_type", Reason: "unknown"}
	}
	if r := textrule.IDProblem(s.SubjectID); r != "" {
		return &Error{Op: op, Kind: ErrInvalidScope, Field: "subject_id", Reason: r}
	}
	return nil
}

// String renders the Scope's identifiers (never content) for diagnostics.
func (s Scope) String() string {
	return s.TenantID + "/" + string(s.SubjectType) + "/" + s.SubjectID
}
