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
// The fast reading is taken only when it must agree with decodeJSON: a JSON
// object whose keys are "expectedHead" (a string or null) and "entries" (an
// array or null), decoded and matched as encoding/json matches them
// (case-insensitively, the last one of a key counting). The body is split with
// jsonscan, the scanner every layer reads entries with. Any other body, and every
// body decodeJSON refuses, is answered as decodeJSON answers it.
//
// The entries are checked as JSON once, by the repository (pi.ParseEntry runs
// json.Valid on each before anything is stored or read), not once more here: the
// fast reading checks the body with each entry replaced by {} (the skeleton: a
// few bytes per entry), and a body whose skeleton is valid JSON is valid exactly
// when each entry is a valid JSON value (a value may stand in for another
// anywhere). So an append that succeeds had a valid body, and one that fails is
// answered as decodeJSON answers its body when that body is not valid JSON
// (appendBody.refused), whatever else failed first. An entry that compaction
// would change is the exception: compacting can turn bytes that are not JSON
// into JSON ("1 2" into "12"), so before the first byte changes the whole body
// is checked, as it always was.

// appendBody is an append's body, read by readAppendBody.
type appendBody struct {
	// expected is the expected head (nil: none).
	expected *string
	// entries are the entries, each one line: slices of the body.
	entries [][]byte
	// unchecked is the body as received while its entries have not been
	// checked as JSON (see above); nil once they have.
	unchecked []byte
}

// refused answers the request as decodeJSON answers its body, and returns true,
// when the body's entries were not checked and the body is not valid JSON: an
// append that failed for any reason calls it first, so that a malformed body is
// answered as it always was, whatever failed.
func (b *appendBody) refused(s *Server, w http.ResponseWriter, r *http.Request) bool {
	if b.unchecked == nil || json.Valid(b.unchecked) {
		return false
	}
	var req AppendRequest
	if s.decodeJSON(w, r, b.unchecked, &req) {
		// Cannot happen: decodeJSON refuses what json.Valid refuses. Answer
		// as for any malformed body rather than appending nothing silently.
		s.fail(w, r, http.StatusBadRequest, CodeInvalidRequest, "malformed JSON body", nil)
	}
	return true
}

// readAppendBody reads an append's body: the expected head and the entries,
// each one line. It answers the error response itself and returns false when
// the body is refused.
func (s *Server) readAppendBody(w http.ResponseWriter, r *http.Request) (appendBody, bool) {
	data, ok := s.readBody(w, r)
	if !ok {
		return appendBody{}, false
	}
	if data == nil {
		s.fail(w, r, http.StatusBadRequest, CodeInvalidRequest, "the request needs a JSON body", nil)
		return appendBody{}, false
	}
	if b, fast := readAppendInPlace(data); fast {
		return b, true
	}
	var req AppendRequest
	if !s.decodeJSON(w, r, data, &req) {
		return appendBody{}, false
	}
	entries := make([][]byte, len(req.Entries))
	for i, raw := range req.Entries {
		entries[i] = pi.CompactJSON(raw)
	}
	return appendBody{expected: req.ExpectedHead, entries: entries}, true
}

// readAppendInPlace reads an append request from data, its entries slices of
// data compacted in place (data is changed then, and the body checked whole
// first). It returns false, having changed nothing, for a body outside the fast
// reading (see above), which includes every body whose skeleton is not valid
// JSON. Keys are decoded and matched as encoding/json matches them.
func readAppendInPlace(data []byte) (b appendBody, ok bool) {
	var spans [][2]int
	ok = true
	err := jsonscan.EachRawField(data, func(key, v []byte, off int) {
		isHead, isEntries := bytes.EqualFold(key, []byte("expectedHead")), bytes.EqualFold(key, []byte("entries"))
		switch {
		case !ok:
		case len(v) == 0: // the body is not JSON (not checked yet: see above)
			ok = false
		case isHead && v[0] == 'n':
			b.expected = nil
		case isHead && v[0] == '"':
			s, good := jsonscan.String(v)
			b.expected, ok = &s, good
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
	if err != nil || !ok || !json.Valid(skeleton(data, spans)) {
		return appendBody{}, false
	}
	b.unchecked = data
	// Before compaction changes a byte, the body is checked whole: once it
	// changes, the repository's check of an entry no longer stands for the
	// entry as sent.
	checkFirst := func() bool {
		if b.unchecked == nil {
			return true
		}
		if !json.Valid(data) {
			return false
		}
		b.unchecked = nil
		return true
	}
	if spans != nil {
		b.entries = make([][]byte, len(spans))
		for k, sp := range spans {
			if b.entries[k], ok = jsonscan.CompactInPlaceIf(data[sp[0]:sp[1]], checkFirst); !ok {
				// Not valid JSON, and nothing changed (no entry before this one
				// changed either, or the body would have been checked): the
				// general path answers it.
				return appendBody{}, false
			}
		}
	}
	return b, true
}

// skeleton returns data with each of spans (offsets of values, in order)
// replaced by {}: valid JSON exactly when data is, given that each span holds a
// valid JSON value.
func skeleton(data []byte, spans [][2]int) []byte {
	n := len(data)
	for _, sp := range spans {
		n -= sp[1] - sp[0] - 2
	}
	out := make([]byte, 0, n)
	at := 0
	for _, sp := range spans {
		out = append(append(out, data[at:sp[0]]...), '{', '}')
		at = sp[1]
	}
	return append(out, data[at:]...)
}
