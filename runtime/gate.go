package runtime

import (
	"context"
	"sync/atomic"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Intake states.
const (
	intakeClosed      int32 = iota // before Start
	intakeOpen                     // running
	intakeDraining                 // Drain called
	intakeStopped                  // Stop called
	intakeWorkersOnly              // running as ModeWorkersOnly: no request paths
)

// gate answers every request path: open only between Start and Drain.
type gate struct{ state atomic.Int32 }

func (g *gate) check(op string) error {
	switch g.state.Load() {
	case intakeOpen:
		return nil
	case intakeClosed:
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidTransition, Reason: "not_started"}
	case intakeDraining:
		return &memorykit.Error{Op: op, Kind: memorykit.ErrDraining, Reason: "draining"}
	case intakeWorkersOnly:
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidTransition, Reason: "workers_only"}
	default:
		return &memorykit.Error{Op: op, Kind: memorykit.ErrStopped, Reason: "stopped"}
	}
}

// gatedLifecycle refuses request-path store calls once intake is closed, so
// every handler (writer, reviewer, tools) answers a typed draining error
// after Drain without each of them knowing about the runtime.
type gatedLifecycle struct {
	storekit.LifecycleStore
	g *gate
}

func (s gatedLifecycle) Create(ctx context.Context, in memorykit.NewRecord) (memorykit.Record, error) {
	if err := s.g.check("runtime.create"); err != nil {
		return memorykit.Record{}, err
	}
	return s.LifecycleStore.Create(ctx, in)
}

// Purge passes a purge to the store when it is a storekit.Purger.
func (s gatedLifecycle) Purge(ctx context.Context, scope memorykit.Scope, actor memorykit.Actor, reason string) (memorykit.PurgeReport, error) {
	if err := s.g.check("runtime.purge"); err != nil {
		return memorykit.PurgeReport{}, err
	}
	p, ok := s.LifecycleStore.(storekit.Purger)
	if !ok {
		return memorykit.PurgeReport{}, memorykit.NewError("runtime.purge", memorykit.ErrInvalidConfig, "purge_unsupported")
	}
	return p.Purge(ctx, scope, actor, reason)
}

func (s gatedLifecycle) Get(ctx context.Context, scope memorykit.Scope, id string) (memorykit.Record, error) {
	if err := s.g.check("runtime.get"); err != nil {
		return memorykit.Record{}, err
	}
	return s.LifecycleStore.Get(ctx, scope, id)
}

func (s gatedLifecycle) FindActive(ctx context.Context, scope memorykit.Scope, kind memorykit.Kind, key string) (memorykit.Record, error) {
	if err := s.g.check("runtime.find_active"); err != nil {
		return memorykit.Record{}, err
	}
	return s.LifecycleStore.FindActive(ctx, scope, kind, key)
}

func (s gatedLifecycle) List(ctx context.Context, f storekit.ListFilter) ([]memorykit.Record, error) {
	if err := s.g.check("runtime.list"); err != nil {
		return nil, err
	}
	return s.LifecycleStore.List(ctx, f)
}

func (s gatedLifecycle) Activate(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	if err := s.g.check("runtime.activate"); err != nil {
		return memorykit.Record{}, err
	}
	return s.LifecycleStore.Activate(ctx, t)
}

func (s gatedLifecycle) Reject(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	if err := s.g.check("runtime.reject"); err != nil {
		return memorykit.Record{}, err
	}
	return s.LifecycleStore.Reject(ctx, t)
}

func (s gatedLifecycle) Correct(ctx context.Context, c storekit.Correction) (memorykit.Record, error) {
	if err := s.g.check("runtime.correct"); err != nil {
		return memorykit.Record{}, err
	}
	return s.LifecycleStore.Correct(ctx, c)
}

func (s gatedLifecycle) Forget(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	if err := s.g.check("runtime.forget"); err != nil {
		return memorykit.Record{}, err
	}
	return s.LifecycleStore.Forget(ctx, t)
}

func (s gatedLifecycle) Erase(ctx context.Context, t storekit.Transition) (memorykit.Record, error) {
	if err := s.g.check("runtime.erase"); err != nil {
		return memorykit.Record{}, err
	}
	return s.LifecycleStore.Erase(ctx, t)
}

func (s gatedLifecycle) Revisions(ctx context.Context, scope memorykit.Scope, id string) ([]storekit.Revision, error) {
	if err := s.g.check("runtime.revisions"); err != nil {
		return nil, err
	}
	return s.LifecycleStore.Revisions(ctx, scope, id)
}

type gatedRecall struct {
	storekit.RecallStore
	g *gate
}

func (s gatedRecall) Recall(ctx context.Context, q storekit.RecallQuery) (storekit.RecallResult, error) {
	if err := s.g.check("runtime.recall"); err != nil {
		return storekit.RecallResult{}, err
	}
	return s.RecallStore.Recall(ctx, q)
}

// gatedJobs gates only enqueueing: workers use the ungated store.
type gatedJobs struct {
	storekit.JobStore
	g *gate
}

func (s gatedJobs) EnqueueJob(ctx context.Context, j storekit.NewJob) (storekit.Job, error) {
	if err := s.g.check("runtime.enqueue"); err != nil {
		return storekit.Job{}, err
	}
	return s.JobStore.EnqueueJob(ctx, j)
}
