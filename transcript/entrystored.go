package transcript

import (
	"fmt"
	"time"

	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/pi"
)

// parseStoredEntry is ParseEntry for an entry read back from a segment that
// decoded and verified (its checksum proves the bytes are those the writer
// encoded, and writers accept only entries that ParseEntry accepts). It scans the
// top level of the object for id, parentId and timestamp, and skips ParseEntry's
// full JSON validation, which was half of what reading a compacted session cost.
// Entries that are not objects, or lack a string id, are still rejected with
// pi.ErrInvalidEntry; what a foreign writer stored inside a value is left to the
// consumers of the entries (the SessionTree validates every entry it loads).
func parseStoredEntry(raw []byte) (Entry, error) {
	var id, parent, ts []byte
	err := jsonscan.EachField(raw, func(key string, v []byte, _ int) {
		switch key {
		case "id":
			id = v
		case "parentId":
			parent = v
		case "timestamp":
			ts = v
		}
	})
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", pi.ErrInvalidEntry, err)
	}
	e := Entry{Raw: raw}
	var ok bool
	if e.ID, ok = jsonscan.String(id); !ok || e.ID == "" {
		return Entry{}, fmt.Errorf("%w: no string id", pi.ErrInvalidEntry)
	}
	if parent != nil && string(parent) != "null" {
		if e.ParentID, ok = jsonscan.String(parent); !ok {
			return Entry{}, fmt.Errorf("%w: entry %q: parentId is neither a string nor null", pi.ErrInvalidEntry, e.ID)
		}
	}
	if s, ok := jsonscan.String(ts); ok && s != "" {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			e.Time = t.UTC()
		}
	}
	return e, nil
}
