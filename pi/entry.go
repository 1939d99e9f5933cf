package pi

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

// Entry types of the Pi session format.
const (
	TypeSession             = "session"
	TypeMessage             = "message"
	TypeThinkingLevelChange = "thinking_level_change"
	TypeModelChange         = "model_change"
	TypeActiveToolsChange   = "active_tools_change"
	TypeCompaction          = "compaction"
	TypeBranchSummary       = "branch_summary"
	TypeCustom              = "custom"
	TypeCustomMessage       = "custom_message"
	TypeLabel               = "label"
	TypeSessionInfo         = "session_info"
	TypeLeaf                = "leaf"
	// TypeContextEdit edits (or removes) what an earlier entry on its branch
	// gives the model (Pi 1.6).
	TypeContextEdit = "context_edit"
	// TypeUsage records model usage outside the context (Pi 1.6).
	TypeUsage = "usage"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrInvalidEntry is wrapped by every error about an entry that is not a JSON
	// object with a string "type" and "id".
	ErrInvalidEntry = errors.New("invalid entry")
	// ErrInvalidHeader is wrapped when a session file does not start with a valid
	// "session" header line.
	ErrInvalidHeader = errors.New("invalid session header")
)

// field indexes the top-level fields an Entry remembers.
type field uint8

const (
	fType field = iota
	fID
	fParentID
	fTimestamp
	fMessage
	fThinkingLevel
	fProvider
	fModelID
	fSummary
	fFirstKeptEntryID
	fTokensBefore
	fDetails
	fFromID
	fCustomType
	fContent
	fDisplay
	fTargetID
	fLabel
	fName
	fVersion
	nFields
)

func fieldOf(key string) (field, bool) {
	switch key {
	case "type":
		return fType, true
	case "id":
		return fID, true
	case "parentId":
		return fParentID, true
	case "timestamp":
		return fTimestamp, true
	case "message":
		return fMessage, true
	case "thinkingLevel":
		return fThinkingLevel, true
	case "provider":
		return fProvider, true
	case "modelId":
		return fModelID, true
	case "summary":
		return fSummary, true
	case "firstKeptEntryId":
		return fFirstKeptEntryID, true
	case "tokensBefore":
		return fTokensBefore, true
	case "details":
		return fDetails, true
	case "fromId":
		return fFromID, true
	case "customType":
		return fCustomType, true
	case "content":
		return fContent, true
	case "display":
		return fDisplay, true
	case "targetId":
		return fTargetID, true
	case "label":
		return fLabel, true
	case "name":
		return fName, true
	case "version":
		return fVersion, true
	}
	return 0, false
}

// span locates a value inside Entry.raw; n == 0 means absent.
type span struct{ off, n int32 }

// Entry is one immutable session entry: its raw JSON bytes plus the few top-level
// fields the tree needs. The zero Entry is not valid. Entries are values; copying
// one is cheap and shares the (never modified) raw bytes.
type Entry struct {
	raw      []byte
	typ      string
	id       string
	parentID string
	hasPar   bool
	ts       string
	spans    *[nFields]span
}

// ParseEntry parses one entry line (without the trailing newline). It keeps raw as
// the entry's bytes (it does not copy it; the caller must not modify raw later).
// The line must be a JSON object with a string "type" other than "session" and
// links by the rule of Links (a non-empty string "id"; a "parentId" that is
// absent, null or a string, "" and null making the entry a root); otherwise the
// error wraps ErrInvalidEntry.
func ParseEntry(raw []byte) (Entry, error) {
	e, err := parseObject(raw)
	if err != nil {
		return Entry{}, err
	}
	return e.asEntry()
}

// ScanEntry is ParseEntry of bytes known to be one line of valid JSON (an entry
// of a verified segment, which only a writer that applied ParseEntry or
// ParseLinks stored), as ScanLinks is of ParseLinks: it applies the same rules
// to the fields it reads but does not validate the values it skips.
func ScanEntry(raw []byte) (Entry, error) {
	e, err := scanObject(raw)
	if err != nil {
		return Entry{}, err
	}
	return e.asEntry()
}

// asEntry applies the rules of a tree entry to a scanned line.
func (e Entry) asEntry() (Entry, error) {
	if e.typ == TypeSession {
		return Entry{}, fmt.Errorf("%w: a session header is not a tree entry", ErrInvalidEntry)
	}
	if err := e.checkLinks(); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// checkLinks applies the rule of Links to a parsed line.
func (e Entry) checkLinks() error {
	if _, err := idOf(e.field(fID)); err != nil {
		return err
	}
	_, err := parentOf(e.id, e.field(fParentID))
	return err
}

// parseObject scans a JSON object and fills the known fields, without the
// entry-specific checks (it also parses headers and v1 entries).
func parseObject(raw []byte) (Entry, error) {
	if err := oneLine(raw); err != nil {
		return Entry{}, err
	}
	if !json.Valid(raw) {
		return Entry{}, fmt.Errorf("%w: not valid JSON", ErrInvalidEntry)
	}
	return scanObject(raw)
}

// scanObject is parseObject of one line of valid JSON. Keys are compared
// without being copied.
func scanObject(raw []byte) (Entry, error) {
	e := Entry{raw: raw, spans: new([nFields]span)}
	err := jsonscan.EachRawField(raw, func(key, v []byte, off int) {
		if f, ok := fieldOf(string(key)); ok {
			e.spans[f] = span{int32(off), int32(len(v))}
		}
	})
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	if e.typ = typeName(e.field(fType)); e.typ == "" {
		return Entry{}, fmt.Errorf("%w: missing or non-string \"type\"", ErrInvalidEntry)
	}
	e.id, _ = jsonString(e.field(fID))
	e.parentID, e.hasPar = jsonString(e.field(fParentID))
	if e.parentID == "" {
		e.hasPar = false
	}
	e.ts, _ = jsonString(e.field(fTimestamp))
	return e, nil
}

func (e Entry) field(f field) []byte {
	if e.spans == nil {
		return e.scanField(f)
	}
	s := e.spans[f]
	if s.n == 0 {
		return nil
	}
	return e.raw[s.off : s.off+s.n : s.off+s.n]
}

// scanField is field for an entry made by EntryOfLinks, which locates no field
// up front: the value of the last occurrence of f's key, found by one scan of
// the top level (nil for the zero Entry).
func (e Entry) scanField(f field) []byte {
	var out []byte
	_ = jsonscan.EachRawField(e.raw, func(key, v []byte, _ int) { // raw was scanned before
		if g, ok := fieldOf(string(key)); ok && g == f {
			out = v[:len(v):len(v)]
		}
	})
	return out
}

// EntryOfLinks is the Entry of raw, a line that ScanLinks or ParseLinks
// accepted with links l, made without scanning raw again: its type, id and
// parentId are l's. Its other fields are read from raw when asked for, one
// scan of the top level per call, where ParseEntry and ScanEntry locate them
// all up front: the cheap way to hold many entries of which few are inspected,
// as a session handle that serves most of its entries as bytes does. The
// error, wrapping ErrInvalidEntry, is ScanEntry's for a line whose "type" is
// missing or "session".
func EntryOfLinks(raw []byte, l Links) (Entry, error) {
	switch {
	case l.Type == "":
		return Entry{}, fmt.Errorf("%w: missing or non-string \"type\"", ErrInvalidEntry)
	case l.Type == TypeSession:
		return Entry{}, fmt.Errorf("%w: a session header is not a tree entry", ErrInvalidEntry)
	case l.ID == "":
		return Entry{}, fmt.Errorf("%w: missing or empty string \"id\"", ErrInvalidEntry)
	}
	return Entry{raw: raw, typ: l.Type, id: l.ID, parentID: l.ParentID, hasPar: l.ParentID != ""}, nil
}

// Raw returns the entry's bytes exactly as stored (one line, without "\n"). The
// caller must not modify them.
func (e Entry) Raw() []byte { return e.raw }

// Type returns the entry's "type".
func (e Entry) Type() string { return e.typ }

// ID returns the entry's "id".
func (e Entry) ID() string { return e.id }

// ParentID returns the entry's "parentId" and true, or "" and false for a root.
func (e Entry) ParentID() (string, bool) { return e.parentID, e.hasPar }

// Links returns what ParseLinks reads of the entry's line: a caller that has
// parsed an entry hands these on instead of having the line scanned again.
func (e Entry) Links() Links {
	parent, _ := e.ParentID()
	return Links{ID: e.ID(), ParentID: parent, Timestamp: e.Timestamp(), Type: e.Type()}
}

// Timestamp returns the entry's ISO-8601 "timestamp" ("" if absent).
func (e Entry) Timestamp() string {
	if e.spans == nil && e.raw != nil { // EntryOfLinks
		ts, _ := jsonString(e.field(fTimestamp))
		return ts
	}
	return e.ts
}

// Field returns the raw bytes of a top-level field the entry model knows (type,
// id, parentId, timestamp, message, thinkingLevel, provider, modelId, summary,
// firstKeptEntryId, tokensBefore, details, fromId, customType, content, display,
// targetId, label, name) and whether it is present.
func (e Entry) Field(name string) (json.RawMessage, bool) {
	f, ok := fieldOf(name)
	if !ok {
		return nil, false
	}
	v := e.field(f)
	return v, v != nil
}

// Message returns the raw "message" object of a message entry (nil otherwise).
func (e Entry) Message() json.RawMessage {
	if e.typ != TypeMessage {
		return nil
	}
	return e.field(fMessage)
}

// Role returns message.role of a message entry ("" otherwise).
func (e Entry) Role() string {
	m := e.Message()
	if m == nil {
		return ""
	}
	r, _ := jsonString(topField(m, "role"))
	return r
}

// StringField returns a top-level string field the entry model knows, decoded.
func (e Entry) StringField(name string) (string, bool) {
	v, ok := e.Field(name)
	if !ok {
		return "", false
	}
	return jsonString(v)
}

// jsonString decodes a JSON string value; ok is false for anything else.
func jsonString(v []byte) (string, bool) { return jsonscan.String(v) }

// topField returns the raw value of one top-level key of a JSON object (the last
// occurrence, as JavaScript's JSON.parse keeps), or nil.
func topField(obj []byte, name string) []byte { return jsonscan.Field(obj, name) }

// eachField calls fn for each top-level key of the JSON object obj (see
// jsonscan.EachField); errors wrap ErrInvalidEntry.
func eachField(obj []byte, fn func(key string, v []byte, off int)) error {
	if err := jsonscan.EachField(obj, fn); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	return nil
}

// CheckObject returns nil if raw is a JSON object with a non-empty string "type"
// (a header line or an entry of any format version); otherwise an error wrapping
// ErrInvalidEntry.
func CheckObject(raw []byte) error {
	_, err := parseObject(raw)
	return err
}
