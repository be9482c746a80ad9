package extraction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// Reason codes of dropped proposals (extraction.dropped events).
const (
	// DropExtraField: the proposal had a field outside the schema (such as
	// tenant, scope, status, actor or id).
	DropExtraField = "extra_field"
	// DropMissingField: kind, key or content was missing or null.
	DropMissingField = "missing_field"
	// DropUnknownKind: kind is not one of memorykit's kinds.
	DropUnknownKind = "unknown_kind"
	// DropBadSource: a source was neither "user" nor "assistant".
	DropBadSource = "bad_source"
	// DropUnchanged: the proposal repeats a related active memory (same
	// kind, canonical key and content).
	DropUnchanged = "unchanged"
	// DropDuplicate: an earlier proposal of the answer had the same kind
	// and canonical key.
	DropDuplicate = "duplicate"
	// DropOverMax: the answer had more than Limits.MaxProposals proposals
	// that passed; the later ones were dropped.
	DropOverMax = "over_max_proposals"
	// DropAnswerExtraField: the answer object had a field besides
	// "memories"; every proposal of it was dropped.
	DropAnswerExtraField = "answer_extra_field"
)

// A refused proposal is dropped with "invalid_" and the guard's field and
// reason code, such as "invalid_key_too_long", "invalid_content_empty" or
// "invalid_content_content_rejected" (the Host's ContentValidator).

// drop is one dropped proposal.
type drop struct{ reason string }

// badResponse is the recoverable error of an answer that is not the
// schema's shape.
func badResponse(reason string) error {
	return &memorykit.Error{Op: "extraction.check", Kind: memorykit.ErrUnavailable, Reason: "provider_bad_response",
		Field: reason, Retry: true}
}

// wireProposal is one proposal as the schema defines it. Pointers tell a
// missing or null field from an empty one.
type wireProposal struct {
	Kind    *string   `json:"kind"`
	Key     *string   `json:"key"`
	Content *string   `json:"content"`
	Sources *[]string `json:"sources"`
}

var schemaFields = map[string]bool{"kind": true, "key": true, "content": true, "sources": true}

// check parses an answer and returns the proposals that pass, and the
// dropped ones. A malformed answer (not JSON, not an object, a field of
// the wrong type) is a recoverable provider_bad_response.
func (e *Engine) check(ctx context.Context, in memorykit.ExtractionInput, answer []byte) ([]memorykit.Proposal, []drop, error) {
	const op = "extraction.check"
	if !utf8.Valid(answer) {
		return nil, nil, badResponse("invalid_utf8")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(answer, &top); err != nil || top == nil {
		return nil, nil, badResponse("not_an_object")
	}
	raw, ok := top["memories"]
	if !ok {
		return nil, nil, badResponse("memories_missing")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, nil, badResponse("memories_not_a_list")
	}
	var drops []drop
	wire := make([]wireProposal, len(items))
	fields := make([]map[string]json.RawMessage, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it, &fields[i]); err != nil || fields[i] == nil {
			return nil, nil, badResponse("memory_not_an_object")
		}
		dec := json.NewDecoder(bytes.NewReader(it))
		if err := dec.Decode(&wire[i]); err != nil {
			return nil, nil, badResponse("memory_field_type")
		}
	}
	if len(top) != 1 {
		for range items {
			drops = append(drops, drop{DropAnswerExtraField})
		}
		return nil, drops, nil
	}

	related := make(map[string]string, len(in.Related))
	for _, r := range in.Related {
		related[string(r.Kind)+"\x00"+storekit.NormalizeKey(r.Key)] = r.Content
	}
	seen := map[string]bool{}
	var out []memorykit.Proposal
	for i, w := range wire {
		if err := ctx.Err(); err != nil {
			return nil, nil, memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", err)
		}
		p, reason, err := e.proposal(ctx, in, fields[i], w)
		if err != nil {
			return nil, nil, err
		}
		if reason == "" {
			id := string(p.Kind) + "\x00" + storekit.NormalizeKey(p.Key)
			switch c, ok := related[id]; {
			case ok && c == p.Content:
				reason = DropUnchanged
			case seen[id]:
				reason = DropDuplicate
			case len(out) >= e.cfg.Limits.MaxProposals:
				reason = DropOverMax
			default:
				seen[id] = true
			}
		}
		if reason != "" {
			drops = append(drops, drop{reason})
			continue
		}
		out = append(out, p)
	}
	return out, drops, nil
}

// proposal checks one decoded proposal. A non-empty reason drops it; an
// error fails the job (only a guard failure that is not about the
// proposal itself, such as a validator that could not be reached).
func (e *Engine) proposal(ctx context.Context, in memorykit.ExtractionInput, fields map[string]json.RawMessage, w wireProposal) (memorykit.Proposal, string, error) {
	const op = "extraction.check"
	for name := range fields {
		if !schemaFields[name] {
			return memorykit.Proposal{}, DropExtraField, nil
		}
	}
	if w.Kind == nil || w.Key == nil || w.Content == nil {
		return memorykit.Proposal{}, DropMissingField, nil
	}
	kind := memorykit.Kind(*w.Kind)
	if !kind.Valid() {
		return memorykit.Proposal{}, DropUnknownKind, nil
	}
	p := memorykit.Proposal{Kind: kind, Key: *w.Key, Content: *w.Content}
	if w.Sources != nil {
		ref := in.RunRef
		if ref == "" {
			ref = in.JobID
		}
		seen := map[string]bool{}
		for _, s := range *w.Sources {
			if s != "user" && s != "assistant" {
				return memorykit.Proposal{}, DropBadSource, nil
			}
			if !seen[s] {
				seen[s] = true
				p.Sources = append(p.Sources, memorykit.Source{Kind: "turn_" + s, Ref: ref})
			}
		}
	}
	checked, err := e.cfg.Guard.CheckNew(ctx, op, memorykit.NewRecord{
		ID:      storekit.CandidateID(in.Scope, in.JobID, p.Kind, storekit.NormalizeKey(p.Key)),
		Scope:   in.Scope,
		Kind:    p.Kind,
		Key:     p.Key,
		Content: p.Content,
		Sources: p.Sources,
		Status:  memorykit.StatusCandidate,
		Actor:   memorykit.Actor{Kind: memorykit.ActorWorker, ID: "extraction"},
		Reason:  storekit.ExtractionCandidateReason(in.JobID),
	})
	if err != nil {
		if errors.Is(err, memorykit.ErrInvalidInput) {
			var me *memorykit.Error
			reason := "invalid"
			if errors.As(err, &me) {
				if me.Field != "" {
					reason += "_" + me.Field
				}
				reason += "_" + memorykit.ReasonCode(err)
			}
			if storekit.CheckReasonCode("", reason) != nil {
				reason = "invalid_proposal"
			}
			return memorykit.Proposal{}, reason, nil
		}
		return memorykit.Proposal{}, "", err
	}
	p.Key = checked.Key
	return p, "", nil
}
