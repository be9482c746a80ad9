package memorykit

import (
	"context"
	"strconv"
	"unicode/utf8"

	"github.com/goagents/memorykit/internal/plumbing/textrule"
)

// Limits bounds every write. It is versioned so a Host can tell which bounds
// were in force. Every field must be positive; there are no defaults.
type Limits struct {
	Version int
	// MaxKeyBytes bounds a record key.
	MaxKeyBytes int
	// MaxContentBytes bounds record content.
	MaxContentBytes int
	// MaxMetadataEntries bounds the number of metadata pairs.
	MaxMetadataEntries int
	// MaxMetadataBytes bounds the summed size of metadata keys and values.
	MaxMetadataBytes int
	// MaxSources bounds the number of sources.
	MaxSources int
	// MaxSourceBytes bounds one source's kind plus ref.
	MaxSourceBytes int
	// MaxListSize bounds one List call and one batch.
	MaxListSize int
	// MaxJobPayloadBytes bounds an extraction job's payload.
	MaxJobPayloadBytes int
	// MaxReasonBytes bounds the free-text audit reason of a write, a
	// correction or a lifecycle action. It must be at most the package
	// constant storekit.MaxReasonBytes.
	MaxReasonBytes int
}

// Validate reports ErrInvalidPolicy unless every bound is positive and
// MaxReasonBytes is at most the package constant storekit.MaxReasonBytes.
func (l Limits) Validate() error {
	checks := []struct {
		name string
		v    int
	}{
		{"version", l.Version},
		{"max_key_bytes", l.MaxKeyBytes},
		{"max_content_bytes", l.MaxContentBytes},
		{"max_metadata_entries", l.MaxMetadataEntries},
		{"max_metadata_bytes", l.MaxMetadataBytes},
		{"max_sources", l.MaxSources},
		{"max_source_bytes", l.MaxSourceBytes},
		{"max_list_size", l.MaxListSize},
		{"max_job_payload_bytes", l.MaxJobPayloadBytes},
		{"max_reason_bytes", l.MaxReasonBytes},
	}
	for _, c := range checks {
		if c.v <= 0 {
			return &Error{Op: "limits.validate", Kind: ErrInvalidPolicy, Field: c.name, Reason: "must_be_positive"}
		}
	}
	if l.MaxReasonBytes > textrule.MaxReasonBytes {
		return &Error{Op: "limits.validate", Kind: ErrInvalidPolicy, Field: "max_reason_bytes", Reason: "too_large"}
	}
	return nil
}

// ContentCheck is what a ContentValidator inspects.
//
// Action says what is being checked. For ActionCreate (a write or an
// extracted candidate) and ActionCorrect every field is set, and Reason is
// the actor's free-text audit reason ("" when none was given). For the
// lifecycle actions that carry no content (ActionActivate, ActionReject,
// ActionForget, ActionErase) only Scope, Origin, Action and Reason are set,
// and the check is made only when Reason is non-empty: the reason is the
// one piece of free text such an action stores, so a Host's policy that
// refuses secrets in content must refuse them in Reason too.
type ContentCheck struct {
	Scope    Scope
	Kind     Kind
	Key      string
	Content  string
	Metadata map[string]string
	Sources  []Source
	// Origin is the actor whose write is being validated.
	Origin Actor
	// Action is the write or lifecycle action being validated.
	Action Action
	// Reason is the free-text audit reason stored with the action.
	Reason string
}

// ContentValidator is the Host's content policy for direct writes,
// corrections, extracted candidates and the free-text reasons of lifecycle
// actions (secret detection, PII rules, allow-lists...). A non-nil error
// rejects the write or action; memorykit reports it as ErrInvalidInput with
// reason "content_rejected" (field "reason" for a reason-only check) and
// never prints the validator's message.
type ContentValidator interface {
	ValidateContent(ctx context.Context, c ContentCheck) error
}

// WriteGuard applies Limits and the Host's ContentValidator to every write.
// Both stores hold one and call it before touching state, so a rejected
// write changes nothing.
type WriteGuard struct {
	limits    Limits
	validator ContentValidator
}

// NewWriteGuard validates its parts. A nil validator or invalid Limits is an
// error: there is no allow-all fallback.
func NewWriteGuard(limits Limits, validator ContentValidator) (*WriteGuard, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if validator == nil {
		return nil, ConfigError("writeguard.new", "content_validator", "missing")
	}
	return &WriteGuard{limits: limits, validator: validator}, nil
}

// Limits returns the guard's limits.
func (g *WriteGuard) Limits() Limits { return g.limits }

// CheckNew validates and canonicalises a NewRecord. It returns the record
// with its key canonicalised. op names the caller in errors.
func (g *WriteGuard) CheckNew(ctx context.Context, op string, in NewRecord) (NewRecord, error) {
	if err := in.Scope.Validate(); err != nil {
		return NewRecord{}, err
	}
	if in.ID != "" {
		if err := validateID(op, "id", in.ID); err != nil {
			return NewRecord{}, err
		}
	}
	if !in.Kind.Valid() {
		return NewRecord{}, FieldError(op, "kind", "unknown")
	}
	if in.Status != StatusActive && in.Status != StatusCandidate {
		return NewRecord{}, FieldError(op, "status", "must_be_active_or_candidate")
	}
	key, err := g.CheckKey(op, in.Key)
	if err != nil {
		return NewRecord{}, err
	}
	in.Key = key
	if err := in.Actor.Validate(); err != nil {
		return NewRecord{}, err
	}
	if err := g.CheckReason(op, in.Reason); err != nil {
		return NewRecord{}, err
	}
	if !in.EffectiveUntil.IsZero() && !in.EffectiveFrom.IsZero() && !in.EffectiveUntil.After(in.EffectiveFrom) {
		return NewRecord{}, FieldError(op, "effective_until", "not_after_effective_from")
	}
	if in.Expect != nil {
		if in.Status != StatusActive {
			return NewRecord{}, FieldError(op, "expect", "only_for_active")
		}
		if in.Expect.None == (in.Expect.ID != "") {
			return NewRecord{}, FieldError(op, "expect", "need_none_or_id")
		}
		if in.Expect.ID != "" {
			if err := validateID(op, "expect.id", in.Expect.ID); err != nil {
				return NewRecord{}, err
			}
			if in.Expect.Version <= 0 {
				return NewRecord{}, FieldError(op, "expect.version", "must_be_positive")
			}
		}
		if o := in.Expect.KeyOwner; o != nil {
			if err := o.Validate(); err != nil {
				return NewRecord{}, err
			}
		}
	}
	if err := g.CheckContent(ctx, op, ContentCheck{
		Scope: in.Scope, Kind: in.Kind, Key: in.Key, Content: in.Content,
		Metadata: in.Metadata, Sources: in.Sources, Origin: in.Actor,
		Action: ActionCreate, Reason: in.Reason,
	}); err != nil {
		return NewRecord{}, err
	}
	return in, nil
}

// CheckActionReason validates the reason of a lifecycle action that
// stores no content (activate, reject, forget, erase): the reason against
// Limits.MaxReasonBytes (storekit.CheckReason) and, when a reason is given, the
// Host's ContentValidator on it (a ContentCheck with only Scope, Origin,
// Action and Reason set). A refused reason is ErrInvalidInput, field
// "reason", reason "content_rejected". scope and actor are the action's;
// it does not validate them: storekit.CheckAction validates the whole
// storekit.Transition and then calls this.
func (g *WriteGuard) CheckActionReason(ctx context.Context, op string, action Action, scope Scope, actor Actor, reason string) error {
	if err := g.CheckReason(op, reason); err != nil {
		return err
	}
	if reason == "" {
		return nil
	}
	return g.validate(ctx, op, "reason", ContentCheck{Scope: scope, Origin: actor, Action: action, Reason: reason})
}

// CheckReason validates an audit reason as storekit.CheckReason does and bounds it
// by Limits.MaxReasonBytes. It does not call the ContentValidator.
func (g *WriteGuard) CheckReason(op, reason string) error {
	if len(reason) > g.limits.MaxReasonBytes {
		return FieldError(op, "reason", "too_long")
	}
	return checkReason(op, reason)
}

// CheckKey validates and canonicalises a key.
func (g *WriteGuard) CheckKey(op, key string) (string, error) {
	if !utf8.ValidString(key) {
		return "", FieldError(op, "key", "invalid_utf8")
	}
	// storekit.NormalizeKey drops control characters; a NUL or another C0 control
	// in a key is refused, as before, rather than silently removed.
	if r := textrule.TextProblem(key, true); r != "" {
		return "", FieldError(op, "key", r)
	}
	k := textrule.NormalizeKey(key)
	switch {
	case k == "":
		return "", FieldError(op, "key", "empty")
	case len(key) > g.limits.MaxKeyBytes || len(k) > g.limits.MaxKeyBytes:
		return "", FieldError(op, "key", "too_long")
	}
	if r := textrule.TextProblem(k, false); r != "" {
		return "", FieldError(op, "key", r)
	}
	return k, nil
}

// CheckPayload validates an extraction job payload.
func (g *WriteGuard) CheckPayload(op, payload string) error {
	if payload == "" {
		return FieldError(op, "payload", "empty")
	}
	if len(payload) > g.limits.MaxJobPayloadBytes {
		return FieldError(op, "payload", "too_long")
	}
	if r := textrule.TextProblem(payload, true); r != "" {
		return FieldError(op, "payload", r)
	}
	return nil
}

// CheckContent validates the body of a write (content, metadata and
// sources) against the limits and the text rules (content that storekit.IsBlank is
// refused with reason "blank"), then asks the Host's
// ContentValidator; a refusal is ErrInvalidInput, field "content", reason
// "content_rejected". CheckNew calls it for a new record, and stores call
// it (through storekit.CheckCorrection) for a correction.
func (g *WriteGuard) CheckContent(ctx context.Context, op string, c ContentCheck) error {
	l := g.limits
	switch {
	case c.Content == "":
		return FieldError(op, "content", "empty")
	case len(c.Content) > l.MaxContentBytes:
		return FieldError(op, "content", "too_long")
	}
	if r := textrule.TextProblem(c.Content, true); r != "" {
		return FieldError(op, "content", r)
	}
	if textrule.IsBlank(c.Content) {
		return FieldError(op, "content", "blank")
	}
	if len(c.Metadata) > l.MaxMetadataEntries {
		return FieldError(op, "metadata", "too_many_entries")
	}
	total := 0
	for k, v := range c.Metadata {
		total += len(k) + len(v)
		if r := metaKeyProblem(k); r != "" {
			return FieldError(op, "metadata.key", r)
		}
		if r := textrule.TextProblem(v, false); r != "" {
			return FieldError(op, "metadata.value", r)
		}
	}
	if total > l.MaxMetadataBytes {
		return FieldError(op, "metadata", "too_long")
	}
	if len(c.Sources) > l.MaxSources {
		return FieldError(op, "sources", "too_many")
	}
	for i, s := range c.Sources {
		field := "sources[" + strconv.Itoa(i) + "]"
		if len(s.Kind)+len(s.Ref) > l.MaxSourceBytes {
			return FieldError(op, field, "too_long")
		}
		if r := metaKeyProblem(s.Kind); r != "" {
			return FieldError(op, field+".kind", r)
		}
		if s.Ref == "" {
			return FieldError(op, field+".ref", "empty")
		}
		if r := textrule.TextProblem(s.Ref, false); r != "" {
			return FieldError(op, field+".ref", r)
		}
	}
	return g.validate(ctx, op, "content", c)
}

// validate runs the Host's ContentValidator; field names the input a
// refusal is reported on.
func (g *WriteGuard) validate(ctx context.Context, op, field string, c ContentCheck) error {
	if err := g.validator.ValidateContent(ctx, c); err != nil {
		if ctx.Err() != nil {
			return WrapError(op, ErrUnavailable, "context_done", ctx.Err())
		}
		return &Error{Op: op, Kind: ErrInvalidInput, Field: field, Reason: "content_rejected", Err: err}
	}
	return nil
}

// metaKeyProblem validates metadata keys and source kinds: 1..64 bytes of
// [a-z0-9_.-].
func metaKeyProblem(k string) string {
	if k == "" {
		return "empty"
	}
	if len(k) > 64 {
		return "too_long"
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return "bad_character"
		}
	}
	return ""
}
