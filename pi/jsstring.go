package pi

import (
	"fmt"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

// JSString is a string decoded from an entry (an id, a header's cwd or name)
// as JavaScript's JSON.parse decodes it (jsonscan.String): a lone UTF-16
// surrogate ("\ud800", which Pi holds apart from "\udc00" and "\ufffd") is its
// WTF-8 bytes, which are not UTF-8. As JSON it is written as JSON.stringify
// writes it (AppendString: the escape it came in as) and read back the same
// way, so that one kept in the store's own JSON objects (the strict head, the
// cached summary) or sent in the server's answers names the entry it came
// from. encoding/json writes each of those bytes as U+FFFD: an id no entry has.
type JSString string

// MarshalJSON implements json.Marshaler.
func (s JSString) MarshalJSON() ([]byte, error) { return AppendString(nil, string(s)), nil }

// UnmarshalJSON implements json.Unmarshaler; null leaves s as it is.
func (s *JSString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, ok := jsonscan.String(b)
	if !ok {
		return fmt.Errorf("not a JSON string: %.40q", b)
	}
	*s = JSString(v)
	return nil
}
