// Package runtime is memorykit's composition root. runtime.New validates a
// whole Config (no permissive defaults), builds the request-side components
// (recall engine, projector, writer, reviewer, extraction enqueuer) and the
// background actors (embedding worker, extraction worker, lease reaper)
// under one supervisor, and hands out request-scoped Sessions.
//
// Import it under another name, since it shares its name with the standard
// library's runtime package:
//
//	import mkruntime "github.com/goagents/memorykit/runtime"
//
// # Lifecycle
//
// New, then Start. Requests go through Sessions and the Reviewer while the
// Runtime runs. Shutdown is, in order:
//
//  1. the Host stops its own intake (HTTP server Shutdown, queue consumers);
//  2. Drain: memorykit's request paths answer a typed ErrDraining, workers
//     stop leasing, and in-flight work finishes; when Drain's context ends
//     first, Drain returns and the work goes on until Stop;
//  3. Stop: everything still running is cancelled (handing its leases
//     back) and waited for, within Stop's context;
//  4. the Host closes the stores (for pgstore, Close closes its pool).
package runtime

import (
	"context"
	"errors"
	"sync"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/reviewer"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/supervisor"
	"github.com/goagents/memorykit/writer"
)

// Runtime is a composed memorykit: request handlers plus supervised
// workers.
type Runtime struct {
	cfg      Config
	gate     *gate
	admit    *admitter
	records  storekit.LifecycleStore // gated
	engine   *recall.Engine
	proj     *projector.Projector
	writer   *writer.Writer
	reviewer *reviewer.Reviewer
	enqueuer *extractworker.Enqueuer
	outbox   *outbox
	sup      *supervisor.Supervisor
	rounds   *roundSignal // the embedding worker's rounds, for AwaitEmbedded

	mu        sync.Mutex // guards the fields below; never held while waiting
	started   bool
	stopped   bool          // Stop was called; the Runtime never starts again
	drainDone chan struct{} // closed when the shared drain wait ends
	drainErr  error         // that wait's result, read after drainDone closes
}

// New validates cfg and composes a Runtime. It refuses a missing or partial
// part with an ErrInvalidConfig (or ErrInvalidPolicy) error naming it.
func New(cfg Config) (*Runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &gate{}
	adm := newAdmitter(cfg.Admission.effective(), cfg.Clock)
	records := gatedLifecycle{LifecycleStore: admittedLifecycle{LifecycleStore: cfg.Stores.Lifecycle, a: adm}, g: g}
	log := cfg.Logger

	recallStore := gatedRecall{RecallStore: admittedRecall{RecallStore: cfg.Stores.Recall, a: adm}, g: g}
	engine, err := recall.New(recall.Config{
		Store: recallStore, Embedder: cfg.Embedder,
		Authorizer: cfg.Authorizer, Policy: cfg.Policy, Clock: cfg.Clock, Events: cfg.Events,
		Logger: log.Named("recall"),
	})
	if err != nil {
		return nil, err
	}
	proj, err := projector.New(projector.Config{Engine: engine, Logger: log.Named("projector"), Random: cfg.hooks.Random})
	if err != nil {
		return nil, err
	}
	wr, err := writer.New(writer.Config{Store: records, Authorizer: cfg.Authorizer, Events: cfg.Events, Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	rv, err := reviewer.New(reviewer.Config{Store: records, Authorizer: cfg.Authorizer, Events: cfg.Events, Clock: cfg.Clock,
		Hints: reviewer.HintConfig{Store: recallStore, Embedder: cfg.Embedder, Policy: cfg.Policy, Logger: log.Named("reviewer")}})
	if err != nil {
		return nil, err
	}
	enq, err := extractworker.NewEnqueuer(extractworker.EnqueuerConfig{
		Store: gatedJobs{JobStore: admittedJobs{JobStore: cfg.Stores.Jobs, a: adm}, g: g}, Authorizer: cfg.Authorizer, Clock: cfg.Clock,
		Logger: log.Named("enqueue"), Events: cfg.Events, MaxAttempts: cfg.Workers.JobMaxAttempts,
		MaxReaps: cfg.Workers.JobMaxReaps,
	})
	if err != nil {
		return nil, err
	}
	ob, err := newRuntimeOutbox(cfg)
	if err != nil {
		return nil, err
	}
	rounds := newRoundSignal()
	actors, err := newActors(cfg, rounds)
	if err != nil {
		return nil, err
	}
	sup, err := supervisor.New(supervisor.Config{
		Clock: cfg.Clock, Logger: log.Named("supervisor"), Events: cfg.Events, Backoff: cfg.Workers.Restart,
		MaxRestarts: cfg.Workers.MaxRestarts,
	}, actors...)
	if err != nil {
		return nil, err
	}
	return &Runtime{
		cfg: cfg, gate: g, admit: adm, records: records, engine: engine, proj: proj,
		writer: wr, reviewer: rv, enqueuer: enq, outbox: ob, sup: sup, rounds: rounds,
	}, nil
}

func newActors(cfg Config, rounds *roundSignal) ([]supervisor.Actor, error) {
	w := cfg.Workers
	onWait := func(actor string) func(supervisor.Wait) {
		if cfg.hooks.OnWait == nil {
			return nil
		}
		return func(wt supervisor.Wait) { cfg.hooks.OnWait(actor, wt) }
	}
	var actors []supervisor.Actor
	if cfg.Embedder != nil { // a LexicalOnly policy has no vector channel to feed
		embed, err := embedworker.New(embedworker.Config{
			Store: cfg.Stores.Embeddings, Embedder: cfg.Embedder, Clock: cfg.Clock,
			Logger: cfg.Logger, Events: cfg.Events, WorkerID: cfg.WorkerID + ":embed",
			LeaseTTL: w.LeaseTTL, BatchSize: w.EmbedBatch, PollInterval: w.EmbedPoll,
			EmbedDeadline: w.EmbedDeadline, Retry: w.EmbedRetry,
			StoreBackoff: w.StoreBackoff, HandBackTimeout: w.HandBackTimeout,
			OnWait: onWait(ActorEmbed), OnRound: rounds.onRound,
		})
		if err != nil {
			return nil, err
		}
		actors = append(actors, embed)
	}
	extractActor := memorykit.Actor{Kind: memorykit.ActorWorker, ID: cfg.WorkerID + ":extract"}
	related, err := recall.New(recall.Config{
		Store: cfg.Stores.Recall, Embedder: cfg.Embedder, Authorizer: jobScopeAuthorizer{actor: extractActor},
		Policy: cfg.Policy, Clock: cfg.Clock, Events: cfg.Events, Logger: cfg.Logger.Named("related"),
	})
	if err != nil {
		return nil, err
	}
	extract, err := extractworker.New(extractworker.Config{
		Store: cfg.Stores.Jobs, Extractor: cfg.Extractor, Guard: cfg.Guard, Clock: cfg.Clock,
		Related: relatedLookup(related, extractActor),
		Logger:  cfg.Logger, Events: cfg.Events, WorkerID: cfg.WorkerID + ":extract",
		LeaseTTL: w.LeaseTTL, BatchSize: w.ExtractBatch, PollInterval: w.ExtractPoll,
		JobDeadline: w.JobDeadline, Retry: w.JobRetry,
		StoreBackoff: w.StoreBackoff, HandBackTimeout: w.HandBackTimeout,
		OnWait: onWait(ActorExtract),
	})
	if err != nil {
		return nil, err
	}
	reaper, err := extractworker.NewReaper(extractworker.ReaperConfig{
		Store: reapStores{jobs: cfg.Stores.Jobs, emb: cfg.Stores.Embeddings}, Clock: cfg.Clock,
		Logger: cfg.Logger, Events: cfg.Events, Interval: w.ReapInterval,
		StoreBackoff: w.StoreBackoff, OnWait: onWait(ActorReap),
	})
	if err != nil {
		return nil, err
	}
	return append(actors, extract, reaper), nil
}

type reapStores struct {
	jobs storekit.JobStore
	emb  storekit.EmbeddingStore
}

func (r reapStores) ReapJobLeases(ctx context.Context) (int, error) { return r.jobs.ReapJobLeases(ctx) }
func (r reapStores) ReapEmbeddingLeases(ctx context.Context) (int, error) {
	return r.emb.ReapEmbeddingLeases(ctx)
}

// Start starts the workers and opens intake, as far as Config.Mode runs
// them. It returns a typed error when called twice or after Stop (an
// ErrStopped *memorykit.Error, reason "stopped", even when Stop came before
// any Start: Stop is final).
func (r *Runtime) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped && !r.started {
		return &memorykit.Error{Op: "runtime.start", Kind: memorykit.ErrStopped, Reason: "stopped"}
	}
	if err := r.startWorkers(ctx); err != nil {
		return err
	}
	if r.cfg.Mode.runsRequests() {
		r.outbox.start()
	}
	r.started = true
	r.gate.state.Store(r.openIntake())
	return nil
}

// Drain closes intake (every request path answers ErrDraining from now on),
// stops the workers from leasing, and waits for in-flight work to finish.
// When ctx ends first, Drain returns ctx's error (an ErrUnavailable
// *memorykit.Error that errors.Is matches with ctx.Err()) and leaves the
// in-flight work running: Stop is what cancels it. Drain holds no lock
// while it waits, so Stop (or another Drain) may be called from another
// goroutine at any time.
func (r *Runtime) Drain(ctx context.Context) error {
	if ctx == nil {
		return memorykit.FieldError("runtime.drain", "ctx", "nil")
	}
	r.mu.Lock()
	if r.started && r.gate.state.Load() == intakeOpen {
		r.gate.state.Store(intakeDraining)
	}
	if r.stopped && r.drainDone == nil {
		// Stop came first and owns the shutdown; the supervisor may not
		// have heard of it yet, so answer here rather than wait on it.
		r.mu.Unlock()
		return memorykit.NewError("runtime.drain", memorykit.ErrStopped, "stopped")
	}
	if !r.started {
		r.mu.Unlock()
		return r.endWorkers(ctx, false) // answers at once: not started
	}
	if r.drainDone == nil {
		// One wait for the actors, shared by every Drain call, that no
		// caller's context cuts short: an ended ctx returns the caller,
		// not the work. It ends when the actors return (Stop makes them).
		done := make(chan struct{})
		r.drainDone = done
		go func() {
			err := r.endWorkers(context.WithoutCancel(ctx), false)
			if errors.Is(err, memorykit.ErrStopped) {
				// A Stop called after this Drain reached the supervisor
				// first: it ends the work, and this Drain with it.
				err = nil
			}
			r.drainErr = err
			close(done)
		}()
	}
	done := r.drainDone
	r.mu.Unlock()
	r.rounds.fire() // AwaitEmbedded callers see the closed gate
	// Held turns get one last attempt within ctx, then go to the Host's
	// OnDrain; later calls find the outbox closed and return at once.
	r.outbox.close(ctx, true)
	select {
	case <-done:
		return r.drainErr
	case <-ctx.Done():
		return memorykit.WrapError("runtime.drain", memorykit.ErrUnavailable, "context_done", ctx.Err())
	}
}

// Stop closes intake, cancels and waits for every worker, within ctx:
// when ctx ends first it returns a typed error naming the actors still
// running (see supervisor.Stop), and calling Stop again waits again. After
// a nil return nothing of the Runtime runs and the Host may close its
// stores. Stop does not wait behind a Drain in progress; that Drain
// returns once Stop has cancelled the work. Stop is final: a later Start
// answers ErrStopped. Stop before Start has nothing to wait for and
// returns nil, and the Runtime can no longer be started.
func (r *Runtime) Stop(ctx context.Context) error {
	if ctx == nil {
		return memorykit.FieldError("runtime.stop", "ctx", "nil")
	}
	r.mu.Lock()
	r.gate.state.Store(intakeStopped)
	started := r.started
	r.stopped = true
	r.mu.Unlock()
	r.rounds.fire()
	if !started {
		return nil
	}
	r.outbox.close(ctx, false)
	return r.endWorkers(ctx, true)
}

// Reviewer returns the governed review API (list candidates, activate,
// reject, correct, forget, erase, history). Its calls answer ErrDraining
// after Drain.
func (r *Runtime) Reviewer() *reviewer.Reviewer { return r.reviewer }

// Purge erases a whole project Scope for an authorized principal
// (PermErase) and returns the deletion report; see reviewer.Reviewer.Purge.
// It answers ErrDraining after Drain; a purge cut short by Drain finishes
// on the next call.
func (r *Runtime) Purge(ctx context.Context, p memorykit.Principal, scope memorykit.Scope, reason string) (memorykit.PurgeReport, error) {
	return r.reviewer.Purge(ctx, p, scope, reason)
}

// Writer returns the write paths (explicit, projection, model). Its calls
// answer ErrDraining after Drain.
func (r *Runtime) Writer() *writer.Writer { return r.writer }

// Engine returns the recall engine.
func (r *Runtime) Engine() *recall.Engine { return r.engine }
