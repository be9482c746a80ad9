package runtime

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/writer"
)

// ImportOutcome says what Import did with one item.
type ImportOutcome string

const (
	// ImportStored: the item is stored as an active record of the caller.
	ImportStored ImportOutcome = "stored"
	// ImportRejected: nothing was stored for the item; see Reason.
	ImportRejected ImportOutcome = "rejected"
)

// ImportResult is the content-free report on one imported item.
type ImportResult struct {
	// Outcome is ImportStored or ImportRejected.
	Outcome ImportOutcome
	// ID is the stored record's ID; empty when rejected.
	ID string
	// Field names the input a rejection is about ("content", "key" ...),
	// when there is one.
	Field string
	// Reason is a reason code for a rejection ("content_rejected",
	// "too_long", "already_exists" ...); empty when stored.
	Reason string
}

// Import is the governed bulk write of the Session's caller: every item
// becomes an active record, as Remember would make it, but many go to the
// store per call. It answers ErrDraining after Drain (as every request path
// does), and refuses the whole import with a typed error unless the caller
// is a user or a trusted tool holding PermWrite on the Session's Scope. Then it checks every item with
// the write Limits and the Host's ContentValidator; an item that fails is
// rejected with a reason code and the others go on. Valid items are written
// in order in store batches of at most Limits.MaxListSize (any number of
// items is accepted); an item the store refuses (a taken ID, a key
// governed elsewhere) is rejected alone and the rest of its batch is
// written again without it.
//
// The results are in item order. Each stored batch emits one
// EventWriteStored with its record IDs and each rejection one
// EventWriteFailed with its reason code. Stored records are pending
// embedding like any other write; Runtime.AwaitEmbedded waits for them.
//
// When the store fails as a whole (unavailable, ctx ended) Import stops and
// returns the results so far, the unwritten items rejected with that
// error's reason code, together with the typed error.
func (s *Session) Import(ctx context.Context, items []writer.Input) ([]ImportResult, error) {
	const op = "runtime.import"
	r := s.rt
	if err := r.gate.check(op); err != nil {
		return nil, err
	}
	caller := s.req.Caller
	if caller.Actor.Kind != memorykit.ActorUser && caller.Actor.Kind != memorykit.ActorTool {
		// As for Remember: only a user or a trusted tool writes active
		// records directly.
		s.importFailed("actor_kind_not_trusted")
		return nil, &memorykit.Error{Op: op, Kind: memorykit.ErrForbidden, Field: "caller", Reason: "actor_kind_not_trusted"}
	}
	if err := memorykit.Authorize(ctx, r.cfg.Authorizer, caller, memorykit.PermWrite, s.req.Scope); err != nil {
		s.importFailed(memorykit.ReasonCode(err))
		return nil, storekit.Contain(op, err)
	}
	guard := r.cfg.Guard
	results := make([]ImportResult, len(items))
	var valid []int // positions of the items that passed the guard
	records := make([]memorykit.NewRecord, len(items))
	for i, in := range items {
		nr, err := guard.CheckNew(ctx, op, memorykit.NewRecord{
			Scope: s.req.Scope, Kind: in.Kind, Key: in.Key, Content: in.Content,
			Metadata: in.Metadata, Sources: in.Sources, Status: memorykit.StatusActive,
			EffectiveFrom: in.EffectiveFrom, EffectiveUntil: in.EffectiveUntil,
			Actor: caller.Actor, Reason: in.Reason,
		})
		if err != nil {
			if ctx.Err() != nil {
				return s.abandon(results, memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", ctx.Err()))
			}
			results[i] = s.reject(err)
			continue
		}
		records[i] = nr
		valid = append(valid, i)
	}
	chunk := guard.Limits().MaxListSize
	for start := 0; start < len(valid); start += chunk {
		end := min(start+chunk, len(valid))
		if err := s.importChunk(ctx, op, valid[start:end], records, results); err != nil {
			return s.abandon(results, err)
		}
	}
	return results, nil
}

// importChunk writes one batch, dropping the items the store refuses.
func (s *Session) importChunk(ctx context.Context, op string, pos []int, records []memorykit.NewRecord, results []ImportResult) error {
	r := s.rt
	bc, ok := r.cfg.Stores.Lifecycle.(storekit.BatchCreator)
	if !ok {
		return s.importEach(ctx, op, pos, records, results)
	}
	pos = append([]int(nil), pos...)
	for len(pos) > 0 {
		if err := r.gate.check(op); err != nil {
			return err
		}
		batch := make([]storekit.BatchItem, len(pos))
		for j, i := range pos {
			batch[j] = storekit.BatchItem{Record: records[i]}
		}
		recs, err := bc.CreateBatch(ctx, batch)
		if err == nil {
			ids := make([]string, len(recs))
			for j, i := range pos {
				results[i] = ImportResult{Outcome: ImportStored, ID: recs[j].ID}
				ids[j] = recs[j].ID
			}
			s.importStored(ids)
			return nil
		}
		j, ok := batchPosition(err, len(pos))
		if !ok || memorykit.IsRecoverable(err) || ctx.Err() != nil {
			return storekit.Contain(op, err)
		}
		results[pos[j]] = s.reject(err)
		pos = append(pos[:j], pos[j+1:]...)
	}
	return nil
}

// importEach writes item by item, for a store without CreateBatch.
func (s *Session) importEach(ctx context.Context, op string, pos []int, records []memorykit.NewRecord, results []ImportResult) error {
	for _, i := range pos {
		if err := s.rt.gate.check(op); err != nil {
			return err
		}
		rec, err := s.rt.cfg.Stores.Lifecycle.Create(ctx, records[i])
		switch {
		case err == nil:
			results[i] = ImportResult{Outcome: ImportStored, ID: rec.ID}
			s.importStored([]string{rec.ID})
		case memorykit.IsRecoverable(err) || ctx.Err() != nil:
			return storekit.Contain(op, err)
		default:
			results[i] = s.reject(err)
		}
	}
	return nil
}

func (s *Session) importStored(ids []string) {
	s.rt.cfg.Events.Emit(memorykit.Event{
		Kind: memorykit.EventWriteStored, At: s.rt.cfg.Clock.Now(), RecordIDs: ids,
		Actor: actorLabel(s.req.Caller.Actor), Count: len(ids), Reason: "import",
	}.WithScope(s.req.Scope))
}

// batchPosition reads the item position BatchItemError put in err's field.
func batchPosition(err error, n int) (int, bool) {
	var e *memorykit.Error
	if !errors.As(err, &e) {
		return 0, false
	}
	rest, ok := strings.CutPrefix(e.Field, "items[")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	i, err2 := strconv.Atoi(num)
	if err2 != nil || i < 0 || i >= n {
		return 0, false
	}
	return i, true
}

// reject reports one refused item: a content-free result and event.
func (s *Session) reject(err error) ImportResult {
	res := ImportResult{Outcome: ImportRejected, Reason: memorykit.ReasonCode(err)}
	var e *memorykit.Error
	if errors.As(err, &e) {
		field := e.Field
		if _, rest, ok := strings.Cut(field, "]."); ok && strings.HasPrefix(field, "items[") {
			field = rest
		} else if strings.HasPrefix(field, "items[") {
			field = ""
		}
		res.Field = field
	}
	s.importFailed(res.Reason)
	return res
}

// abandon marks every item not yet stored or rejected as rejected with
// err's reason code and returns the results with err.
func (s *Session) abandon(results []ImportResult, err error) ([]ImportResult, error) {
	code := memorykit.ReasonCode(err)
	for i := range results {
		if results[i].Outcome == "" {
			results[i] = ImportResult{Outcome: ImportRejected, Reason: code}
		}
	}
	s.importFailed(code)
	return results, err
}

func (s *Session) importFailed(reason string) {
	s.rt.cfg.Events.Emit(memorykit.Event{
		Kind: memorykit.EventWriteFailed, At: s.rt.cfg.Clock.Now(),
		Actor: actorLabel(s.req.Caller.Actor), Reason: reason,
	}.WithScope(s.req.Scope))
}

// actorLabel is the "kind:id" of a validated actor.
func actorLabel(a memorykit.Actor) string { return string(a.Kind) + ":" + a.ID }

// Get is the governed read of one record: it answers ErrDraining after
// Drain, authorizes the Session's caller for PermRead on the Scope, and
// returns the record only when it may reach a model now (active, currently
// effective, in the Session's Scope; see memorykit.Record.Recallable).
// Anything else, including a record of another Scope, is the same
// ErrNotFound, so a caller cannot probe what it may not read.
func (s *Session) Get(ctx context.Context, id string) (memorykit.Record, error) {
	const op = "runtime.get"
	r := s.rt
	if err := r.gate.check(op); err != nil {
		return memorykit.Record{}, err
	}
	notFound := &memorykit.Error{Op: op, Kind: memorykit.ErrNotFound, Reason: "not_found"}
	if err := storekit.ValidateID(op, "id", id); err != nil {
		return memorykit.Record{}, err
	}
	if err := memorykit.Authorize(ctx, r.cfg.Authorizer, s.req.Caller, memorykit.PermRead, s.req.Scope); err != nil {
		return memorykit.Record{}, storekit.Contain(op, err)
	}
	rec, err := r.records.Get(ctx, s.req.Scope, id)
	if errors.Is(err, memorykit.ErrNotFound) {
		return memorykit.Record{}, notFound
	}
	if err != nil {
		return memorykit.Record{}, storekit.Contain(op, err)
	}
	if !rec.Recallable(s.req.Scope, r.cfg.Clock.Now()) {
		return memorykit.Record{}, notFound
	}
	return rec, nil
}
