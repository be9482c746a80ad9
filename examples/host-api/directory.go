package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"

	"github.com/goagents/memorykit"
)

// The Directory is this Host's identity and membership service. A real
// Host asks its own identity provider and permission system; the demo reads
// them from a JSON file. Either way the shape is the same: a bearer token
// maps to one member of one tenant, and a member holds explicit permissions
// on explicit projects. Nothing else grants anything.

// DirectoryFile is the JSON form of a Directory (see tokens.dev.json).
type DirectoryFile struct {
	Members []MemberEntry `json:"members"`
}

// MemberEntry is one member of one tenant.
type MemberEntry struct {
	// Tenant is the member's tenant.
	Tenant string `json:"tenant"`
	// Kind is "user", "tool" or "model".
	Kind string `json:"kind"`
	// ID is the member's identifier within the tenant.
	ID string `json:"id"`
	// Token authenticates a user or tool; models never have one: they act
	// only inside a chat turn started by an authenticated caller.
	Token string `json:"token,omitempty"`
	// Projects lists, per project, the permissions held: "read", "write",
	// "review", "erase", "extract" and, for users and tools, "model_write"
	// (their chat turns may let the model save memories); for models,
	// "read" and "model_write".
	Projects map[string][]string `json:"projects"`
}

//go:embed tokens.dev.json
var devDirectory []byte

// minTokenBytes is the shortest bearer token the Directory accepts.
const minTokenBytes = 16

// member is one authenticated party and its grants.
type member struct {
	principal memorykit.Principal
	projects  map[string]map[memorykit.Permission]bool
}

// can reports whether the member holds perm on project.
func (m *member) can(project string, perm memorykit.Permission) bool {
	return m.projects[project][perm]
}

type memberKey struct {
	tenant string
	actor  memorykit.Actor
}

// Directory authenticates bearer tokens and authorizes principals. It is
// the Host's fail-closed memorykit.Authorizer: a principal, project or
// permission it does not list is denied.
type Directory struct {
	byToken map[[sha256.Size]byte]*member
	members map[memberKey]*member
	models  map[string]string // tenant -> the model member's ID
}

var errDenied = errors.New("not granted")

// LoadDirectory reads a directory file. An empty path loads the built-in
// development directory (tokens.dev.json), which must never serve real
// users.
func LoadDirectory(path string) (*Directory, error) {
	raw := devDirectory
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, memorykit.ConfigError("directory.load", "tokens", "unreadable")
		}
		raw = b
	}
	var f DirectoryFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		// The decoder's message could quote a token: keep it out.
		return nil, memorykit.ConfigError("directory.load", "tokens", "malformed")
	}
	return NewDirectory(f)
}

// NewDirectory validates f and builds a Directory. Every problem is an
// ErrInvalidConfig error naming the field, never quoting a token.
func NewDirectory(f DirectoryFile) (*Directory, error) {
	const op = "directory.new"
	bad := func(field, reason string) error {
		return memorykit.ConfigError(op, field, reason)
	}
	d := &Directory{
		byToken: make(map[[sha256.Size]byte]*member),
		members: make(map[memberKey]*member),
		models:  make(map[string]string),
	}
	if len(f.Members) == 0 {
		return nil, bad("members", "empty")
	}
	for _, e := range f.Members {
		kind := memorykit.ActorKind(e.Kind)
		if kind != memorykit.ActorUser && kind != memorykit.ActorTool && kind != memorykit.ActorModel {
			return nil, bad("members.kind", "unsupported")
		}
		p := memorykit.Principal{TenantID: e.Tenant, Actor: memorykit.Actor{Kind: kind, ID: e.ID}}
		if err := p.Validate(); err != nil {
			return nil, bad("members.id", memorykit.ReasonCode(err))
		}
		key := memberKey{tenant: e.Tenant, actor: p.Actor}
		if d.members[key] != nil {
			return nil, bad("members.id", "duplicate")
		}
		m := &member{principal: p, projects: make(map[string]map[memorykit.Permission]bool)}
		for project, perms := range e.Projects {
			if _, err := memorykit.ProjectScope(e.Tenant, project); err != nil {
				return nil, bad("members.projects", memorykit.ReasonCode(err))
			}
			granted := make(map[memorykit.Permission]bool)
			for _, name := range perms {
				perm := memorykit.Permission(name)
				if !perm.Valid() {
					return nil, bad("members.projects.permission", "unknown")
				}
				if kind == memorykit.ActorModel && perm != memorykit.PermRead && perm != memorykit.PermModelWrite {
					return nil, bad("members.projects.permission", "not_for_models")
				}
				granted[perm] = true
			}
			m.projects[project] = granted
		}
		if kind == memorykit.ActorModel {
			if e.Token != "" {
				return nil, bad("members.token", "models_have_no_token")
			}
			if _, taken := d.models[e.Tenant]; taken {
				return nil, bad("members.kind", "one_model_per_tenant")
			}
			d.models[e.Tenant] = e.ID
		} else {
			if len(e.Token) < minTokenBytes {
				return nil, bad("members.token", "too_short")
			}
			sum := sha256.Sum256([]byte(e.Token))
			if d.byToken[sum] != nil {
				return nil, bad("members.token", "duplicate")
			}
			d.byToken[sum] = m
		}
		d.members[key] = m
	}
	return d, nil
}

// Authenticate returns the member whose token the request's
// "Authorization: Bearer" header carries. Tokens are compared by their
// SHA-256, so the lookup time says nothing about a token's prefix.
func (d *Directory) Authenticate(r *http.Request) (*member, bool) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return nil, false
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, false
	}
	m := d.byToken[sha256.Sum256([]byte(token))]
	return m, m != nil
}

// ModelFor returns the ID of the tenant's model member, if it has one.
func (d *Directory) ModelFor(tenant string) (string, bool) {
	id, ok := d.models[tenant]
	return id, ok
}

// Authorize implements memorykit.Authorizer: it allows exactly the
// permissions the Directory lists for the principal on the Scope's project,
// and nothing on any other subject type.
func (d *Directory) Authorize(_ context.Context, p memorykit.Principal, perm memorykit.Permission, s memorykit.Scope) error {
	if s.SubjectType != memorykit.SubjectProject || p.TenantID != s.TenantID {
		return errDenied
	}
	m := d.members[memberKey{tenant: p.TenantID, actor: p.Actor}]
	if m == nil || !m.can(s.SubjectID, perm) {
		return errDenied
	}
	return nil
}
