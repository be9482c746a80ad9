package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"unicode/utf8"
)

// bodyTypes are every request body the Host decodes.
func bodyTypes() []func() any {
	return []func() any{
		func() any { return new(writeRequest) },
		func() any { return new(searchRequest) },
		func() any { return new(chatRequest) },
		func() any { return new(decisionRequest) },
		func() any { return new(correctRequest) },
	}
}

// FuzzDecodeBody checks the Host's body decoder on arbitrary bytes, for
// every request type: it never panics; it either refuses with a typed
// rejection (400 or 422 and a code) or returns a value whose re-encoding
// decodes, strictly, to the same value; and what it accepts is valid UTF-8
// with no duplicate key and no key that is not exactly a field name.
func FuzzDecodeBody(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"fact","key":"deploy region","content":"The API runs in eu-west-1."}`,
		`{"kind":"note","key":"k","content":"a","CONTENT":"b"}`,
		`{"kind":"note","\u212aey":"k","content":"c"}`,
		`{"content":"a","content":"b"}`,
		`{"query":"deploy region","max_results":3}`,
		`{"message":"hi","history":[{"role":"user","content":"x"}],"turn_id":"t1"}`,
		`{"reason":"ok","expect_version":2}`,
		`{"content":"c","metadata":{"a":"1","a":"2"},"sources":[{"kind":"t","ref":"r"}]}`,
		`{"kind":"note","key":"k","content":"x \ud83d\ude80 \ud800"}`,
		"{\"content\":\"\xff\"}",
		`{"effective_from":"0001-01-01T00:00:00Z","effective_until":null}`,
		`{"tenant_id":"globex"}`,
		`[1,2]`, `{}`, `{"content":"a"} {"content":"b"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, mk := range bodyTypes() {
			dst := mk()
			rej := decodeStrict(raw, dst)
			if rej != nil {
				if (rej.Status != http.StatusBadRequest && rej.Status != http.StatusUnprocessableEntity) || rej.Code == "" || rej.Reason == "" {
					t.Fatalf("%T: untyped rejection %+v", dst, rej)
				}
				continue
			}
			if !utf8.Valid(raw) {
				t.Fatalf("%T: accepted invalid UTF-8 %q", dst, raw)
			}
			if reason := independentKeyCheck(raw, reflect.TypeOf(dst).Elem()); reason != "" {
				t.Fatalf("%T: accepted %q with a %s", dst, raw, reason)
			}
			enc, err := json.Marshal(dst)
			if err != nil {
				t.Fatalf("%T: re-encoding failed: %v", dst, err)
			}
			again := mk()
			if rej := decodeStrict(enc, again); rej != nil {
				t.Fatalf("%T: re-encoded %s refused: %+v", dst, enc, rej)
			}
			enc2, err := json.Marshal(again)
			if err != nil || !bytes.Equal(enc, enc2) {
				t.Fatalf("%T: round trip changed the value: %s then %s (%v)", dst, enc, enc2, err)
			}
		}
	})
}

// independentKeyCheck re-reads the top-level object with encoding/json's
// own map decoding and reports a duplicate key (fewer map entries than key
// tokens) or a key that is not exactly a field name of t.
func independentKeyCheck(raw []byte, t reflect.Type) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return "non-object"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return "non-object"
	}
	keys := 0
	fields := jsonFields(t)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "malformed object"
		}
		key, _ := tok.(string)
		if _, ok := fields[key]; !ok {
			return "inexact key"
		}
		keys++
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "malformed value"
		}
	}
	if keys != len(m) {
		return "duplicate key"
	}
	return ""
}
