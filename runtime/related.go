package runtime

import (
	"context"
	"errors"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/storekit"
)

// The extraction worker's related-memory lookup runs the recall engine
// over a job's transcript with the Host's RecallPolicy. The worker has no
// caller to authorize: the Host authorized the job's Scope (PermExtract)
// when it enqueued the turn. The lookup's engine therefore has its own
// authorizer, which grants exactly one thing: the worker reading the Scope
// of the job it is working on, named by the lookup itself in the context.
// Every other principal, permission or Scope is denied, so recall's own
// rules (active, currently effective, same-Scope records only) hold as for
// any other recall.

// jobScopeKey is the context key of the Scope a related lookup reads.
type jobScopeKey struct{}

// jobScopeAuthorizer allows its worker to read the job Scope in the
// context, and nothing else.
type jobScopeAuthorizer struct {
	actor memorykit.Actor
}

var errNotTheJobScope = errors.New("only the job's own Scope may be read")

// Authorize implements memorykit.Authorizer.
func (a jobScopeAuthorizer) Authorize(ctx context.Context, p memorykit.Principal, perm memorykit.Permission, scope memorykit.Scope) error {
	s, ok := ctx.Value(jobScopeKey{}).(memorykit.Scope)
	if !ok || perm != memorykit.PermRead || p.Actor != a.actor || p.TenantID != scope.TenantID || s != scope {
		return errNotTheJobScope
	}
	return nil
}

// relatedLookup returns the extraction worker's Related function: a recall
// over job's transcript inside job's Scope, its entries as related
// memories. A degraded recall is an error (the engine has emitted its
// content-free event), which the worker turns into no related memories.
func relatedLookup(engine *recall.Engine, actor memorykit.Actor) func(context.Context, storekit.Job) ([]memorykit.RelatedMemory, error) {
	return func(ctx context.Context, job storekit.Job) ([]memorykit.RelatedMemory, error) {
		ctx = context.WithValue(ctx, jobScopeKey{}, job.Scope)
		res, err := engine.Recall(ctx, recall.Request{
			Principal: memorykit.Principal{TenantID: job.Scope.TenantID, Actor: actor},
			Scope:     job.Scope,
			Query:     job.Payload,
		})
		if err != nil {
			return nil, err
		}
		if res.Degraded {
			return nil, memorykit.NewError("runtime.related", memorykit.ErrUnavailable, "recall_degraded")
		}
		out := make([]memorykit.RelatedMemory, len(res.Entries))
		for i, e := range res.Entries {
			out[i] = memorykit.RelatedMemory{Kind: e.Kind, Key: e.Key, Content: e.Content}
		}
		return out, nil
	}
}
