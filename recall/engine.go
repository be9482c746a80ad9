package recall

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Config holds an Engine's parts. Every field is required: there is no
// default store, embedder, authorizer, policy, clock, event sink or logger.
type Config struct {
	// Store runs the recall channels.
	Store storekit.RecallStore
	// Embedder embeds the query; its Profile and Dimension must equal the
	// policy's EmbeddingProfile and EmbeddingDimension. With a LexicalOnly
	// policy there is no vector channel and Embedder must be nil.
	Embedder memorykit.Embedder
	// Authorizer is the Host's fail-closed project authorizer.
	Authorizer memorykit.Authorizer
	// Policy is the versioned RecallPolicy; it must pass Validate.
	Policy memorykit.RecallPolicy
	// Clock measures the recall deadline and the effective windows.
	Clock clock.Clock
	// Events receives content-free recall events.
	Events memorykit.EventSink
	// Logger receives content-free diagnostics. Pass zap.NewNop() to
	// discard them.
	Logger *zap.Logger
}

// Engine runs recall. It is safe for concurrent use.
type Engine struct {
	store  storekit.RecallStore
	emb    memorykit.Embedder
	az     memorykit.Authorizer
	policy memorykit.RecallPolicy
	clock  clock.Clock
	events memorykit.EventSink
	log    *zap.Logger
}

// New validates cfg and returns an Engine. A missing part, an invalid
// policy, or an embedder whose profile or dimension differs from the
// policy's is an error.
func New(cfg Config) (*Engine, error) {
	const op = "recall.new"
	missing := func(field string) error {
		return memorykit.ConfigError(op, field, "missing")
	}
	switch {
	case cfg.Store == nil:
		return nil, missing("store")
	case cfg.Authorizer == nil:
		return nil, missing("authorizer")
	case cfg.Clock == nil:
		return nil, missing("clock")
	case cfg.Events == nil:
		return nil, missing("events")
	case cfg.Logger == nil:
		return nil, missing("logger")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if err := CheckEmbedder(op, cfg.Policy, cfg.Embedder); err != nil {
		return nil, err
	}
	return &Engine{
		store:  cfg.Store,
		emb:    cfg.Embedder,
		az:     cfg.Authorizer,
		policy: cfg.Policy,
		clock:  cfg.Clock,
		events: cfg.Events,
		log:    cfg.Logger.Named("recall"),
	}, nil
}

// Policy returns the engine's RecallPolicy.
func (e *Engine) Policy() memorykit.RecallPolicy { return e.policy }

// Request is one recall. Principal and Scope come from the Host's trusted
// metadata, never from a model.
type Request struct {
	Principal memorykit.Principal
	Scope     memorykit.Scope
	// Query is free text; only its last MaxQueryRunes runes are used.
	Query string
	// Keys are optional explicit keys for the exact channel, asked in
	// addition to those derived from the query. They are canonicalised
	// with storekit.NormalizeKey; at most MaxQueryTerms are allowed.
	Keys []string
	// MaxItems, MaxTokens and MaxEntryRunes may tighten the policy's
	// budgets for this request: zero means the policy's value, a positive
	// value is used when it is smaller than the policy's, and a negative
	// value is ErrInvalidInput. They can never loosen the policy.
	MaxItems      int
	MaxTokens     int
	MaxEntryRunes int
	// Reserve is how many of the MaxTokens the caller spends outside the
	// entries (a header and footer around them). The entries get
	// MaxTokens - Reserve.
	Reserve int
	// Cost measures one entry as the caller will render it, in tokens; the
	// token budget is enforced with it. Nil means DefaultCost.
	Cost func(Entry) int
}

// Entry is one recalled memory, cut to the entry budget.
type Entry struct {
	ID   string
	Kind memorykit.Kind
	// Key and Content are the record's, cut to MaxEntryRunes runes each.
	Key     string
	Content string
	// Truncated reports that Key or Content was cut.
	Truncated bool
	// Score is the fused RRF score; Ranks the rank in each channel used.
	Score float64
	Ranks map[memorykit.Channel]int
	// Version, EffectiveFrom and UpdatedAt are the record's.
	Version       int64
	EffectiveFrom time.Time
	UpdatedAt     time.Time
	// Tokens is the entry's cost under the request's cost function.
	Tokens int
}

// DefaultCost estimates an entry's tokens as its ID, kind, key and content
// plus a few tokens of framing.
func DefaultCost(en Entry) int {
	return storekit.EstimateTokens(en.ID) + storekit.EstimateTokens(string(en.Kind)) +
		storekit.EstimateTokens(en.Key) + storekit.EstimateTokens(en.Content) + 4
}

// Result is what one recall returns.
type Result struct {
	// Entries are the kept memories, best first.
	Entries []Entry
	// Tokens is the summed cost of Entries.
	Tokens int
	// Degraded reports that recall as a whole degraded (whole-store
	// recoverable failure or the recall deadline): Entries is empty and
	// the caller should go on without memory.
	Degraded bool
	// Trace accounts for every record any channel returned.
	Trace Trace
}

// errRecallDeadline is the cancellation cause recall's own deadline sets.
var errRecallDeadline = errors.New("recall deadline")

// caps are a request's effective budgets.
type caps struct {
	items, tokens, entryRunes, budget int
}

// Recall runs one recall. See the package documentation for the steps,
// the degradation rules and what fails closed. Every failure that fails
// closed leaves through one exit here, which logs it.
func (e *Engine) Recall(ctx context.Context, req Request) (Result, error) {
	const op = "recall"
	if err := ctx.Err(); err != nil {
		return Result{}, memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", err)
	}
	res, err := e.recall(ctx, op, req)
	if fc, ok := err.(failClosed); ok {
		e.failed(req.Scope, fc.error)
		return Result{}, fc.error
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// failClosed marks an error recall fails closed with: Recall logs it
// (failed) before returning it. Errors without the mark (the caller's
// context ended, admission turned the recall away) are returned unlogged.
type failClosed struct{ error }

// recallPlan is what a request asks for once checked: its budgets, the
// sanitised query with its terms and exact keys, and the trace so far.
type recallPlan struct {
	c       caps
	query   string
	terms   []string
	keys    []string
	blank   bool
	lexical bool
	trace   Trace
}

// recall runs the phases of one recall: plan the request, embed the query,
// search the store, choose the entries.
func (e *Engine) recall(ctx context.Context, op string, req Request) (Result, error) {
	start := e.clock.Now()
	pl, err := e.plan(ctx, op, req)
	if err != nil {
		return Result{}, err
	}
	if len(pl.keys) == 0 && len(pl.terms) == 0 && pl.blank {
		e.completed(req.Scope, nil, "empty_query", start)
		return Result{Trace: pl.trace}, nil
	}

	// One deadline on the injected clock covers the embedding and the store
	// call. It is a cancellation with a cause rather than a context
	// deadline, so no library below sees an instant from a clock it does
	// not share.
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := e.clock.AfterFunc(e.policy.Deadline, func() { cancel(errRecallDeadline) })
	defer timer.Stop()
	ownDeadline := func() bool { return ctx.Err() == nil && errors.Is(context.Cause(dctx), errRecallDeadline) }

	vector, late, err := e.queryVector(ctx, dctx, op, req, &pl, ownDeadline)
	if err != nil {
		return Result{}, err
	}
	if late {
		return e.degraded(req.Scope, pl.trace, "deadline", start), nil
	}
	q := e.storeQuery(req, pl, vector)
	before := e.clock.Now()
	res, degraded, err := e.search(ctx, dctx, op, q, ownDeadline)
	if err != nil {
		return Result{}, err
	}
	if degraded != "" {
		return e.degraded(req.Scope, pl.trace, degraded, start), nil
	}
	after := e.clock.Now()
	hits, err := checkResult(op, q, res, before, after)
	if err != nil {
		return Result{}, failClosed{err}
	}
	if res.VectorErr != nil {
		if !memorykit.IsRecoverable(res.VectorErr) {
			return Result{}, failClosed{storekit.ContainAs(op, memorykit.ErrIntegrity, "vector_failed", res.VectorErr)}
		}
		ch := pl.trace.channel(memorykit.ChannelVector)
		ch.Degraded, ch.Reason = true, memorykit.ReasonCode(res.VectorErr)
	}
	if ownDeadline() {
		// The store answered, but too late: nothing of it is used.
		pl.trace.Records = traceAll(res, hits, DroppedDeadline)
		return e.degraded(req.Scope, pl.trace, "deadline", start), nil
	}
	return e.choose(req, pl.c, res, hits, after, pl.trace, start), nil
}

// plan authorises the request, works out its budgets, keys and terms,
// and starts its trace.
func (e *Engine) plan(ctx context.Context, op string, req Request) (recallPlan, error) {
	if err := memorykit.Authorize(ctx, e.az, req.Principal, memorykit.PermRead, req.Scope); err != nil {
		return recallPlan{}, failClosed{err}
	}
	c, err := e.caps(op, req)
	if err != nil {
		return recallPlan{}, failClosed{err}
	}
	explicit, err := e.explicitKeys(op, req.Keys)
	if err != nil {
		return recallPlan{}, failClosed{err}
	}
	p := e.policy
	query := storekit.SanitizeQuery(req.Query, p.MaxQueryRunes)
	pl := recallPlan{
		c:     c,
		query: query,
		trace: Trace{
			PolicyVersion: p.Version,
			TermsVersion:  storekit.TermsVersion,
			QueryRunes:    utf8.RuneCountInString(query),
			QueryCut:      utf8.RuneCountInString(strings.ToValidUTF8(req.Query, "\uFFFD")) > p.MaxQueryRunes,
			TokenBudget:   c.budget,
			Channels: []ChannelTrace{
				{Channel: memorykit.ChannelExact}, {Channel: memorykit.ChannelFullText}, {Channel: memorykit.ChannelVector},
			},
		},
		terms:   storekit.SearchTerms(query, p.MaxQueryTerms),
		keys:    mergeKeys(explicit, storekit.ExactKeys(query, p.MaxQueryTerms), p.MaxQueryTerms),
		blank:   strings.TrimSpace(query) == "",
		lexical: p.LexicalOnly(),
	}
	pl.trace.Terms, pl.trace.ExactKeys = len(pl.terms), len(pl.keys)
	pl.trace.channel(memorykit.ChannelExact).Skipped = len(pl.keys) == 0
	pl.trace.channel(memorykit.ChannelFullText).Skipped = len(pl.terms) == 0
	pl.trace.channel(memorykit.ChannelVector).Skipped = pl.blank || pl.lexical
	return pl, nil
}

// queryVector embeds the query when the vector channel runs. A recoverable
// embedder failure degrades the vector channel (recorded in pl.trace); late
// reports that recall's own deadline passed while embedding (the vector
// channel is then marked degraded too).
func (e *Engine) queryVector(ctx, dctx context.Context, op string, req Request, pl *recallPlan, ownDeadline func() bool) (vector []float32, late bool, err error) {
	if pl.blank || pl.lexical {
		return nil, false, nil
	}
	v, err := e.embedQuery(dctx, pl.query)
	switch {
	case err == nil:
		return v, false, nil
	case ctx.Err() != nil:
		return nil, false, memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", ctx.Err())
	case ownDeadline():
		ch := pl.trace.channel(memorykit.ChannelVector)
		ch.Degraded, ch.Reason = true, "deadline"
		return nil, true, nil
	case memorykit.IsRecoverable(err):
		ch := pl.trace.channel(memorykit.ChannelVector)
		ch.Degraded, ch.Reason = true, memorykit.ReasonCode(err)
		e.vectorDegraded(req.Scope, nil, ch.Reason)
		return nil, false, nil
	default:
		// The Embedder is the Host's: its error may quote the query.
		return nil, false, failClosed{storekit.ContainAs("recall.embed", memorykit.ErrUnavailable, "embed_failed", err)}
	}
}

// storeQuery is the store's query for the plan and the query vector.
func (e *Engine) storeQuery(req Request, pl recallPlan, vector []float32) storekit.RecallQuery {
	p := e.policy
	q := storekit.RecallQuery{
		Scope:         req.Scope,
		ExactKeys:     pl.keys,
		Terms:         pl.terms,
		Vector:        vector,
		ExactLimit:    p.ExactLimit,
		FullTextLimit: p.FullTextLimit,
		VectorLimit:   p.VectorLimit,
	}
	if pl.lexical {
		// Stores check every limit but read VectorLimit only with a
		// Vector, which a lexical query never has.
		q.VectorLimit = 1
	}
	if vector != nil {
		q.Profile = p.EmbeddingProfile
	}
	return q
}

// search asks the store. A failure recall degrades on (its own deadline,
// a recoverable store failure) is reported as the degradation reason.
func (e *Engine) search(ctx, dctx context.Context, op string, q storekit.RecallQuery, ownDeadline func() bool) (storekit.RecallResult, string, error) {
	res, err := e.store.Recall(dctx, q)
	switch {
	case err == nil:
		return res, "", nil
	case ctx.Err() != nil:
		return res, "", memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", ctx.Err())
	case errors.Is(err, memorykit.ErrOverloaded):
		// The Runtime's admission turned the recall away: the caller
		// answers overload (a Host: 503 and Retry-After), not an empty
		// recall.
		return res, "", storekit.Contain(op, err)
	case ownDeadline():
		return res, "deadline", nil
	case memorykit.IsRecoverable(err):
		return res, "store_unavailable", nil
	default:
		return res, "", failClosed{storekit.ContainAs(op, memorykit.ErrUnavailable, "store_failed", err)}
	}
}

// choose fuses the channels and applies the budgets. hits is checkResult's
// index of res.
func (e *Engine) choose(req Request, c caps, res storekit.RecallResult, hits map[string]hitRanks, now time.Time, trace Trace, start time.Time) Result {
	p := e.policy
	vecDegraded := trace.channel(memorykit.ChannelVector).Degraded
	trace.channel(memorykit.ChannelExact).Hits = len(res.Exact)
	trace.channel(memorykit.ChannelFullText).Hits = len(res.FullText)
	trace.channel(memorykit.ChannelVector).Hits = len(res.Vector)
	trace.BelowThreshold = len(res.FullTextBelow)

	// The rankings' IDs share one backing array. The vector ranking holds
	// the hits at or above the similarity floor, ranked among themselves.
	floor := p.MinVectorSimilarity
	ids := make([]string, 0, len(res.Exact)+len(res.FullText)+len(res.Vector))
	ids = appendIDs(ids, res.Exact)
	exactIDs := ids[:len(ids):len(ids)]
	ids = appendIDs(ids, res.FullText)
	textIDs := ids[len(exactIDs):len(ids):len(ids)]
	rankings := [3]storekit.Ranking{
		{Channel: memorykit.ChannelExact, Weight: p.ExactWeight, IDs: exactIDs},
		{Channel: memorykit.ChannelFullText, Weight: p.FullTextWeight, IDs: textIDs},
	}
	n := 2
	if !vecDegraded {
		mark := len(ids)
		for _, h := range res.Vector {
			if floor <= 0 || h.Score >= floor {
				ids = append(ids, h.ID)
			}
		}
		rankings[n] = storekit.Ranking{Channel: memorykit.ChannelVector, Weight: p.VectorWeight, IDs: ids[mark:]}
		n++
	}
	fused := storekit.FuseRRFAt(p.RRFK, func(id string) time.Time { return res.Records[id].EffectiveFrom }, rankings[:n]...)

	cost := req.Cost
	if cost == nil {
		cost = DefaultCost
	}
	out := Result{}
	// Every record in hits gets exactly one trace record.
	trace.Records = slices.Grow(trace.Records, len(hits))
	var degradedIDs []string
	for _, f := range fused {
		h := hits[f.ID]
		h.traced = true
		hits[f.ID] = h
		tr := TraceRecord{ID: f.ID, Ranks: h.channelRanks(f.Ranks), Score: f.Score, BelowThresholdRank: int(h.below)}
		rec := res.Records[f.ID]
		switch {
		case !rec.Recallable(req.Scope, now):
			tr.Outcome = DroppedNotEffective
		case len(out.Entries) >= c.items:
			tr.Outcome = DroppedItemBudget
		default:
			en := entryOf(rec, f, c.entryRunes)
			en.Tokens = cost(en)
			if en.Tokens < 0 {
				en.Tokens = math.MaxInt32 // a broken cost function never fits
			}
			tr.Tokens, tr.Truncated = en.Tokens, en.Truncated
			if en.Tokens > c.budget-out.Tokens {
				tr.Outcome = DroppedTokenBudget
				break
			}
			tr.Outcome = Kept
			if out.Entries == nil {
				out.Entries = make([]Entry, 0, min(c.items, len(fused)))
			}
			out.Entries = append(out.Entries, en)
			out.Tokens += en.Tokens
		}
		trace.Records = append(trace.Records, tr)
	}
	// untraced marks id traced and reports whether it was not yet.
	untraced := func(id string) (hitRanks, bool) {
		h := hits[id]
		if h.traced {
			return h, false
		}
		h.traced = true
		hits[id] = h
		return h, true
	}
	// Records only a degraded channel returned.
	if vecDegraded {
		for _, v := range res.Vector {
			if h, ok := untraced(v.ID); ok {
				degradedIDs = append(degradedIDs, v.ID)
				trace.Records = append(trace.Records, TraceRecord{ID: v.ID, Ranks: h.channelRanks(nil), Outcome: DroppedChannelDegraded})
			}
		}
	} else if floor > 0 {
		for _, v := range res.Vector {
			if !(v.Score >= floor) {
				if h, ok := untraced(v.ID); ok {
					trace.Records = append(trace.Records, TraceRecord{ID: v.ID, Ranks: h.channelRanks(nil), Outcome: DroppedBelowVectorFloor})
				}
			}
		}
	}
	for _, b := range res.FullTextBelow {
		if h, ok := untraced(b.ID); ok {
			trace.Records = append(trace.Records, TraceRecord{ID: b.ID, Ranks: h.channelRanks(nil), BelowThresholdRank: b.Rank, Outcome: DroppedBelowThreshold})
		}
	}
	if vecDegraded && res.VectorErr != nil {
		e.vectorDegraded(req.Scope, degradedIDs, trace.channel(memorykit.ChannelVector).Reason)
	}
	trace.Items, trace.Tokens = len(out.Entries), out.Tokens
	out.Trace = trace
	kept := make([]string, len(out.Entries))
	for i, en := range out.Entries {
		kept[i] = en.ID
	}
	e.completed(req.Scope, kept, "ok", start)
	return out
}

// caps resolves the request's budgets against the policy.
func (e *Engine) caps(op string, req Request) (caps, error) {
	p := e.policy
	tighten := func(field string, policy, asked int) (int, error) {
		switch {
		case asked < 0:
			return 0, memorykit.FieldError(op, field, "negative")
		case asked == 0 || asked > policy:
			return policy, nil
		}
		return asked, nil
	}
	var c caps
	var err error
	if c.items, err = tighten("max_items", p.MaxItems, req.MaxItems); err != nil {
		return caps{}, err
	}
	if c.tokens, err = tighten("max_tokens", p.MaxTokens, req.MaxTokens); err != nil {
		return caps{}, err
	}
	if c.entryRunes, err = tighten("max_entry_runes", p.MaxEntryRunes, req.MaxEntryRunes); err != nil {
		return caps{}, err
	}
	if req.Reserve < 0 {
		return caps{}, memorykit.FieldError(op, "reserve", "negative")
	}
	c.budget = c.tokens - req.Reserve
	if c.budget < 0 {
		c.budget = 0
	}
	return c, nil
}

// explicitKeys canonicalises and bounds the request's explicit keys.
func (e *Engine) explicitKeys(op string, keys []string) ([]string, error) {
	if len(keys) > e.policy.MaxQueryTerms {
		return nil, memorykit.FieldError(op, "keys", "too_many")
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if !utf8.ValidString(k) {
			return nil, memorykit.FieldError(op, "keys", "invalid_utf8")
		}
		if n := storekit.NormalizeKey(k); n != "" {
			out = append(out, n)
		}
	}
	return out, nil
}

// CheckEmbedder reports an ErrInvalidConfig error (field "embedder") unless
// emb fits policy: nil for a LexicalOnly policy ("missing" otherwise),
// and otherwise of the policy's profile and dimension. op names the caller.
func CheckEmbedder(op string, policy memorykit.RecallPolicy, emb memorykit.Embedder) error {
	switch {
	case policy.LexicalOnly() && emb != nil:
		return memorykit.ConfigError(op, "embedder", "unused_with_lexical_policy")
	case policy.LexicalOnly():
		return nil
	case emb == nil:
		return memorykit.ConfigError(op, "embedder", "missing")
	case emb.Profile() != policy.EmbeddingProfile:
		return memorykit.ConfigError(op, "embedder", "profile_mismatch")
	case emb.Dimension() != policy.EmbeddingDimension:
		return memorykit.ConfigError(op, "embedder", "dimension_mismatch")
	}
	return nil
}

// embedQuery embeds the query and checks the vector's shape. A vector of
// the wrong length or with non-finite components is an integrity failure.
func (e *Engine) embedQuery(ctx context.Context, query string) ([]float32, error) {
	const op = "recall.embed"
	vs, err := e.emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 || len(vs[0]) != e.policy.EmbeddingDimension {
		return nil, memorykit.NewError(op, memorykit.ErrIntegrity, "embedding_shape")
	}
	nonzero := false
	for _, x := range vs[0] {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, memorykit.NewError(op, memorykit.ErrIntegrity, "embedding_not_finite")
		}
		if x != 0 {
			nonzero = true
		}
	}
	if !nonzero {
		return nil, memorykit.NewError(op, memorykit.ErrIntegrity, "embedding_zero")
	}
	return vs[0], nil
}

// checkResult verifies the store kept its contract: every record is
// recallable in the Scope, every hit names a record, ranks are 1-based and
// consecutive, no channel repeats a record or exceeds its limit, and no
// record is returned that no hit names. Any violation fails closed.
// Otherwise it returns every listed record's ranks (see hitRanks).
//
// The effective window is checked leniently across the store call (before
// and after are the engine's clock readings around it), so a record whose
// window opens or closes while recall runs is not mistaken for a broken
// store; choose later drops a record no longer effective.
func checkResult(op string, q storekit.RecallQuery, res storekit.RecallResult, before, after time.Time) (map[string]hitRanks, error) {
	bad := func(reason string) error { return memorykit.NewError(op, memorykit.ErrIntegrity, reason) }
	channels := [len(rankChannels)]struct {
		hits  []storekit.Hit
		limit int
	}{
		{res.Exact, q.ExactLimit},
		{res.FullText, q.FullTextLimit},
		{res.Vector, q.VectorLimit},
	}
	index := make(map[string]hitRanks, len(res.Exact)+len(res.FullText)+len(res.Vector)+len(res.FullTextBelow))
	for i, ch := range channels {
		if len(ch.hits) > ch.limit {
			return nil, bad("channel_over_limit")
		}
		if i == 2 && q.Vector == nil && len(ch.hits) > 0 {
			return nil, bad("unasked_vector_hits")
		}
		for j, h := range ch.hits {
			if h.Rank != j+1 {
				return nil, bad("bad_rank")
			}
			r := index[h.ID]
			if r.ranks[i] != 0 {
				return nil, bad("duplicate_hit")
			}
			if _, ok := res.Records[h.ID]; !ok {
				return nil, bad("hit_without_record")
			}
			r.ranks[i] = int32(h.Rank) // at most len(ch.hits)
			index[h.ID] = r
		}
	}
	if len(res.FullTextBelow) > q.FullTextLimit {
		return nil, bad("channel_over_limit")
	}
	for j, h := range res.FullTextBelow {
		if h.Rank != j+1 {
			return nil, bad("bad_rank")
		}
		r := index[h.ID]
		if r.ranks[1] != 0 {
			return nil, bad("below_threshold_also_kept")
		}
		if storekit.ValidateID(op, "id", h.ID) != nil {
			return nil, bad("bad_id")
		}
		if r.below == 0 {
			r.below = int32(h.Rank)
			index[h.ID] = r
		}
	}
	for id, rec := range res.Records {
		switch {
		case index[id].ranks == [len(rankChannels)]int32{}:
			return nil, bad("unnamed_record")
		case rec.ID != id:
			return nil, bad("record_id_mismatch")
		case storekit.ValidateID(op, "id", id) != nil:
			return nil, bad("bad_id")
		case rec.Scope != q.Scope:
			return nil, bad("record_out_of_scope")
		case rec.Status != memorykit.StatusActive:
			return nil, bad("record_not_active")
		case rec.EffectiveFrom.After(after):
			return nil, bad("record_not_yet_effective")
		case !rec.EffectiveUntil.IsZero() && !rec.EffectiveUntil.After(before):
			return nil, bad("record_expired")
		case !rec.Kind.Valid():
			return nil, bad("record_kind_unknown")
		}
	}
	return index, nil
}

// rankChannels are the channels of hitRanks.ranks, in checkResult's order.
var rankChannels = [...]memorykit.Channel{memorykit.ChannelExact, memorykit.ChannelFullText, memorykit.ChannelVector}

// hitRanks is where one record stands in a store result: its 1-based rank
// in each channel (rankChannels order) and among the matches below the
// full-text threshold (its first place there), 0 where it is absent; and
// whether choose has traced it yet.
type hitRanks struct {
	ranks  [len(rankChannels)]int32
	below  int32
	traced bool
}

// channelRanks returns the record's rank in every channel that returned
// it, or nil when none did. When fused holds exactly those ranks it is
// returned itself rather than a copy: fusion's maps are recall's own, so
// the trace may keep one.
func (h hitRanks) channelRanks(fused map[memorykit.Channel]int) map[memorykit.Channel]int {
	n, same := 0, fused != nil
	for i, r := range h.ranks {
		if r == 0 {
			continue
		}
		n++
		if got, ok := fused[rankChannels[i]]; !ok || got != int(r) {
			same = false
		}
	}
	switch {
	case n == 0:
		return nil
	case same && n == len(fused):
		return fused
	}
	m := make(map[memorykit.Channel]int, n)
	for i, r := range h.ranks {
		if r != 0 {
			m[rankChannels[i]] = int(r)
		}
	}
	return m
}

// entryOf cuts a record to the entry budget.
func entryOf(rec memorykit.Record, f storekit.Fused, runes int) Entry {
	key, cutKey := storekit.TruncateRunes(rec.Key, runes)
	content, cutContent := storekit.TruncateRunes(rec.Content, runes)
	ranks := make(map[memorykit.Channel]int, len(f.Ranks))
	for c, r := range f.Ranks {
		ranks[c] = r
	}
	return Entry{
		ID: rec.ID, Kind: rec.Kind, Key: key, Content: content, Truncated: cutKey || cutContent,
		Score: f.Score, Ranks: ranks, Version: rec.Version, EffectiveFrom: rec.EffectiveFrom, UpdatedAt: rec.UpdatedAt,
	}
}

// mergeKeys joins explicit and derived keys without duplicates, at most max.
func mergeKeys(explicit, derived []string, max int) []string {
	seen := make(map[string]bool)
	var out []string
	for _, list := range [][]string{explicit, derived} {
		for _, k := range list {
			if k == "" || seen[k] || len(out) >= max {
				continue
			}
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// appendIDs appends the hits' record IDs to ids.
func appendIDs(ids []string, hits []storekit.Hit) []string {
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	return ids
}

// traceAll lists every record res names with one outcome. index is
// checkResult's index of res.
func traceAll(res storekit.RecallResult, index map[string]hitRanks, o Outcome) []TraceRecord {
	out := make([]TraceRecord, 0, len(index))
	for _, hits := range [][]storekit.Hit{res.Exact, res.FullText, res.Vector, res.FullTextBelow} {
		for _, h := range hits {
			r := index[h.ID]
			if r.traced {
				continue
			}
			r.traced = true
			index[h.ID] = r
			out = append(out, TraceRecord{ID: h.ID, Ranks: r.channelRanks(nil), BelowThresholdRank: int(r.below), Outcome: o})
		}
	}
	return out
}

// degraded finishes a recall that yields no memory. start is when the
// recall began, for the event's Duration.
func (e *Engine) degraded(scope memorykit.Scope, trace Trace, reason string, start time.Time) Result {
	trace.Degraded, trace.Reason = true, reason
	now := e.clock.Now()
	e.events.Emit(memorykit.Event{
		Kind:     memorykit.EventRecallDegraded,
		At:       now,
		Reason:   reason,
		Duration: now.Sub(start),
	}.WithScope(scope))
	e.log.Warn("recall degraded: continuing without memory",
		zap.String("tenant_id", scope.TenantID), zap.String("subject_id", scope.SubjectID),
		zap.String("reason", reason), zap.Int("records_dropped", len(trace.Records)))
	return Result{Degraded: true, Trace: trace}
}

// vectorDegraded reports that only the vector channel was dropped.
func (e *Engine) vectorDegraded(scope memorykit.Scope, ids []string, reason string) {
	e.events.Emit(memorykit.Event{
		Kind:      memorykit.EventRecallDegraded,
		At:        e.clock.Now(),
		Channel:   memorykit.ChannelVector,
		RecordIDs: ids,
		Count:     len(ids),
		Reason:    reason,
	}.WithScope(scope))
	e.log.Warn("recall vector channel dropped",
		zap.String("tenant_id", scope.TenantID), zap.String("subject_id", scope.SubjectID),
		zap.String("reason", reason), zap.Int("records_dropped", len(ids)))
}

func (e *Engine) completed(scope memorykit.Scope, ids []string, reason string, start time.Time) {
	now := e.clock.Now()
	e.events.Emit(memorykit.Event{
		Kind:      memorykit.EventRecallCompleted,
		At:        now,
		RecordIDs: ids,
		Count:     len(ids),
		Reason:    reason,
		Duration:  now.Sub(start),
	}.WithScope(scope))
	e.log.Debug("recall completed",
		zap.String("tenant_id", scope.TenantID), zap.String("subject_id", scope.SubjectID),
		zap.Int("kept", len(ids)))
}

// failed logs a fail-closed recall.
func (e *Engine) failed(scope memorykit.Scope, err error) {
	s := scope
	// An invalid Scope, or one the principal may not read, is the
	// caller's choice: its identifiers are logged only once authorization
	// has succeeded.
	if s.Validate() != nil || errors.Is(err, memorykit.ErrForbidden) || errors.Is(err, memorykit.ErrInvalidScope) {
		s = memorykit.Scope{}
	}
	e.log.Warn("recall failed closed",
		zap.String("tenant_id", s.TenantID), zap.String("subject_id", s.SubjectID),
		zap.String("reason", memorykit.ReasonCode(err)), zap.String("kind", memorykit.KindCode(err)))
}
