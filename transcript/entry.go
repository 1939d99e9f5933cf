package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidEntry is wrapped by errors about an entry the store cannot keep: not a JSON
// object, no string id, a parentId that is neither a string nor null, or a line break
// inside the raw bytes.
var ErrInvalidEntry = errors.New("invalid entry")

// Entry is one raw session entry as the store sees it. The store reads only id,
// parentId and timestamp; Raw is kept byte-for-byte.
type Entry struct {
	// ID is the entry's "id".
	ID string
	// ParentID is the entry's "parentId"; empty for null or absent (a root).
	ParentID string
	// Time is the entry's "timestamp"; zero when absent or not RFC 3339.
	Time time.Time
	// Raw is the entry exactly as appended, without a trailing newline.
	Raw []byte
	// Segment is the key of the segment the entry was read from (empty before upload).
	Segment string
	// Pos is the entry's index within that segment.
	Pos int
}

// entryHead is the part of an entry the store reads.
type entryHead struct {
	ID        *string         `json:"id"`
	ParentID  json.RawMessage `json:"parentId"`
	Timestamp string          `json:"timestamp"`
}

// ParseEntry reads id, parentId and timestamp from raw. raw is not copied.
func ParseEntry(raw []byte) (Entry, error) {
	if bytes.IndexByte(raw, '\n') >= 0 {
		return Entry{}, fmt.Errorf("%w: contains a line break", ErrInvalidEntry)
	}
	var h entryHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	if h.ID == nil || *h.ID == "" {
		return Entry{}, fmt.Errorf("%w: no string id", ErrInvalidEntry)
	}
	e := Entry{ID: *h.ID, Raw: raw}
	if p := bytes.TrimSpace(h.ParentID); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		if err := json.Unmarshal(p, &e.ParentID); err != nil {
			return Entry{}, fmt.Errorf("%w: entry %q: parentId is neither a string nor null", ErrInvalidEntry, e.ID)
		}
	}
	if h.Timestamp != "" {
		if t, err := time.Parse(time.RFC3339Nano, h.Timestamp); err == nil {
			e.Time = t.UTC()
		}
	}
	return e, nil
}
