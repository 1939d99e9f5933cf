package server

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/transcriptstore/transcript/internal/jsonscan"
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
// valid JSON (json.Valid), a JSON object whose keys are "expectedHead" (a string
// or null) and "entries" (an array or null), decoded and matched as encoding/json
// matches them (case-insensitively, the last one of a key counting). The body is
// split with jsonscan, the scanner every layer reads entries with. Any other
// body, and every body decodeJSON refuses, takes the general path, so that the
// error answers are those decodeJSON gives.

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
// for a body outside the fast reading (see above). Keys are decoded and matched
// as encoding/json matches them.
func readAppendInPlace(data []byte) (expected *string, entries [][]byte, ok bool) {
	if !json.Valid(data) {
		return nil, nil, false
	}
	var spans [][2]int
	ok = true
	err := jsonscan.EachRawField(data, func(key, v []byte, off int) {
		isHead, isEntries := bytes.EqualFold(key, []byte("expectedHead")), bytes.EqualFold(key, []byte("entries"))
		switch {
		case !ok:
		case isHead && v[0] == 'n':
			expected = nil
		case isHead && v[0] == '"':
			s, good := jsonscan.String(v)
			expected, ok = &s, good
		case isEntries && v[0] == 'n':
			spans = nil
		case isEntries && v[0] == '[':
			spans = spans[:0]
			ok = jsonscan.EachElement(v, func(e []byte, at int) {
				spans = append(spans, [2]int{off + at, off + at + len(e)})
			}) == nil
		default: // an unknown key, or a value of another type
			ok = false
		}
	})
	if err != nil || !ok {
		return nil, nil, false
	}
	if spans != nil {
		entries = make([][]byte, len(spans))
		for k, sp := range spans {
			entries[k] = jsonscan.CompactInPlace(data[sp[0]:sp[1]])
		}
	}
	return expected, entries, true
}
