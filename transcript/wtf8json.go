package transcript

import (
	"fmt"

	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/pi"
)

// wtf8 is a string the store decoded from an entry (an entry id, a header's cwd
// or name), as it is kept in the store's own JSON objects (the strict head, the
// cached summary). Entry strings are decoded as JavaScript's JSON.parse decodes
// them (jsonscan.String): a lone UTF-16 surrogate ("\ud800", which Pi holds
// apart from "\udc00" and "\ufffd") is its WTF-8 bytes, which are not UTF-8.
// encoding/json writes each of those bytes as U+FFFD, so a head object would
// name an entry no session has; wtf8 writes the escape the string came in as
// (pi.AppendString) and reads it back as entries are read.
type wtf8 string

// MarshalJSON implements json.Marshaler.
func (s wtf8) MarshalJSON() ([]byte, error) { return pi.AppendString(nil, string(s)), nil }

// UnmarshalJSON implements json.Unmarshaler; null leaves s as it is.
func (s *wtf8) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, ok := jsonscan.String(b)
	if !ok {
		return fmt.Errorf("not a JSON string: %.40q", b)
	}
	*s = wtf8(v)
	return nil
}
