// Package jsonscan reads the top level of a JSON object without decoding it: the
// raw bytes of each value, with keys matched exactly (case-sensitively, last
// duplicate wins) as JavaScript's JSON.parse does, unlike encoding/json. The store
// and the SessionTree use it so that they agree on what an entry's id is.
package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by the errors of EachField for input it cannot scan.
var ErrSyntax = errors.New("json syntax")

// String decodes a JSON string value as JavaScript's JSON.parse does, in WTF-8
// (see appendDecoded): distinct JavaScript strings (ids "\ud800" and "\udc00")
// are distinct Go strings, which may then not be valid UTF-8. ok is false for
// anything else.
func String(v []byte) (string, bool) {
	b, ok := StringBytes(v)
	return string(b), ok
}

// StringBytes decodes a JSON string value as String does, returning v's own
// bytes between the quotes when they need no decoding (the caller must then
// not modify them); ok is false for anything else.
func StringBytes(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	if plain(v) {
		return v[1 : len(v)-1], true
	}
	b, ok := appendDecoded(make([]byte, 0, len(v)-2), v[1:len(v)-1])
	if !ok {
		return nil, false
	}
	return b, true
}

// plain reports whether the JSON string token v (quotes included) is its own
// text: printable ASCII without escapes (and without a quote, which would end
// the string: v is then no token, and appendDecoded refuses it).
func plain(v []byte) bool {
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
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
	return ScanFields(obj, func(key []byte, at int) (int, error) {
		end, err := skipValue(obj, at)
		if err == nil {
			fn(key, obj[at:end], at)
		}
		return end, err
	})
}

// ScanFields calls value for each top-level key of the JSON object obj (which
// must be valid JSON) with the decoded key (as EachRawField passes it) and the
// offset in obj where its value starts; value returns the offset where the
// value ends, SkipValue's when it does not read the value itself. A caller that
// reads a value as it goes (EachElementAt of an array) so scans each byte of
// obj once, where EachRawField would scan the value to hand it over first.
func ScanFields(obj []byte, value func(key []byte, at int) (end int, err error)) error {
	_, err := ScanFieldsAt(obj, skipWS(obj, 0), value)
	return err
}

// ScanFieldsAt is ScanFields of the object that starts at b[at] (offsets are in
// b): it returns the offset where the object ends.
func ScanFieldsAt(obj []byte, at int, value func(key []byte, at int) (end int, err error)) (int, error) {
	i := at
	if i >= len(obj) || obj[i] != '{' {
		return 0, fmt.Errorf("%w: not a JSON object", ErrSyntax)
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return i + 1, nil
	}
	for i < len(obj) {
		ks := i
		ke, err := skipValue(obj, i)
		if err != nil {
			return 0, err
		}
		key, ok := StringBytes(obj[ks:ke])
		if !ok {
			return 0, fmt.Errorf("%w: bad key", ErrSyntax)
		}
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return 0, fmt.Errorf("%w: expected ':'", ErrSyntax)
		}
		ve, err := value(key, skipWS(obj, i+1))
		if err != nil {
			return 0, err
		}
		var done bool
		if i, done, err = afterMember(obj, ve, '}', "object"); err != nil || done {
			return i, err
		}
	}
	return 0, fmt.Errorf("%w: unterminated object", ErrSyntax)
}

// afterMember reads what follows a member of an object or an array that ends
// at b[i]: the closing byte (done, the offset after it) or a comma (the offset
// of the next member).
func afterMember(b []byte, i int, closing byte, what string) (next int, done bool, err error) {
	i = skipWS(b, i)
	switch {
	case i >= len(b):
		return 0, false, fmt.Errorf("%w: unterminated %s", ErrSyntax, what)
	case b[i] == closing:
		return i + 1, true, nil
	case b[i] != ',':
		return 0, false, fmt.Errorf("%w: expected ','", ErrSyntax)
	}
	return skipWS(b, i+1), false, nil
}

// SkipValue returns the offset in b where the JSON value that starts at b[at]
// ends (b is valid JSON).
func SkipValue(b []byte, at int) (int, error) { return skipValue(b, at) }

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
	_, err := EachElementAt(arr, skipWS(arr, 0), fn)
	return err
}

// EachElementAt is EachElement of the array that starts at b[at] (b is valid
// JSON; offsets are in b): it returns the offset where the array ends, as
// SkipValue would, having scanned it once.
func EachElementAt(b []byte, at int, fn func(v []byte, off int)) (int, error) {
	if at >= len(b) || b[at] != '[' {
		return 0, fmt.Errorf("%w: not a JSON array", ErrSyntax)
	}
	i := skipWS(b, at+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for i < len(b) {
		vs := i
		ve, err := skipValue(b, i)
		if err != nil {
			return 0, err
		}
		fn(b[vs:ve], vs)
		var done bool
		if i, done, err = afterMember(b, ve, ']', "array"); err != nil || done {
			return i, err
		}
	}
	return 0, fmt.Errorf("%w: unterminated array", ErrSyntax)
}
