package runtime

import (
	"context"
	"encoding/json"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// Request is what the Host knows, from trusted metadata, about one agent
// request. Nothing in it may come from a model or a request body.
type Request struct {
	// Caller is the authenticated user or trusted tool on whose behalf the
	// turn runs. Required; never a model. Opening the Session authorizes
	// it for PermRead on Scope, and every projection and tool call
	// authorizes it again, beside the model's own grants.
	Caller memorykit.Principal
	// Scope is built from the authenticated tenant and the trusted project
	// route, with memorykit.ProjectScope.
	Scope memorykit.Scope
	// ModelID identifies the model/agent acting in this request; the memory
	// tools act as Actor{Kind: model, ID: ModelID} in the caller's tenant.
	ModelID string
	// WriteIntent registers remember_project_memory. Only trusted Host
	// metadata grants it; each call still needs the caller's PermWrite and
	// the model's PermModelWrite.
	WriteIntent bool
}

// Session is one request's memory: the projector, the request-scoped
// tools and their failure flag, the explicit write path and the extraction
// hand-off, all bound to one Scope and one caller. The model never acts on
// its own grants alone: every path authorizes the caller too.
type Session struct {
	rt    *Runtime
	req   Request
	model memorykit.Principal
	tools *memorytools.Provider
}

// Session validates req, authorizes req.Caller for PermRead on req.Scope
// and binds a request-scoped Session. A missing or invalid caller, a caller
// that is a model, or a caller without read on the Scope is refused with a
// typed error (ErrForbidden for the last two). It answers a typed error
// before Start, ErrDraining after Drain and ErrStopped after Stop. Every
// later call authorizes again, so a grant revoked mid-request takes
// effect at once.
func (r *Runtime) Session(ctx context.Context, req Request) (*Session, error) {
	const op = "runtime.session"
	if err := r.gate.check(op); err != nil {
		return nil, err
	}
	if err := req.Scope.Validate(); err != nil {
		return nil, err
	}
	if err := req.Caller.Validate(); err != nil {
		return nil, err
	}
	if req.Caller.Actor.Kind == memorykit.ActorModel {
		return nil, &memorykit.Error{Op: op, Kind: memorykit.ErrForbidden, Field: "caller", Reason: "caller_is_model"}
	}
	if err := storekit.ValidateID(op, "model_id", req.ModelID); err != nil {
		return nil, err
	}
	if err := memorykit.Authorize(ctx, r.cfg.Authorizer, req.Caller, memorykit.PermRead, req.Scope); err != nil {
		return nil, err
	}
	model := memorykit.Principal{TenantID: req.Caller.TenantID, Actor: memorykit.Actor{Kind: memorykit.ActorModel, ID: req.ModelID}}
	tools, err := memorytools.New(memorytools.Config{
		Engine: r.engine, Records: r.records, Authorizer: r.cfg.Authorizer, Writer: r.writer,
		Principal: model, Caller: req.Caller, Scope: req.Scope, WriteIntent: req.WriteIntent, Limits: r.cfg.Tools, Claims: r.cfg.Claims,
		Events: r.cfg.Events, Clock: r.cfg.Clock, Logger: r.cfg.Logger.Named("tools"),
	})
	if err != nil {
		return nil, err
	}
	return &Session{rt: r, req: req, model: model, tools: tools}, nil
}

// Project runs automatic recall for the current user message and returns the
// messages with a bounded memory view inserted before it. Recall authorizes
// the caller (not the model) for PermRead. Recall failures
// that the specification calls recoverable come back as a Projection with
// Degraded set and the messages unchanged; authorization, Scope, policy and
// integrity failures are errors.
func (s *Session) Project(ctx context.Context, messages []projector.Message) (projector.Projection, error) {
	if err := s.rt.gate.check("runtime.project"); err != nil {
		return projector.Projection{}, err
	}
	return s.rt.proj.Project(ctx, projector.Turn{Principal: s.req.Caller, Scope: s.req.Scope, Messages: messages})
}

// Tools lists the request-scoped memory tools for the model. Their schemas
// hold no Scope, tenant, subject or permission field.
func (s *Session) Tools() []memorytools.Tool { return s.tools.Tools() }

// CallTool runs one tool call from the model. After Drain the stores behind
// the tools answer ErrDraining, so a search fails closed and a write fails
// truthfully (项目记忆未保存, failure flag set).
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (memorytools.Result, error) {
	return s.tools.Call(ctx, name, args)
}

// WriteFailed reports the request-scoped failure flag: a memory write failed
// in this Session. No later success clears it.
func (s *Session) WriteFailed() bool { return s.tools.Failed() }

// ValidateOutput must run on the model's final output before the Host
// persists it: after a failed write, an output that Config.Claims (by
// default memorytools.DefaultClaimDetector) reads as claiming the memory was
// saved is rejected with the fixed error 项目记忆未保存.
func (s *Session) ValidateOutput(text string) error { return s.tools.ValidateOutput(text) }

// ValidateOutputContext is ValidateOutput with the request's context, which
// a model-judged claim detector (a memorytools.ContextClaimDetector, such
// as one combined with memorytools.AnyClaim) uses for its model call.
func (s *Session) ValidateOutputContext(ctx context.Context, text string) error {
	return s.tools.ValidateOutputContext(ctx, text)
}

// Remember is the trusted explicit write of the Session's caller (a user
// or trusted tool): active at once after authorization and validation.
func (s *Session) Remember(ctx context.Context, in writer.Input) (writer.Result, error) {
	return s.rt.writer.WriteExplicit(ctx, s.req.Caller, s.req.Scope, in)
}

// Turn is a finished turn handed to extraction (Session.FinishTurn).
type Turn struct {
	// RunRef is the Host's reference of the turn, such as "run-42/turn-3"
	// (storekit.CheckRunRef). The extraction job's identity derives from
	// it, so finishing the same turn twice enqueues one job.
	RunRef string
	// Transcript is the text the Extractor reads (Limits.MaxJobPayloadBytes
	// at most).
	Transcript string
}

// FinishTurn hands the finished turn to extraction as a durable job. It
// never fails the turn. The result's Status is EnqueueQueued or
// EnqueueDuplicate when the job is stored; EnqueueDeferred when storing
// failed recoverably and the turn is held in the outbox (Config.Outbox),
// which stores it later; EnqueueDropped when the outbox had no room (or
// was closed); EnqueueFailed for a failure retrying cannot fix (denied,
// invalid run reference, payload over the limit). Failures also emit a
// content-free EventExtractionEnqueueFailed for operators.
func (s *Session) FinishTurn(ctx context.Context, t Turn) extractworker.EnqueueResult {
	return s.rt.finishTurn(ctx, extractworker.Turn{
		Principal: s.req.Caller, Scope: s.req.Scope, RunRef: t.RunRef, Payload: t.Transcript,
	})
}

// Scope returns the Session's Scope.
func (s *Session) Scope() memorykit.Scope { return s.req.Scope }
