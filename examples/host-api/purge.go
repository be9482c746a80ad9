package main

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// A purge walks the whole project, which can take longer than any request
// deadline. So the Host runs it in the background: POST .../purge checks
// the caller's permission and the reason code, starts the purge and
// answers 202 with its status at once; GET .../purge answers the status
// (state, attempt count, error codes and, once done, the deletion
// report's counts and ids; never content). The purge runs under its own
// deadline (purgeTimeout) on the Host's clock, not the request's. A
// recoverable failure (the runtime turned it away as overloaded, the
// store was briefly unavailable) is retried after purgeRetryPause, up to
// purgeAttempts in all; a purge that still fails is "failed" with the
// error's codes, and the next POST resumes it where it stopped (a purge
// cut short is finished by the next call).

// Purge states.
const (
	purgeRunning  = "running"
	purgeRetrying = "retrying" // waiting purgeRetryPause before the next attempt
	purgeDone     = "done"
	purgeFailed   = "failed"
)

// purgeTimeout bounds one background purge, all attempts together.
const purgeTimeout = 30 * time.Minute

// purgeAttempts bounds the attempts of one background purge.
const purgeAttempts = 5

// purgeRetryPause is the pause between attempts, on the Host's clock.
const purgeRetryPause = time.Second

// errHostClosing is the cancellation cause of a purge still running when
// the Host's Close ran out of time.
var errHostClosing = errors.New("host closing")

// purgeStatus is the content-free status of a project's purge.
type purgeStatus struct {
	State      string     `json:"state"`
	ReasonCode string     `json:"reason_code"`
	Attempts   int        `json:"attempts"`
	AcceptedAt time.Time  `json:"accepted_at"`
	Error      string     `json:"error,omitempty"`
	Reason     string     `json:"error_reason,omitempty"`
	Report     *purgeJSON `json:"report,omitempty"`
}

// purges tracks the background purges of one Host: at most one per
// project Scope, and the last status of each project purged since the
// Host started.
type purges struct {
	mu      sync.Mutex
	byScope map[memorykit.Scope]*purgeStatus
	wg      sync.WaitGroup
	ctx     context.Context // parent of every purge; cancelled by stop
	cancel  context.CancelCauseFunc
}

func newPurges() *purges {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &purges{byScope: map[memorykit.Scope]*purgeStatus{}, ctx: ctx, cancel: cancel}
}

// status returns a copy of the scope's purge status.
func (p *purges) status(scope memorykit.Scope) (purgeStatus, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.byScope[scope]
	if !ok {
		return purgeStatus{}, false
	}
	return *st, true
}

// update changes the scope's status under the lock.
func (p *purges) update(scope memorykit.Scope, fn func(*purgeStatus)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p.byScope[scope])
}

// wait waits for every running purge until ctx ends, then cancels the
// rest and waits for them to return.
func (p *purges) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		p.cancel(errHostClosing)
		<-done
	}
}

// purge starts the project's purge in the background, or reports the one
// already running, and answers 202 with its status. Permission and reason
// code are checked first, so a request that would fail answers its error
// (403, 422) and starts nothing.
func (h *Host) purge(w http.ResponseWriter, r *http.Request, c call) {
	const op = "host.purge"
	var req purgeRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if err := storekit.CheckReasonCode(op, req.ReasonCode); err != nil {
		writeErr(w, err)
		return
	}
	if err := memorykit.Authorize(r.Context(), h.dir, c.caller.principal, memorykit.PermErase, c.scope); err != nil {
		writeErr(w, err)
		return
	}
	p := h.purges
	p.mu.Lock()
	if st, ok := p.byScope[c.scope]; ok && (st.State == purgeRunning || st.State == purgeRetrying) {
		cur := *st
		p.mu.Unlock()
		writeJSON(w, http.StatusAccepted, map[string]any{"purge": cur})
		return
	}
	st := &purgeStatus{State: purgeRunning, ReasonCode: req.ReasonCode, AcceptedAt: h.clock.Now()}
	p.byScope[c.scope] = st
	cur := *st
	p.wg.Add(1)
	p.mu.Unlock()
	go h.runPurge(c, req.ReasonCode)
	writeJSON(w, http.StatusAccepted, map[string]any{"purge": cur})
}

// runPurge runs one project's purge to its end: done, or failed after
// purgeAttempts or a non-recoverable error.
func (h *Host) runPurge(c call, reason string) {
	p := h.purges
	defer p.wg.Done()
	ctx, cancel := h.clock.WithTimeout(p.ctx, purgeTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		p.update(c.scope, func(st *purgeStatus) { st.State, st.Attempts = purgeRunning, attempt })
		rep, err := h.rt.Purge(ctx, c.caller.principal, c.scope, reason)
		if err == nil {
			out := purgeReport(c.project, rep)
			p.update(c.scope, func(st *purgeStatus) { st.State, st.Error, st.Reason, st.Report = purgeDone, "", "", &out })
			h.log.Info("purge finished", zap.String("tenant_id", c.scope.TenantID), zap.String("subject_id", c.scope.SubjectID), zap.Int("records", rep.Records), zap.Int("attempts", attempt))
			return
		}
		code, rc := memorykit.KindCode(err), memorykit.ReasonCode(err)
		if !memorykit.IsRecoverable(err) || attempt == purgeAttempts || ctx.Err() != nil {
			p.update(c.scope, func(st *purgeStatus) { st.State, st.Error, st.Reason = purgeFailed, code, rc })
			h.log.Warn("purge failed", zap.String("tenant_id", c.scope.TenantID), zap.String("subject_id", c.scope.SubjectID), zap.Int("attempts", attempt), zap.String("error", code), zap.String("reason", rc))
			return
		}
		// The pause is armed before the status says "retrying", so whoever
		// sees that state and advances the clock ends the pause.
		t := h.clock.Timer(purgeRetryPause)
		p.update(c.scope, func(st *purgeStatus) { st.State, st.Error, st.Reason = purgeRetrying, code, rc })
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			p.update(c.scope, func(st *purgeStatus) { st.State = purgeFailed })
			return
		}
	}
}

// purgeStatusRoute answers the project's purge status (permission erase):
// 200 with the status, or 404 when no purge of the project ran since the
// Host started.
func (h *Host) purgeStatusRoute(w http.ResponseWriter, r *http.Request, c call) {
	if err := memorykit.Authorize(r.Context(), h.dir, c.caller.principal, memorykit.PermErase, c.scope); err != nil {
		writeErr(w, err)
		return
	}
	st, ok := h.purges.status(c.scope)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no_purge", "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"purge": st})
}

// purgeReport is the deletion report's JSON form.
func purgeReport(project string, rep memorykit.PurgeReport) purgeJSON {
	return purgeJSON{
		Project: project, Actor: string(rep.Actor.Kind) + ":" + rep.Actor.ID, ReasonCode: rep.Reason,
		Records: rep.Records, RecordIDs: rep.RecordIDs, Revisions: rep.Revisions, Embeddings: rep.Embeddings,
		Jobs: rep.Jobs, QueueEntries: rep.QueueEntries, StartedAt: rep.StartedAt, FinishedAt: rep.FinishedAt,
		Digest: rep.Digest,
	}
}
