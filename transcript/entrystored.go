package transcript

import (
	"time"

	"github.com/transcriptstore/transcript/pi"
)

// parseStoredEntry is ParseEntry for an entry read back from a segment that
// decoded and verified (its checksum proves the bytes are those the writer
// encoded, and writers accept only entries that ParseEntry accepts): it reads
// id, parentId and timestamp with pi.ScanLinks, the same rule without the full
// JSON validation, which was half of what reading a compacted session cost.
// Entries that are not objects, or lack a string id, are still rejected with
// pi.ErrInvalidEntry; what a foreign writer stored inside a value is left to the
// consumers of the entries (the SessionTree validates every entry it loads).
func parseStoredEntry(raw []byte) (Entry, error) {
	l, err := pi.ScanLinks(raw)
	if err != nil {
		return Entry{}, err
	}
	return entryOf(raw, l), nil
}

// entryOf is the Entry of raw with links l: its "timestamp", when RFC 3339,
// becomes Time.
func entryOf(raw []byte, l pi.Links) Entry {
	e := Entry{ID: l.ID, ParentID: l.ParentID, Type: l.Type, Raw: raw}
	if l.Timestamp != "" {
		if t, err := time.Parse(time.RFC3339Nano, l.Timestamp); err == nil {
			e.Time = t.UTC()
		}
	}
	return e
}
