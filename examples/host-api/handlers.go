package main

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/reviewer"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// registerRoutes lists the API. {project} is the only place a Scope comes
// from; {id} is a record ID inside that Scope.
func (h *Host) registerRoutes() {
	h.routes = append(h.routes, "GET /healthz")
	h.mux.HandleFunc("GET /healthz", h.health)
	h.routes = append(h.routes, "GET /metrics")
	h.mux.Handle("GET /metrics", h.obs.handler)

	const p = "/v1/projects/{project}"
	h.route("POST "+p+"/memories", nil, h.write)
	h.route("POST "+p+"/search", nil, h.search)
	h.route("GET "+p+"/memories/{id}", nil, h.read)
	h.route("POST "+p+"/chat", nil, h.chat)
	h.route("GET "+p+"/candidates", []string{"limit", "after"}, h.listCandidates)
	h.route("POST "+p+"/candidates/{id}/activate", nil, h.decide(h.rt.Reviewer().Activate))
	h.route("POST "+p+"/candidates/{id}/reject", nil, h.decide(h.rt.Reviewer().Reject))
	h.route("POST "+p+"/memories/{id}/correct", nil, h.correct)
	h.route("POST "+p+"/memories/{id}/forget", nil, h.decide(h.rt.Reviewer().Forget))
	h.route("POST "+p+"/memories/{id}/erase", nil, h.decide(h.rt.Reviewer().Erase))
	h.route("GET "+p+"/memories/{id}/history", nil, h.history)
	h.route("POST "+p+"/purge", nil, h.purge)
	h.route("GET "+p+"/purge", nil, h.purgeStatusRoute)
}

// healthJSON is the /healthz body: a status word plus memorykit's
// content-free health report (lifecycle state and every background actor's
// state, reason code, since-when and failure count).
type healthJSON struct {
	// Status is "ok", "degraded" (some actor is not running),
	// "overloaded" (the runtime is turning requests away) or "draining"
	// (the Host is shutting down).
	Status string `json:"status"`
	mkruntime.Health
}

// health answers 200 while the Host serves and every background actor
// runs; 503 with the same report once the Host shuts down or while any
// actor backs off or has stopped, so a load balancer or orchestrator sees
// a Host whose writes would never be embedded.
func (h *Host) health(w http.ResponseWriter, _ *http.Request) {
	body := healthJSON{Status: "ok", Health: h.rt.Health()}
	switch {
	case h.closing.Load():
		body.Status = "draining"
	case !body.OK:
		body.Status = "degraded"
	case h.overloaded():
		body.Status = "overloaded"
	}
	status := http.StatusOK
	if body.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, body)
}

// sourceJSON is a memorykit.Source on the wire.
type sourceJSON struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
}

func toSources(in []sourceJSON) []memorykit.Source {
	if in == nil {
		return nil
	}
	out := make([]memorykit.Source, len(in))
	for i, s := range in {
		out[i] = memorykit.Source{Kind: s.Kind, Ref: s.Ref}
	}
	return out
}

func fromSources(in []memorykit.Source) []sourceJSON {
	out := make([]sourceJSON, len(in))
	for i, s := range in {
		out[i] = sourceJSON{Kind: s.Kind, Ref: s.Ref}
	}
	return out
}

// recordJSON is a memorykit.Record on the wire.
type recordJSON struct {
	ID             string            `json:"id"`
	Kind           string            `json:"kind"`
	Key            string            `json:"key"`
	Content        string            `json:"content"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	Sources        []sourceJSON      `json:"sources,omitempty"`
	Status         string            `json:"status"`
	Version        int64             `json:"version"`
	EffectiveFrom  time.Time         `json:"effective_from"`
	EffectiveUntil *time.Time        `json:"effective_until,omitempty"`
	CreatedBy      string            `json:"created_by"`
	TouchedBy      string            `json:"touched_by"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

func actorString(a memorykit.Actor) string { return string(a.Kind) + ":" + a.ID }

func toRecordJSON(r memorykit.Record) recordJSON {
	out := recordJSON{
		ID: r.ID, Kind: string(r.Kind), Key: r.Key, Content: r.Content, Metadata: r.Metadata,
		Sources: fromSources(r.Sources), Status: string(r.Status), Version: r.Version,
		EffectiveFrom: r.EffectiveFrom, CreatedBy: actorString(r.CreatedBy), TouchedBy: actorString(r.TouchedBy),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if !r.EffectiveUntil.IsZero() {
		until := r.EffectiveUntil
		out.EffectiveUntil = &until
	}
	return out
}

// writeRequest is an explicit, trusted write by the caller.
type writeRequest struct {
	Kind           string            `json:"kind"`
	Key            string            `json:"key"`
	Content        string            `json:"content"`
	Metadata       map[string]string `json:"metadata"`
	Sources        []sourceJSON      `json:"sources"`
	EffectiveFrom  *time.Time        `json:"effective_from"`
	EffectiveUntil *time.Time        `json:"effective_until"`
	Reason         string            `json:"reason"`
}

// write is the trusted explicit write: active at once. Any failure answers
// with the fixed text 项目记忆未保存.
func (h *Host) write(w http.ResponseWriter, r *http.Request, c call) {
	var req writeRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if rej := checkWrite(req); rej != nil {
		writeNotSaved(w, rej)
		return
	}
	in := writer.Input{
		Kind: memorykit.Kind(req.Kind), Key: req.Key, Content: req.Content,
		Metadata: req.Metadata, Sources: toSources(req.Sources), Reason: req.Reason,
	}
	if req.EffectiveFrom != nil {
		in.EffectiveFrom = *req.EffectiveFrom
	}
	if req.EffectiveUntil != nil {
		in.EffectiveUntil = *req.EffectiveUntil
	}
	res, err := h.rt.Writer().WriteExplicit(r.Context(), c.caller.principal, c.scope, in)
	if err != nil {
		writeNotSaved(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"outcome": res.Outcome, "memory": toRecordJSON(res.Record)})
}

// checkWrite refuses what the library would otherwise take silently: blank
// content (white space or invisible characters only), and an
// effective_from or effective_until of the zero time, which would read as
// "now" or "no end".
func checkWrite(req writeRequest) error {
	const op = "host.write"
	switch {
	case blank(req.Content):
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidInput, Field: "content", Reason: "blank"}
	case req.EffectiveFrom != nil && req.EffectiveFrom.IsZero():
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidInput, Field: "effective_from", Reason: "zero_time"}
	case req.EffectiveUntil != nil && req.EffectiveUntil.IsZero():
		return &memorykit.Error{Op: op, Kind: memorykit.ErrInvalidInput, Field: "effective_until", Reason: "zero_time"}
	}
	return nil
}

// searchRequest asks recall directly, as the caller.
type searchRequest struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results"`
}

// hitJSON is one recalled memory with the channels that found it.
type hitJSON struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind"`
	Key       string   `json:"key"`
	Content   string   `json:"content"`
	Truncated bool     `json:"truncated"`
	Score     float64  `json:"score"`
	Channels  []string `json:"channels"`
}

// search runs recall (all channels, fused, within the policy's budgets) for
// the caller, who needs the read permission.
func (h *Host) search(w http.ResponseWriter, r *http.Request, c call) {
	var req searchRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if req.Query == "" {
		writeError(w, http.StatusUnprocessableEntity, "invalid_input", "empty", "query")
		return
	}
	if blank(req.Query) {
		writeError(w, http.StatusUnprocessableEntity, "invalid_input", "blank", "query")
		return
	}
	if req.MaxResults < 0 {
		writeError(w, http.StatusUnprocessableEntity, "invalid_input", "negative", "max_results")
		return
	}
	res, err := h.rt.Engine().Recall(r.Context(), recall.Request{
		Principal: c.caller.principal, Scope: c.scope, Query: req.Query, MaxItems: req.MaxResults,
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	hits := make([]hitJSON, 0, len(res.Entries))
	for _, e := range res.Entries {
		channels := make([]string, 0, len(e.Ranks))
		for ch := range e.Ranks {
			channels = append(channels, string(ch))
		}
		sort.Strings(channels)
		hits = append(hits, hitJSON{
			ID: e.ID, Kind: string(e.Kind), Key: e.Key, Content: e.Content,
			Truncated: e.Truncated, Score: e.Score, Channels: channels,
		})
	}
	markDegraded(w, res.Degraded, res.Trace.Reason)
	writeJSON(w, http.StatusOK, map[string]any{"degraded": res.Degraded, "memories": hits})
}

// read returns one memory the caller could recall: active, currently
// effective, in this Scope. Anything else is 404, exactly like an unknown
// ID, so a reader learns nothing about candidates, forgotten memory or other
// projects. Reviewers see the rest through candidates and history.
func (h *Host) read(w http.ResponseWriter, r *http.Request, c call) {
	ctx := r.Context()
	if err := memorykit.Authorize(ctx, h.dir, c.caller.principal, memorykit.PermRead, c.scope); err != nil {
		writeErr(w, err)
		return
	}
	id := r.PathValue("id")
	notFound := &memorykit.Error{Op: "host.read", Kind: memorykit.ErrNotFound, Reason: "not_found"}
	if storekit.ValidateID("host.read", "id", id) != nil {
		writeErr(w, notFound)
		return
	}
	rec, err := h.store.Get(ctx, c.scope, id)
	if err != nil {
		writeErr(w, err)
		return
	}
	if !rec.Recallable(c.scope, h.clock.Now()) {
		writeErr(w, notFound)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"memory": toRecordJSON(rec)})
}

// listCandidates lists candidates waiting for review, by ID, one page at a
// time (?limit=1..100&after=<id>).
func (h *Host) listCandidates(w http.ResponseWriter, r *http.Request, c call) {
	// Every invalid_input is 422, whether the value does not parse (abc)
	// or is out of range (0): one kind, one status.
	page := reviewer.Page{Limit: defaultPageSize, AfterID: c.query.Get("after")}
	if s := c.query.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, "invalid_input", "not_a_number", "limit")
			return
		}
		page.Limit = n
	}
	if page.AfterID != "" && storekit.ValidateID("host.candidates", "after", page.AfterID) != nil {
		writeError(w, http.StatusUnprocessableEntity, "invalid_input", "bad_id", "after")
		return
	}
	cands, err := h.rt.Reviewer().ListCandidates(r.Context(), c.caller.principal, c.scope, page)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]candidateJSON, len(cands))
	for i, cand := range cands {
		out[i] = toCandidateJSON(cand)
	}
	body := map[string]any{"candidates": out}
	if len(cands) == page.Limit {
		body["next_after"] = cands[len(cands)-1].Record.ID
	}
	writeJSON(w, http.StatusOK, body)
}

// candidateJSON is a candidate on the wire: the record's fields, then its
// review hints. supersedes is null when activation replaces nothing that
// is in effect; similar is always a list.
type candidateJSON struct {
	recordJSON
	Supersedes    *recordJSON `json:"supersedes"`
	Similar       []hintJSON  `json:"similar"`
	HintsDegraded string      `json:"hints_degraded,omitempty"`
}

// hintJSON is one similar active record of the project.
type hintJSON struct {
	ID        string  `json:"id"`
	Kind      string  `json:"kind"`
	Key       string  `json:"key"`
	Content   string  `json:"content"`
	Truncated bool    `json:"truncated"`
	Version   int64   `json:"version"`
	Score     float64 `json:"score"`
	Reason    string  `json:"reason"`
}

func toCandidateJSON(c reviewer.Candidate) candidateJSON {
	out := candidateJSON{recordJSON: toRecordJSON(c.Record), Similar: make([]hintJSON, len(c.Similar)), HintsDegraded: c.HintsDegraded}
	if c.Supersedes != nil {
		sup := toRecordJSON(*c.Supersedes)
		out.Supersedes = &sup
	}
	for i, h := range c.Similar {
		out.Similar[i] = hintJSON{ID: h.ID, Kind: string(h.Kind), Key: h.Key, Content: h.Content, Truncated: h.Truncated,
			Version: h.Version, Score: h.Score, Reason: h.Reason}
	}
	return out
}

// decisionRequest is the optional body of activate, reject, forget and
// erase.
type decisionRequest struct {
	Reason        string `json:"reason"`
	ExpectVersion int64  `json:"expect_version"`
}

// decide adapts one reviewer action (activate, reject, forget, erase) to a
// route. The reviewer authorizes: review, or erase for Erase.
func (h *Host) decide(action func(ctx context.Context, p memorykit.Principal, s memorykit.Scope, d reviewer.Decision) (memorykit.Record, error)) func(http.ResponseWriter, *http.Request, call) {
	return func(w http.ResponseWriter, r *http.Request, c call) {
		var req decisionRequest
		if !decodeBody(w, r, &req, true) {
			return
		}
		rec, err := action(r.Context(), c.caller.principal, c.scope, reviewer.Decision{
			ID: r.PathValue("id"), ExpectVersion: req.ExpectVersion, Reason: req.Reason,
		})
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"memory": toRecordJSON(rec)})
	}
}

// correctRequest replaces a memory's content and sources.
type correctRequest struct {
	Content       string            `json:"content"`
	Sources       []sourceJSON      `json:"sources"`
	Metadata      map[string]string `json:"metadata"`
	Reason        string            `json:"reason"`
	ExpectVersion int64             `json:"expect_version"`
}

// correct writes a new revision with new content (a review action). Like
// every memory write, a failure carries 项目记忆未保存.
func (h *Host) correct(w http.ResponseWriter, r *http.Request, c call) {
	var req correctRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if blank(req.Content) {
		writeNotSaved(w, &memorykit.Error{Op: "host.correct", Kind: memorykit.ErrInvalidInput, Field: "content", Reason: "blank"})
		return
	}
	rec, err := h.rt.Reviewer().Correct(r.Context(), c.caller.principal, c.scope, reviewer.CorrectionInput{
		Decision: reviewer.Decision{ID: r.PathValue("id"), ExpectVersion: req.ExpectVersion, Reason: req.Reason},
		Content:  req.Content, Sources: toSources(req.Sources), Metadata: req.Metadata,
	})
	if err != nil {
		writeNotSaved(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"memory": toRecordJSON(rec)})
}

// revisionJSON is one audit entry.
type revisionJSON struct {
	Version     int64        `json:"version"`
	Action      string       `json:"action"`
	Actor       string       `json:"actor"`
	Reason      string       `json:"reason,omitempty"`
	Status      string       `json:"status"`
	ContentHash string       `json:"content_hash"`
	Content     string       `json:"content"`
	Sources     []sourceJSON `json:"sources,omitempty"`
	At          time.Time    `json:"at"`
}

// history returns a memory's audit trail, oldest first (review
// permission). After an erase the snapshots hold no content.
func (h *Host) history(w http.ResponseWriter, r *http.Request, c call) {
	revs, err := h.rt.Reviewer().History(r.Context(), c.caller.principal, c.scope, r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]revisionJSON, len(revs))
	for i, v := range revs {
		out[i] = revisionJSON{
			Version: v.Version, Action: string(v.Action), Actor: actorString(v.Actor), Reason: v.Reason,
			Status: string(v.Status), ContentHash: v.ContentHash, Content: v.Content,
			Sources: fromSources(v.Sources), At: v.At,
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"revisions": out})
}

// purgeRequest names why the project is purged, as a reason code.
type purgeRequest struct {
	ReasonCode string `json:"reason_code"`
}

// purgeJSON is the deletion report: ids, counts, times and the report's
// digest; no content.
type purgeJSON struct {
	Project      string    `json:"project"`
	Actor        string    `json:"actor"`
	ReasonCode   string    `json:"reason_code"`
	Records      int       `json:"records"`
	RecordIDs    []string  `json:"record_ids"`
	Revisions    int       `json:"revisions"`
	Embeddings   int       `json:"embeddings"`
	Jobs         int       `json:"jobs"`
	QueueEntries int       `json:"queue_entries"`
	StartedAt    time.Time `json:"started_at"`
	FinishedAt   time.Time `json:"finished_at"`
	Digest       string    `json:"digest"`
}
