package sqlitestore

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/goagents/memorykit"
)

// recordBody is how a record's row keeps the fields its columns do not
// (id, Scope, status and content hash have columns): short names, and
// empty fields left out, so a note of a few hundred bytes is not doubled
// by field names. Nil and empty Metadata or Sources stay apart (omitzero
// leaves out only nil). recordFieldsCovered (in a test) fails when
// memorykit.Record gains a field this does not carry.
type recordBody struct {
	Kind           memorykit.Kind    `json:"k"`
	Key            string            `json:"y,omitzero"`
	Content        string            `json:"c,omitzero"`
	Metadata       map[string]string `json:"m,omitzero"`
	Sources        []sourceBody      `json:"s,omitzero"`
	Version        int64             `json:"v"`
	EffectiveFrom  time.Time         `json:"f,omitzero"`
	EffectiveUntil time.Time         `json:"u,omitzero"`
	CreatedBy      actorBody         `json:"cb"`
	TouchedBy      actorBody         `json:"tb"`
	CreatedAt      time.Time         `json:"ca,omitzero"`
	UpdatedAt      time.Time         `json:"ua,omitzero"`
}

type sourceBody struct {
	Kind string `json:"k"`
	Ref  string `json:"r"`
}

type actorBody struct {
	Kind memorykit.ActorKind `json:"k"`
	ID   string              `json:"i"`
}

// encodeRecord is the body column of r.
func encodeRecord(r *memorykit.Record) (string, error) {
	b := recordBody{Kind: r.Kind, Key: r.Key, Content: r.Content, Metadata: r.Metadata, Version: r.Version,
		EffectiveFrom: r.EffectiveFrom, EffectiveUntil: r.EffectiveUntil,
		CreatedBy: actorBody(r.CreatedBy), TouchedBy: actorBody(r.TouchedBy), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Sources != nil {
		b.Sources = make([]sourceBody, len(r.Sources))
		for i, s := range r.Sources {
			b.Sources[i] = sourceBody(s)
		}
	}
	out, err := json.Marshal(b)
	return string(out), err
}

// decodeRecord reads a record from its row: a body encodeRecord wrote,
// or the whole record as JSON (the first schema's body, which every
// column's value is also in).
func decodeRecord(id string, scope memorykit.Scope, status, hash, body string) (memorykit.Record, error) {
	var r memorykit.Record
	if strings.HasPrefix(body, `{"ID":`) {
		err := json.Unmarshal([]byte(body), &r)
		return r, err
	}
	var b recordBody
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return r, err
	}
	r = memorykit.Record{ID: id, Scope: scope, Kind: b.Kind, Key: b.Key, Content: b.Content, Metadata: b.Metadata,
		Status: memorykit.Status(status), Version: b.Version, ContentHash: hash, EffectiveFrom: b.EffectiveFrom, EffectiveUntil: b.EffectiveUntil,
		CreatedBy: memorykit.Actor(b.CreatedBy), TouchedBy: memorykit.Actor(b.TouchedBy), CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	if b.Sources != nil {
		r.Sources = make([]memorykit.Source, len(b.Sources))
		for i, s := range b.Sources {
			r.Sources[i] = memorykit.Source(s)
		}
	}
	return r, nil
}
