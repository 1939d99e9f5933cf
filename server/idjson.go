package server

import (
	"encoding/json"

	"github.com/transcriptstore/transcript/pi"
)

// Entry ids go out as JavaScript's JSON.stringify writes them (pi.JSString). The store keeps
// an id as JSON.parse reads it: one holding a lone UTF-16 surrogate ("\ud800",
// which Pi holds apart from "\udc00" and "\ufffd") as that surrogate's WTF-8
// bytes, which are not UTF-8. encoding/json writes each of those bytes as
// U+FFFD: an answer would name an id no entry has, and a client that sent it
// back (a strict session's expectedHead) would be refused for ever.
// pi.AppendString writes the escape the id came in as.

// MarshalJSON implements json.Marshaler: Head as pi.AppendString writes it.
func (r AppendResponse) MarshalJSON() ([]byte, error) {
	if r.Head == nil {
		return []byte(`{"head":null}`), nil
	}
	b := append([]byte(`{"head":`), pi.AppendString(nil, *r.Head)...)
	return append(b, '}'), nil
}

// MarshalJSON implements json.Marshaler: Head as pi.AppendString writes it.
func (m SessionMetadata) MarshalJSON() ([]byte, error) {
	type plain SessionMetadata
	return json.Marshal(struct {
		plain
		Head *pi.JSString `json:"head"`
	}{plain(m), (*pi.JSString)(m.Head)})
}

// MarshalJSON implements json.Marshaler: Head, EntryID and RefersTo as
// pi.AppendString writes them.
func (d ErrorDetail) MarshalJSON() ([]byte, error) {
	type plain ErrorDetail
	return json.Marshal(struct {
		plain
		Head     *pi.JSString `json:"head,omitempty"`
		EntryID  pi.JSString  `json:"entryId,omitempty"`
		RefersTo pi.JSString  `json:"refersTo,omitempty"`
	}{plain(d), (*pi.JSString)(d.Head), pi.JSString(d.EntryID), pi.JSString(d.RefersTo)})
}
