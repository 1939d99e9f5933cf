// Package jsonscan reads the top level of a JSON object without decoding it: the
// raw bytes of each value, with keys matched exactly (case-sensitively, last
// duplicate wins) as JavaScript's JSON.parse does, unlike encoding/json. The store
// and the SessionTree use it so that they agree on what an entry's id is.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by the errors of EachField for input it cannot scan.
var ErrSyntax = errors.New("json syntax")

// String decodes a JSON string value; ok is false for anything else.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if plain(v) {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// StringBytes decodes a JSON string value as String does, returning v's own
// bytes between the quotes when they need no decoding (the caller must then
// not modify them); ok is false for anything else.
func StringBytes(v []byte) ([]byte, bool) {
	if len(v) >= 2 && v[0] == '"' && plain(v) {
		return v[1 : len(v)-1], true
	}
	s, ok := String(v)
	return []byte(s), ok
}

// plain reports whether the JSON string token v (quotes included) is its own
// text: printable ASCII without escapes.
func plain(v []byte) bool {
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// Field returns the raw value of one top-level key of a JSON object (the last
// occurrence, as JavaScript's JSON.parse keeps), or nil.
func Field(obj []byte, name string) []byte {
	var out []byte
	_ = EachField(obj, func(key string, v []byte, _ int) {
		if key == name {
			out = v
		}
	})
	return out
}

// EachField calls fn for each top-level key of the JSON object obj (which must be
// valid JSON) with the decoded key, the raw value and the value's offset. Later
// duplicates are reported after earlier ones, so "last wins" as in JavaScript.
func EachField(obj []byte, fn func(key string, v []byte, off int)) error {
	return EachRawField(obj, func(key, v []byte, off int) { fn(string(key), v, off) })
}

// EachRawField is EachField with each decoded key as bytes, which are obj's own
// bytes when the key needs no decoding (printable ASCII without escapes): a
// scan that only compares keys (switch string(key)) copies none. fn must not
// keep or modify key.
func EachRawField(obj []byte, fn func(key, v []byte, off int)) error {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrSyntax)
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for i < len(obj) {
		ks := i
		ke, err := skipValue(obj, i)
		if err != nil {
			return err
		}
		key, ok := StringBytes(obj[ks:ke])
		if !ok {
			return fmt.Errorf("%w: bad key", ErrSyntax)
		}
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return fmt.Errorf("%w: expected ':'", ErrSyntax)
		}
		i = skipWS(obj, i+1)
		vs := i
		ve, err := skipValue(obj, i)
		if err != nil {
			return err
		}
		fn(key, obj[vs:ve], vs)
		i = skipWS(obj, ve)
		if i >= len(obj) {
			break
		}
		if obj[i] == '}' {
			return nil
		}
		if obj[i] != ',' {
			return fmt.Errorf("%w: expected ','", ErrSyntax)
		}
		i = skipWS(obj, i+1)
	}
	return fmt.Errorf("%w: unterminated object", ErrSyntax)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at b[i] (b is valid JSON).
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("%w: unexpected end", ErrSyntax)
	}
	switch b[i] {
	case '"':
		// The closing quote is the first one not escaped, that is not preceded by
		// an odd run of backslashes; bytes.IndexByte finds candidates at memory
		// speed, where a byte loop made this most of an entry scan's cost (entries
		// are mostly long strings).
		for j := i + 1; ; j++ {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				return 0, fmt.Errorf("%w: unterminated string", ErrSyntax)
			}
			j += k
			esc := 0
			for p := j - 1; p > i && b[p] == '\\'; p-- {
				esc++
			}
			if esc%2 == 0 {
				return j + 1, nil
			}
		}
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, err := skipValue(b, j)
				if err != nil {
					return 0, err
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("%w: unterminated value", ErrSyntax)
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j, nil
			}
			j++
		}
		return j, nil
	}
}

// EachElement calls fn for each element of the JSON array arr (which must be valid
// JSON) with the element's raw bytes and its offset in arr.
func EachElement(arr []byte, fn func(v []byte, off int)) error {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return fmt.Errorf("%w: not a JSON array", ErrSyntax)
	}
	i = skipWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for i < len(arr) {
		vs := i
		ve, err := skipValue(arr, i)
		if err != nil {
			return err
		}
		fn(arr[vs:ve], vs)
		i = skipWS(arr, ve)
		if i >= len(arr) {
			break
		}
		if arr[i] == ']' {
			return nil
		}
		if arr[i] != ',' {
			return fmt.Errorf("%w: expected ','", ErrSyntax)
		}
		i = skipWS(arr, i+1)
	}
	return fmt.Errorf("%w: unterminated array", ErrSyntax)
}
