package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// ErrUnauthenticated is what a Resolver returns for a request without a
// valid credential; the handler answers 401 with a WWW-Authenticate
// header.
var ErrUnauthenticated = errors.New("mcp: unauthenticated")

// Resolver is the Host's authentication and routing for one HTTP request:
// it maps the request's credential (a bearer token, a client certificate)
// and its trusted route (the project in the URL path) to the
// runtime.Request it may act as. It must read nothing from the body, and
// nothing a client may set for itself beyond its credential and the path.
// It returns ErrUnauthenticated (401) for a missing or unknown credential
// and a *memorykit.Error for anything else it refuses (ErrForbidden: 403;
// ErrInvalidScope, ErrInvalidInput: 404, the route names no project).
type Resolver func(r *http.Request) (mkruntime.Request, error)

// NewHandler returns a streamable HTTP handler (MCP's HTTP transport) in
// stateless mode: every HTTP request is authenticated by resolve and
// authorized for read on its Scope (NewServer) before the MCP SDK sees it,
// so an unknown credential is 401 and a project without grants 403 before
// any tool is listed, and a client cannot carry one caller's session into
// another's request. A draining Runtime answers 503 with Retry-After.
// Bodies over cfg.MaxRequestBytes are refused.
func NewHandler(cfg Config, resolve Resolver) (http.Handler, error) {
	const op = "mcp.new_handler"
	if err := cfg.validate(op); err != nil {
		return nil, err
	}
	if resolve == nil {
		return nil, memorykit.ConfigError(op, "resolver", "missing")
	}
	h := &handler{cfg: cfg, resolve: resolve, log: cfg.Logger.Named("mcp.http")}
	h.sdk = sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		srv, _ := r.Context().Value(serverKey{}).(*sdk.Server)
		return srv
	}, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: int64(cfg.MaxRequestBytes),
	})
	return h, nil
}

type serverKey struct{}

type handler struct {
	cfg     Config
	resolve Resolver
	log     *zap.Logger
	sdk     *sdk.StreamableHTTPHandler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > int64(h.cfg.MaxRequestBytes) {
		h.refuse(w, http.StatusRequestEntityTooLarge, "body_too_large")
		return
	}
	req, err := h.resolve(r)
	if err != nil {
		h.refuseErr(w, err)
		return
	}
	srv, err := NewServer(r.Context(), h.cfg, req)
	if err != nil {
		h.refuseErr(w, err)
		return
	}
	h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, srv)))
}

// refuseErr answers a request the Host or the Runtime refused.
func (h *handler) refuseErr(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrUnauthenticated):
		w.Header().Set("WWW-Authenticate", `Bearer realm="memorykit-mcp"`)
		h.refuse(w, http.StatusUnauthorized, "unauthenticated")
	case errors.Is(err, memorykit.ErrForbidden):
		h.refuse(w, http.StatusForbidden, "forbidden")
	case errors.Is(err, memorykit.ErrInvalidScope), errors.Is(err, memorykit.ErrInvalidInput), errors.Is(err, memorykit.ErrNotFound):
		h.refuse(w, http.StatusNotFound, "no_such_project")
	case errors.Is(err, memorykit.ErrDraining), errors.Is(err, memorykit.ErrStopped):
		w.Header().Set("Retry-After", "5")
		h.refuse(w, http.StatusServiceUnavailable, "draining")
	case errors.Is(err, memorykit.ErrOverloaded):
		w.Header().Set("Retry-After", "1")
		h.refuse(w, http.StatusServiceUnavailable, "overloaded")
	default:
		h.log.Warn("request refused", zap.String("reason", memorykit.ReasonCode(err)))
		if memorykit.IsRecoverable(err) {
			w.Header().Set("Retry-After", "1")
			h.refuse(w, http.StatusServiceUnavailable, "unavailable")
			return
		}
		h.refuse(w, http.StatusInternalServerError, "internal")
	}
}

// refuse writes a content-free JSON error.
func (h *handler) refuse(w http.ResponseWriter, status int, code string) {
	h.log.Info("request refused", zap.Int("status", status), zap.String("reason", code))
	body, _ := json.Marshal(map[string]string{"error": code})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
