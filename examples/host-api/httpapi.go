package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorytools"
)

// call is what every project route knows before its handler runs: the
// authenticated caller and the Scope built from the caller's tenant and the
// route's project. Nothing in a body, query or header contributes to it.
type call struct {
	caller  *member
	project string
	scope   memorykit.Scope
	// query is the strictly parsed query string (see checkQuery).
	query url.Values
}

// route registers a project route. Before fn runs, the request passes, in
// order: authentication, the header check, the query check (only the
// listed parameters are allowed), the Scope from the trusted route, and
// the edge bound of the route's class (see overload.go). A read (a
// search or a GET) then runs on the Host's work pool (workpool.go).
func (h *Host) route(pattern string, query []string, fn func(http.ResponseWriter, *http.Request, call)) {
	h.routes = append(h.routes, pattern)
	class := h.edge[classOf(pattern)]
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if h.closing.Load() {
			writeError(w, http.StatusServiceUnavailable, "draining", "shutting_down", "")
			return
		}
		// Every slot of the class taken: refused whoever the caller is,
		// before any authentication work.
		if class.full() {
			h.refuse(w, r, class)
			return
		}
		caller, ok := h.dir.Authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="memorykit-host"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", "bearer_token_required", "")
			return
		}
		if name, bad := scopeHeader(r.Header); bad {
			writeError(w, http.StatusBadRequest, "scope_override_rejected", "header", name)
			return
		}
		values, rej := checkQuery(r, query)
		if rej != nil {
			writeError(w, rej.Status, rej.Code, rej.Reason, rej.Field)
			return
		}
		project := r.PathValue("project")
		scope, err := memorykit.ProjectScope(caller.principal.TenantID, project)
		if err != nil {
			writeErr(w, err)
			return
		}
		// The edge bound comes before the body is read (overload.go).
		tenant := caller.principal.TenantID
		if !class.enter(tenant) {
			h.refuse(w, r, class)
			return
		}
		defer class.leave(tenant)
		c := call{caller: caller, project: project, scope: scope, query: values}
		if class.name != classReads || h.pool == nil {
			fn(w, r, c)
			return
		}
		// An admitted read runs on the lower-priority work pool, so that
		// this goroutine's thread stays free for the front end (workpool.go).
		if err := h.pool.run(r.Context(), func() { fn(w, r, c) }); err != nil {
			writePoolErr(w, err)
		}
	})
}

// refuse answers a request the edge turned away: 503 overloaded with
// Retry-After, pre-rendered. A refusal on a connection that comes before
// the Retry-After of its previous refusal has passed is held until it has
// (tarpit). Only a refusal answered at once counts toward closing the
// connection: connRefusalLimit of them within connRefusalWindow (the
// tarpit was full each time) close it after this answer.
func (h *Host) refuse(w http.ResponseWriter, r *http.Request, class *edgeClass) {
	h.obs.refused(r.Context(), class.name)
	cs, ok := r.Context().Value(connKey{}).(*connState)
	if !ok {
		class.writeRefusal(w)
		return
	}
	held := false
	if wait := cs.early(h.clock.Now()); wait > 0 {
		held = h.tarpit.hold(r.Context(), h.clock, wait)
	}
	if !held && cs.refused(h.clock.Now()) {
		w.Header().Set("Connection", "close")
		h.closedConns.Add(1)
	}
	class.writeRefusal(w)
	cs.answered(h.clock.Now())
}

// writePoolErr answers a read the work pool did not run: the Host is
// shutting down, or the request ended before a worker took it.
func writePoolErr(w http.ResponseWriter, err error) {
	if errors.Is(err, errPoolStopped) {
		writeError(w, http.StatusServiceUnavailable, "draining", "shutting_down", "")
		return
	}
	writeErr(w, &memorykit.Error{Op: "host.pool", Kind: memorykit.ErrDeadline, Reason: "deadline", Err: err, Retry: true})
}

// Names a caller might use to smuggle a Scope, an identity or a permission
// into a request. Names are compared after normalizeName, so "tenant_id",
// "Tenant-ID" and "tenantId" are one name.
var scopeNames = map[string]string{
	"tenant": "tenant", "tenantid": "tenant", "tenants": "tenant",
	"subject": "subject", "subjecttype": "subject_type", "subjectid": "subject_id",
	"scope": "scope", "scopes": "scope", "userscope": "scope",
	"project": "project", "projectid": "project", "projects": "project",
	"user": "user", "userid": "user", "users": "user",
	"actor": "actor", "actorid": "actor", "actorkind": "actor", "principal": "actor",
	"writeintent": "write_permission", "writepermission": "write_permission",
	"permission": "write_permission", "permissions": "write_permission",
	"canwrite": "write_permission", "allowwrite": "write_permission", "write": "write_permission",
}

// scopeHeaderWords flag a header whose name merely contains them, such as
// "X-Memory-Tenant" or "X-Forwarded-Subject-Id".
var scopeHeaderWords = []string{"tenant", "subject", "scope", "project", "userid", "writeintent", "permission", "principal"}

// normalizeName lower-cases a name and drops "-", "_" and ".".
func normalizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.':
			return -1
		}
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// scopeHeader reports a request header that tries to name a tenant,
// subject, project, user or permission, and the canonical name it tried.
func scopeHeader(header http.Header) (string, bool) {
	for name := range header {
		n := normalizeName(strings.TrimPrefix(strings.ToLower(name), "x-"))
		if canon, ok := scopeNames[n]; ok {
			return canon, true
		}
		for _, word := range scopeHeaderWords {
			if strings.Contains(n, word) {
				return word, true
			}
		}
	}
	return "", false
}

// maxQueryParams bounds the parameters of one query string; no route
// takes more than two.
const maxQueryParams = 16

// checkQuery parses the raw query string itself and allows only the listed
// parameters, each at most once. A query that does not parse cleanly (a
// bad escape, a ";" separator) or has more than maxQueryParams parameters
// is refused as a whole: url.URL.Query drops what it cannot parse, and the
// scope-override check must see every parameter. It returns the parsed
// values, or the rejection.
func checkQuery(r *http.Request, allowed []string) (url.Values, *rejection) {
	raw := r.URL.RawQuery
	if strings.Count(raw, "&") >= maxQueryParams {
		return nil, reject(http.StatusBadRequest, "invalid_query", "too_many_parameters", "")
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, reject(http.StatusBadRequest, "invalid_query", "malformed", "")
	}
	for name := range values {
		if canon, ok := scopeNames[normalizeName(name)]; ok {
			return nil, reject(http.StatusBadRequest, "scope_override_rejected", "query", canon)
		}
	}
	for name, vs := range values {
		ok := false
		for _, a := range allowed {
			ok = ok || name == a
		}
		if !ok {
			return nil, reject(http.StatusBadRequest, "unknown_query_parameter", "query", "")
		}
		if len(vs) != 1 {
			return nil, reject(http.StatusBadRequest, "repeated_query_parameter", "query", name)
		}
	}
	return values, nil
}

// decodeBody reads a JSON object into dst: at most maxBodyBytes, then
// decodeStrict's checks (valid UTF-8, exactly one object, no Scope or
// identity key at any depth, no duplicate or inexact key, right types). An
// empty body is accepted when emptyOK, leaving dst as it is. On failure it
// has written the response and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any, emptyOK bool) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "", "")
		} else {
			writeError(w, http.StatusBadRequest, "body_unreadable", "", "")
		}
		return false
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if emptyOK {
			return true
		}
		writeError(w, http.StatusBadRequest, "invalid_json", "empty_body", "")
		return false
	}
	if rej := decodeStrict(raw, dst); rej != nil {
		writeError(w, rej.Status, rej.Code, rej.Reason, rej.Field)
		return false
	}
	return true
}

// scopeKey walks a decoded JSON value and reports the first object key
// that names a Scope, identity or permission.
func scopeKey(v any) (string, bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if canon, ok := scopeNames[normalizeName(k)]; ok {
				return canon, true
			}
			if canon, ok := scopeKey(child); ok {
				return canon, true
			}
		}
	case []any:
		for _, child := range t {
			if canon, ok := scopeKey(child); ok {
				return canon, true
			}
		}
	}
	return "", false
}

// errorBody is every error response. Its fields are codes and field names
// only: no content, query text or token ever appears in it.
type errorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
	Field  string `json:"field,omitempty"`
	// Message is set for a memory write that failed: exactly
	// memorytools.NotSavedText.
	Message string `json:"message,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, reason, field string) {
	writeJSON(w, status, errorBody{Error: code, Reason: reason, Field: field})
}

// writeErr maps a memorykit error to its HTTP status and a content-free
// body.
func writeErr(w http.ResponseWriter, err error) {
	if errors.Is(err, memorykit.ErrOverloaded) {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	status, body := errorResponse(err)
	writeJSON(w, status, body)
}

// writeNotSaved answers a failed memory write: the mapped status, and the
// fixed text 项目记忆未保存 as the message.
func writeNotSaved(w http.ResponseWriter, err error) {
	status, body := errorResponse(err)
	body.Message = memorytools.NotSavedText
	writeJSON(w, status, body)
}

// errorResponse maps the error's kind to a status. Only the outermost
// *memorykit.Error's Kind counts: a forbidden error may wrap an invalid
// input cause, and the caller must see 403.
func errorResponse(err error) (int, errorBody) {
	kind := err
	body := errorBody{Error: memorykit.KindCode(err), Reason: memorykit.ReasonCode(err)}
	var me *memorykit.Error
	if errors.As(err, &me) && me.Kind != nil {
		kind = me.Kind
		body.Error = memorykit.KindCode(me.Kind)
		body.Field = me.Field
	}
	if body.Reason == body.Error {
		body.Reason = ""
	}
	status := http.StatusInternalServerError
	switch {
	case errors.Is(kind, memorykit.ErrForbidden):
		status = http.StatusForbidden
	case errors.Is(kind, memorykit.ErrInvalidScope):
		status = http.StatusBadRequest
	case errors.Is(kind, memorykit.ErrInvalidInput):
		status = http.StatusUnprocessableEntity
	case errors.Is(kind, memorykit.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(kind, memorykit.ErrVersionConflict), errors.Is(kind, memorykit.ErrInvalidTransition),
		errors.Is(kind, memorykit.ErrAlreadyExists):
		status = http.StatusConflict
	case errors.Is(kind, memorykit.ErrDraining), errors.Is(kind, memorykit.ErrStopped), errors.Is(kind, memorykit.ErrPurging),
		errors.Is(kind, memorykit.ErrUnavailable), errors.Is(kind, memorykit.ErrDeadline),
		errors.Is(kind, memorykit.ErrOverloaded):
		status = http.StatusServiceUnavailable
	}
	return status, body
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// statusWriter remembers the response status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// logRequests logs one line per request: method, route pattern, status and
// duration. Never the path (it names the project), the query, headers or
// bodies.
func (h *Host) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := h.clock.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		route := r.Pattern // set by the ServeMux on this request
		if route == "" {
			route = "unmatched"
		}
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		h.log.Info("request",
			zap.String("method", r.Method), zap.String("route", route),
			zap.Int("status", sw.status), zap.Duration("duration", h.clock.Since(start)))
	})
}
