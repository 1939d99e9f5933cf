package transcript

import (
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
)

// Entry is one raw session entry as the store sees it. The store reads only id,
// parentId and timestamp; Raw is kept byte-for-byte.
type Entry struct {
	// ID is the entry's "id".
	ID string
	// ParentID is the entry's "parentId"; empty for null or absent (a root).
	ParentID string
	// Type is the entry's "type" when it is a string (pi.Links.Type), read in
	// the scan that reads its id; empty when the id came from a segment's entry
	// index without a scan.
	Type string
	// Time is the entry's "timestamp"; zero when absent or not RFC 3339, and in
	// merge results for entries taken from a segment's entry index (their id and
	// parentId come from the index, without a scan of the JSON).
	Time time.Time
	// Raw is the entry exactly as appended, without a trailing newline.
	Raw []byte
	// Segment is the key of the segment the entry was read from (empty before upload).
	Segment string
	// Pos is the entry's index within that segment.
	Pos int
	// Origin is where the entry was first stored (set by a merge).
	Origin Origin
	// Refs lists the payloads Raw holds by reference, with their offsets in Raw
	// (segment.PayloadRef; Entry is the position in Segment). Reads put payloads
	// back and leave Refs empty; only a Stored read returns entries with them.
	Refs []segment.PayloadRef
	// Resolved lists, for an entry a read returned with its payloads put back
	// (Refs empty), the references it was stored with, offsets in the stored
	// form: what StoredForm needs to give the entry as stored without reading
	// it again. Empty for an entry stored whole, and in a Stored read.
	Resolved []segment.PayloadRef
}

// ParseEntry reads id, parentId and timestamp from raw by the rule every package
// shares (pi.ParseLinks: one line of valid JSON, a non-empty string id, a
// parentId that is a string or null), matching keys exactly as JavaScript does.
// Errors wrap pi.ErrInvalidEntry. raw is not copied.
func ParseEntry(raw []byte) (Entry, error) {
	l, err := pi.ParseLinks(raw)
	if err != nil {
		return Entry{}, err
	}
	return entryOf(raw, l), nil
}
