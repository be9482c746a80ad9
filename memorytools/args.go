package memorytools

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// argError is a content-free reason an argument object was refused.
type argError string

func (e argError) Error() string { return string(e) }

// decodeArgs checks raw strictly and decodes it into dst (a pointer to a
// struct whose json tags name the allowed fields):
//
//   - at most maxBytes bytes;
//   - exactly one JSON object, nothing after it;
//   - every key is one of allowed, spelled exactly (encoding/json alone
//     would also accept "QUERY" for "query"), and none is repeated;
//   - no null values;
//   - every key in required is present.
//
// The error is a reason code; it never quotes the arguments.
func decodeArgs(raw []byte, maxBytes int, allowed, required []string, dst any) error {
	if len(raw) > maxBytes {
		return argError("too_large")
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return argError("not_an_object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return argError("malformed")
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return argError("malformed")
		}
		key, ok := tok.(string)
		if !ok {
			return argError("malformed")
		}
		if !contains(allowed, key) {
			return argError("unknown_field")
		}
		if seen[key] {
			return argError("duplicate_field")
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return argError("malformed")
		}
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return argError("null_value")
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return argError("malformed")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return argError("trailing_data")
	}
	for _, k := range required {
		if !seen[k] {
			return argError("missing_field")
		}
	}
	strict := json.NewDecoder(bytes.NewReader(trimmed))
	strict.DisallowUnknownFields()
	if err := strict.Decode(dst); err != nil {
		return argError("bad_type")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
