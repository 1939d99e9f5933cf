package server

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/transcriptstore/transcript/pi"
)

// An append's body is read without copying its entries: each entry is handed to
// the repository as a slice of the body itself, made one line in place, and the
// repository keeps it (repository.Session.AppendOwned) and checks it, once. The
// general request decoder (decodeJSON) copies every entry into a json.RawMessage
// after copying the whole body into its own buffer, and compacting an entry that
// holds a space copied it again; for a batch of entries that was most of what the
// server allocated per append.
//
// The fast reading is taken only when it must agree with decodeJSON: the body is
// valid JSON (json.Valid), a JSON object whose keys, written without escapes,
// are "expectedHead" (a string or null) and "entries" (an array or null), matched
// as encoding/json matches them (case-insensitively, the last one of a key
// counting). Any other body, and every body decodeJSON refuses, takes the general
// path, so that the error answers are those decodeJSON gives.

// appendBody reads an append's body: the expected head and the entries, each
// one line. It answers the error response itself and returns false when the body
// is refused.
func (s *Server) appendBody(w http.ResponseWriter, r *http.Request) (expected *string, entries [][]byte, ok bool) {
	data, ok := s.readBody(w, r)
	if !ok {
		return nil, nil, false
	}
	if data == nil {
		s.fail(w, r, http.StatusBadRequest, CodeInvalidRequest, "the request needs a JSON body", nil)
		return nil, nil, false
	}
	if expected, entries, fast := readAppendInPlace(data); fast {
		return expected, entries, true
	}
	var req AppendRequest
	if !s.decodeJSON(w, r, data, &req) {
		return nil, nil, false
	}
	entries = make([][]byte, len(req.Entries))
	for i, raw := range req.Entries {
		entries[i] = pi.CompactJSON(raw)
	}
	return req.ExpectedHead, entries, true
}

// readAppendInPlace reads an append request from data, its entries slices of data
// compacted in place (data is changed). It returns false, having changed nothing,
// for a body outside the fast reading (see above).
func readAppendInPlace(data []byte) (expected *string, entries [][]byte, ok bool) {
	if !json.Valid(data) {
		return nil, nil, false
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, nil, false
	}
	var spans [][2]int
	for i = skipSpace(data, i+1); data[i] != '}'; {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipValue(data, i) // the key: a string
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, nil, false
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		end = skipValue(data, i)
		switch {
		case bytes.EqualFold(key, []byte("expectedHead")) && data[i] == 'n':
			expected = nil
		case bytes.EqualFold(key, []byte("expectedHead")) && data[i] == '"':
			var head string
			if json.Unmarshal(data[i:end], &head) != nil {
				return nil, nil, false
			}
			expected = &head
		case bytes.EqualFold(key, []byte("entries")) && data[i] == 'n':
			spans = nil
		case bytes.EqualFold(key, []byte("entries")) && data[i] == '[':
			spans = elements(data, i, spans[:0])
		default: // an unknown key, or a value of another type
			return nil, nil, false
		}
		i = skipSpace(data, end)
	}
	if spans != nil {
		entries = make([][]byte, len(spans))
		for k, sp := range spans {
			entries[k] = compactInPlace(data[sp[0]:sp[1]])
		}
	}
	return expected, entries, true
}

// elements appends to spans the start and end of each element of the array at
// data[i] (valid JSON).
func elements(data []byte, i int, spans [][2]int) [][2]int {
	for i = skipSpace(data, i+1); data[i] != ']'; i = skipSpace(data, i) {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipValue(data, i)
		spans = append(spans, [2]int{i, end})
		i = end
	}
	return spans
}

// skipSpace returns the position of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// skipValue returns the end of the JSON value that starts at data[i], which
// must be valid JSON (json.Valid): the end of a string, an object or an array
// found by counting brackets outside strings, of a number or literal at the
// first delimiter.
func skipValue(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			i = stringEnd(data, i) - 1
			if depth == 0 {
				return i + 1
			}
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i // the end of a number or literal in an object or array
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || isSpace(c)):
			return i
		}
	}
	return i
}

// stringEnd returns the end of the JSON string that starts at data[i] (past its
// closing quote): the first quote not preceded by an odd run of backslashes,
// found with bytes.IndexByte (entries are mostly long strings).
func stringEnd(data []byte, i int) int {
	for j := i + 1; ; j++ {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return len(data)
		}
		j += k
		esc := 0
		for p := j - 1; p > i && data[p] == '\\'; p-- {
			esc++
		}
		if esc%2 == 0 {
			return j + 1
		}
	}
}

// compactInPlace removes the white space outside strings from v, valid JSON, in
// place (as json.Compact, without a copy), and returns what remains of v.
func compactInPlace(v []byte) []byte {
	n := 0
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case c == '"':
			end := stringEnd(v, i)
			if n == i { // nothing removed yet: the string stays where it is
				n = end
			} else {
				n += copy(v[n:], v[i:end])
			}
			i = end
		case isSpace(c):
			i++
		default:
			v[n] = c
			n++
			i++
		}
	}
	return v[:n]
}
