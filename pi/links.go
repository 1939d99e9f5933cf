package pi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

// Links are the fields that place one line of a session in the tree, and the
// only fields the store reads of a line: its "id", its "parentId" ("" for a
// root) and its "timestamp" (as written; "" when absent or not a string).
//
// One rule decides them, for every package that reads or writes lines (this
// package's ParseEntry and ParseHeader, and the store's transcript.ParseEntry):
// a line is one JSON object without a line break in its bytes, with a non-empty
// string "id"; its "parentId" is absent or null (a root), or a string (the empty
// string is a root too). Any other "parentId" (a number, an object, true) makes
// the line invalid: Pi's format says "an id, or null", and a reader that took a
// number for a root would disagree with a store that cannot name it as a parent.
// Neither "id" nor "parentId" may be longer than MaxIDLen bytes: the store
// names ids in a segment's metadata, which cannot hold a longer one, so such a
// line could be written once and then never compacted. "timestamp" is read
// when it is a string and never checked.
//
// Type is the line's "type" when it is a string ("" otherwise), read in the
// same scan and not checked: Links places a line, ParseEntry says whether it
// is a tree entry.
type Links struct {
	ID, ParentID, Timestamp string
	Type                    string
}

// ParseLinks checks raw, one line of a session, against the rule of Links and
// returns its links; the whole line must be valid JSON. Errors wrap
// ErrInvalidEntry. raw is not kept.
func ParseLinks(raw []byte) (Links, error) {
	if err := oneLine(raw); err != nil {
		return Links{}, err
	}
	if !json.Valid(raw) {
		return Links{}, fmt.Errorf("%w: not valid JSON", ErrInvalidEntry)
	}
	return ScanLinks(raw)
}

// ScanLinks is ParseLinks of bytes known to be one line of valid JSON (an entry
// of a verified segment, which only a writer that applied ParseLinks stored): it
// scans the top level of the object and does not validate the values it skips.
func ScanLinks(raw []byte) (Links, error) {
	var id, parent, ts, typ []byte
	err := jsonscan.EachRawField(raw, func(key, v []byte, _ int) {
		switch string(key) {
		case "type":
			typ = v
		case "id":
			id = v
		case "parentId":
			parent = v
		case "timestamp":
			ts = v
		}
	})
	if err != nil {
		return Links{}, fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	var l Links
	if l.ID, err = idOf(id); err != nil {
		return Links{}, err
	}
	if l.ParentID, err = parentOf(l.ID, parent); err != nil {
		return Links{}, err
	}
	l.Timestamp, _ = jsonString(ts)
	l.Type = typeName(typ)
	return l, nil
}

// typeName decodes the raw "type" value v, sharing the string of a known type
// rather than allocating one per line; "" when v is absent or not a string.
func typeName(v []byte) string {
	switch string(v) {
	case `"message"`:
		return TypeMessage
	case `"session"`:
		return TypeSession
	case `"model_change"`:
		return TypeModelChange
	case `"thinking_level_change"`:
		return TypeThinkingLevelChange
	case `"compaction"`:
		return TypeCompaction
	case `"custom"`:
		return TypeCustom
	case `"custom_message"`:
		return TypeCustomMessage
	case `"label"`:
		return TypeLabel
	case `"session_info"`:
		return TypeSessionInfo
	case `"leaf"`:
		return TypeLeaf
	case `"branch_summary"`:
		return TypeBranchSummary
	}
	t, _ := jsonString(v)
	return t
}

// oneLine refuses bytes that hold a line break: a line of a JSONL file cannot.
func oneLine(raw []byte) error {
	if bytes.IndexByte(raw, '\n') >= 0 {
		return fmt.Errorf("%w: contains a line break", ErrInvalidEntry)
	}
	return nil
}

// idOf applies the rule of Links to the raw value of "id" (nil: absent).
func idOf(v []byte) (string, error) {
	id, ok := jsonString(v)
	if !ok || id == "" {
		return "", fmt.Errorf("%w: missing or empty string \"id\"", ErrInvalidEntry)
	}
	if len(id) > MaxIDLen {
		return "", fmt.Errorf("%w: \"id\" of %d bytes, over the limit of %d", ErrInvalidEntry, len(id), MaxIDLen)
	}
	return id, nil
}

// MaxIDLen is the longest "id" or "parentId" of a line, in bytes (see Links):
// what a segment's metadata can name.
const MaxIDLen = 1<<16 - 1

// parentOf applies the rule of Links to the raw value of "parentId" (nil:
// absent) of the line with id id: "" for a root.
func parentOf(id string, v []byte) (string, error) {
	if v == nil || string(v) == "null" {
		return "", nil
	}
	p, ok := jsonString(v)
	if !ok {
		return "", fmt.Errorf("%w: entry %q: \"parentId\" %s is neither a string nor null", ErrInvalidEntry, id, v)
	}
	if len(p) > MaxIDLen {
		return "", fmt.Errorf("%w: entry %q: \"parentId\" of %d bytes, over the limit of %d", ErrInvalidEntry, id, len(p), MaxIDLen)
	}
	return p, nil
}
