package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goagents/memorykit/storekit"
)

// rejection is why decodeStrict refused a body: an HTTP status and the
// content-free error body fields. It never quotes the body.
type rejection struct {
	Status int
	Code   string
	Reason string
	Field  string
}

func (r *rejection) Error() string { return "host: body rejected: " + r.Code + ": " + r.Reason }

func reject(status int, code, reason, field string) *rejection {
	return &rejection{Status: status, Code: code, Reason: reason, Field: field}
}

// decodeStrict decodes one JSON object into dst, a pointer to a request
// struct, and refuses, in order:
//
//   - invalid UTF-8, raw or as an unpaired surrogate escape (422
//     invalid_input/invalid_utf8): encoding/json would store U+FFFD instead;
//   - anything but exactly one well-formed JSON object (400 invalid_json);
//   - a key at any depth that names a Scope, identity or permission (400
//     scope_override_rejected);
//   - a duplicate key in any object (400 invalid_json/duplicate_key), and
//     a key that is not exactly the name of a field of the struct it lands
//     in (400 invalid_json/unknown_field): encoding/json would take the last
//     duplicate and match names case-insensitively ("CONTENT", "\u212aey");
//   - a value of the wrong type (400 invalid_json/bad_type).
//
// It is a pure function of raw, so it can be fuzzed.
func decodeStrict(raw []byte, dst any) *rejection {
	if !validUTF8JSON(raw) {
		return reject(http.StatusUnprocessableEntity, "invalid_input", "invalid_utf8", "")
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return reject(http.StatusBadRequest, "invalid_json", "malformed", "")
	}
	if _, isObject := tree.(map[string]any); !isObject {
		return reject(http.StatusBadRequest, "invalid_json", "not_an_object", "")
	}
	if canon, found := scopeKey(tree); found {
		return reject(http.StatusBadRequest, "scope_override_rejected", "body", canon)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if reason := strictWalk(dec, reflect.TypeOf(dst)); reason != "" {
		return reject(http.StatusBadRequest, "invalid_json", reason, "")
	}
	dec = json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		// The decoder's message can quote the body: report a code only.
		return reject(http.StatusBadRequest, "invalid_json", "bad_type", "")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return reject(http.StatusBadRequest, "invalid_json", "malformed", "")
	}
	return nil
}

// validUTF8JSON reports whether raw is valid UTF-8 and every \u escape
// inside its strings that encodes a surrogate is one half of a proper
// pair, so that no string decodes to a replacement character that was not
// in the body.
func validUTF8JSON(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(raw) {
				return true // malformed; json.Unmarshal refuses it
			}
			if raw[i+1] != 'u' {
				i++ // a one-character escape
				continue
			}
			r, ok := hex4(raw, i+2)
			if !ok {
				return true // malformed; json.Unmarshal refuses it
			}
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF: // a low half with no high half
				return false
			case r >= 0xD800 && r <= 0xDBFF: // a high half needs a low half next
				if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
					return false
				}
				lo, ok := hex4(raw, i+3)
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return false
				}
				i += 6
			}
		}
	}
	return true
}

// hex4 reads four hex digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// strictWalk reads one JSON value from dec, which must fit t, and returns
// "duplicate_key" or "unknown_field" for the first object key that repeats
// or is not exactly a field name of the struct it lands in ("" when every
// key is right). Type mismatches are left to the decoder.
func strictWalk(dec *json.Decoder, t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return "malformed"
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return "" // a scalar
	}
	switch delim {
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct && t != timeType:
			fields = jsonFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "malformed"
			}
			key, _ := kt.(string)
			if seen[key] {
				return "duplicate_key"
			}
			seen[key] = true
			next := elem
			if fields != nil {
				ft, known := fields[key]
				if !known {
					return "unknown_field"
				}
				next = ft
			}
			if reason := strictWalk(dec, next); reason != "" {
				return reason
			}
		}
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if reason := strictWalk(dec, elem); reason != "" {
				return reason
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return "malformed"
	}
	return ""
}

// timeType is decoded from a string, never walked as a struct.
var timeType = reflect.TypeFor[time.Time]()

// jsonFields maps the exact JSON names of t's exported fields to their
// types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// blank reports text that shows nothing (storekit.IsBlank, the rule every
// write path applies): content, queries and messages like that carry
// nothing and are refused.
func blank(s string) bool { return storekit.IsBlank(s) }
