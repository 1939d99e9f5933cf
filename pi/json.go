package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendString appends s as a JSON string without HTML escaping, as JavaScript's
// JSON.stringify writes it. It is the one JSON string writer of the store.
//
// A string the store decoded (jsonscan.String) holds a lone surrogate of a
// JavaScript string as its WTF-8 bytes (ED A0 80 for \ud800): AppendString
// writes it back as the escape JSON.stringify writes (\ud800), so that an id
// read from a line is written as the same id. Any other byte that is not UTF-8
// is written as \ufffd, as encoding/json writes it: the output is always
// valid JSON.
func AppendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		return appendWTF8String(b, s)
	}
	out, err := Marshal(s)
	if err != nil {
		panic(err) // strings always marshal
	}
	return append(b, out...)
}

// appendWTF8String is AppendString of s that is not valid UTF-8: each run of
// valid UTF-8 is written as AppendString writes it, each surrogate's three
// bytes as its \u escape.
func appendWTF8String(b []byte, s string) []byte {
	b = append(b, '"')
	for s != "" {
		n := 0 // the valid UTF-8 that starts s
		for n < len(s) {
			r, size := utf8.DecodeRuneInString(s[n:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			n += size
		}
		if n > 0 {
			q := AppendString(nil, s[:n])
			b = append(b, q[1:len(q)-1]...)
			s = s[n:]
			continue
		}
		if len(s) >= 3 && s[0] == 0xED && 0xA0 <= s[1] && s[1] <= 0xBF && 0x80 <= s[2] && s[2] <= 0xBF {
			r := rune(s[0]&0x0F)<<12 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F)
			b = append(b, `\u`...)
			b = strconv.AppendUint(b, uint64(r), 16)
			s = s[3:]
			continue
		}
		b = append(b, `\ufffd`...)
		s = s[1:]
	}
	return append(b, '"')
}

// Marshal encodes v as compact JSON without HTML escaping (JSON.stringify's
// output for the same value).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// Member is one top-level key of a JSON object and its raw value.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Object is a JSON object as an ordered list of members; it keeps the order and
// the bytes of every value, as JavaScript's in-place edits of a parsed object do.
type Object []Member

// SplitObject splits a JSON object into its members, in order. Errors wrap
// ErrInvalidEntry.
func SplitObject(raw []byte) (Object, error) {
	var o Object
	err := eachField(raw, func(k string, v []byte, _ int) { o = append(o, Member{k, v}) })
	return o, err
}

// Set replaces the value of key in place (every occurrence) or appends it.
func (o Object) Set(key string, val []byte) Object {
	found := false
	for i := range o {
		if o[i].Key == key {
			o[i].Value, found = val, true
		}
	}
	if !found {
		o = append(o, Member{key, val})
	}
	return o
}

// Del removes every occurrence of key.
func (o Object) Del(key string) Object {
	out := o[:0]
	for _, m := range o {
		if m.Key != key {
			out = append(out, m)
		}
	}
	return out
}

// Get returns the value of key (its last occurrence, as JSON.parse keeps), or nil.
func (o Object) Get(key string) []byte {
	var v []byte
	for _, m := range o {
		if m.Key == key {
			v = m.Value
		}
	}
	return v
}

// Marshal writes the object compactly. Duplicate keys collapse to one (JSON.parse
// keeps the last value at the first key's position).
func (o Object) Marshal() []byte {
	b := []byte{'{'}
	seen := make(map[string]bool, len(o))
	for _, m := range o {
		if seen[m.Key] {
			continue
		}
		seen[m.Key] = true
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = AppendString(b, m.Key)
		b = append(b, ':')
		b = append(b, o.Get(m.Key)...)
	}
	return append(b, '}')
}

// NewEntry builds a new entry in Pi's field order, {"type","id","parentId",
// "timestamp",...fields}; parentID "" writes a null parent (a root) and ts is
// written with FormatTimestamp. Field values must be valid JSON; values with
// insignificant whitespace are compacted so the entry stays one line. The
// result's bytes are fixed from then on.
func NewEntry(typ, id, parentID string, ts time.Time, fields ...Member) (Entry, error) {
	parent := []byte("null")
	if parentID != "" {
		parent = AppendString(nil, parentID)
	}
	o := Object{{"type", AppendString(nil, typ)}, {"id", AppendString(nil, id)}, {"parentId", parent},
		{"timestamp", AppendString(nil, FormatTimestamp(ts))}}
	for _, f := range fields {
		if !json.Valid(f.Value) {
			return Entry{}, fmt.Errorf("%w: field %q is not valid JSON", ErrInvalidEntry, f.Key)
		}
		o = append(o, Member{f.Key, CompactJSON(f.Value)})
	}
	e, err := ParseEntry(o.Marshal())
	if err != nil {
		return Entry{}, fmt.Errorf("new %s entry: %w", typ, err)
	}
	return e, nil
}

// CompactJSON removes insignificant whitespace (so an entry stays one line). It
// returns v unchanged when it is not valid JSON (or already compact).
func CompactJSON(v []byte) []byte {
	if bytes.IndexAny(v, " \t\r\n") < 0 {
		return v
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return v
	}
	return buf.Bytes()
}
