package sessiontree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Typed constructors. Each builds a new entry in Pi's field order
// ({"type","id","parentId","timestamp",...fields}) with a random 8-hex-digit id,
// the current time (FormatTimestamp) and the active leaf as parent (null when the
// leaf is null), appends it as pending and makes it the active leaf (a "leaf"
// entry moves the leaf to its target instead). The bytes are fixed from then on.
// Raw JSON arguments (message, content, details, data) must be valid JSON; nil
// optional ones are omitted.

// AppendMessage appends a message entry holding the agent message msg (a JSON
// object with at least "role").
func (t *Tree) AppendMessage(msg json.RawMessage) (Entry, error) {
	if !isObject(msg) {
		return Entry{}, fmt.Errorf("%w: message must be a JSON object", pi.ErrInvalidEntry)
	}
	return t.appendNew(pi.TypeMessage, kv("message", pi.CompactJSON(msg)))
}

// AppendThinkingLevelChange appends a thinking_level_change entry.
func (t *Tree) AppendThinkingLevelChange(level string) (Entry, error) {
	return t.appendNew(pi.TypeThinkingLevelChange, kv("thinkingLevel", jstr(level)))
}

// AppendModelChange appends a model_change entry.
func (t *Tree) AppendModelChange(provider, modelID string) (Entry, error) {
	return t.appendNew(pi.TypeModelChange, kv("provider", jstr(provider)), kv("modelId", jstr(modelID)))
}

// AppendActiveToolsChange appends an active_tools_change entry.
func (t *Tree) AppendActiveToolsChange(names []string) (Entry, error) {
	if names == nil {
		names = []string{}
	}
	b, err := pi.Marshal(names)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", pi.ErrInvalidEntry, err)
	}
	return t.appendNew(pi.TypeActiveToolsChange, kv("activeToolNames", b))
}

// Compaction holds the fields of a compaction entry.
type Compaction struct {
	Summary          string
	FirstKeptEntryID string
	TokensBefore     int
	Details          json.RawMessage // optional
	Usage            json.RawMessage // optional: the usage of the call that made the summary
	FromHook         bool            // written only when true
}

// AppendCompaction appends a compaction entry. FirstKeptEntryID must name an
// existing entry. As Pi 1.6 does, it records the system message current at the
// active leaf (pi.CompactionSystemMessage of the context's messages) as
// "systemMessage" when the context holds one; a context built from the
// compaction starts with it. Flushing it rewrites the context file.
func (t *Tree) AppendCompaction(c Compaction) (Entry, error) {
	return t.appendBuilt(pi.TypeCompaction, []string{c.FirstKeptEntryID}, func(now time.Time) ([]pi.Member, error) {
		fs := []pi.Member{kv("summary", jstr(c.Summary)), kv("firstKeptEntryId", jstr(c.FirstKeptEntryID)),
			kv("tokensBefore", []byte(strconv.Itoa(c.TokensBefore)))}
		fs = appendOpt(fs, "details", c.Details)
		fs = appendOpt(fs, "usage", c.Usage)
		if c.FromHook {
			fs = append(fs, kv("fromHook", []byte("true")))
		}
		if t.leaf >= 0 {
			msgs := pi.BuildContext(t.entries, t.byID, t.leaf).Messages
			if sm := pi.CompactionSystemMessage(msgs, now); sm != nil {
				fs = append(fs, kv("systemMessage", sm))
			}
		}
		return fs, nil
	})
}

// AppendBranchSummary appends a branch_summary entry (fromId names the entry the
// branch was left from).
func (t *Tree) AppendBranchSummary(fromID, summary string, details json.RawMessage, fromHook bool) (Entry, error) {
	fs := []pi.Member{kv("fromId", jstr(fromID)), kv("summary", jstr(summary))}
	fs = appendOpt(fs, "details", details)
	if fromHook {
		fs = append(fs, kv("fromHook", []byte("true")))
	}
	return t.appendNew(pi.TypeBranchSummary, fs...)
}

// AppendCustom appends a custom entry (extension state, never in the context).
func (t *Tree) AppendCustom(customType string, data json.RawMessage) (Entry, error) {
	return t.appendNew(pi.TypeCustom, appendOpt([]pi.Member{kv("customType", jstr(customType))}, "data", data)...)
}

// AppendCustomMessage appends a custom_message entry; content is a JSON string or
// an array of content blocks.
func (t *Tree) AppendCustomMessage(customType string, content json.RawMessage, display bool, details json.RawMessage) (Entry, error) {
	if !json.Valid(content) {
		return Entry{}, fmt.Errorf("%w: content is not valid JSON", pi.ErrInvalidEntry)
	}
	fs := []pi.Member{kv("customType", jstr(customType)), kv("content", pi.CompactJSON(content)), kv("display", []byte(strconv.FormatBool(display)))}
	return t.appendNew(pi.TypeCustomMessage, appendOpt(fs, "details", details)...)
}

// AppendLabel labels entry targetID; an empty label clears it (the field is
// omitted, as Pi does).
func (t *Tree) AppendLabel(targetID, label string) (Entry, error) {
	fs := []pi.Member{kv("targetId", jstr(targetID))}
	if label != "" {
		fs = append(fs, kv("label", jstr(label)))
	}
	return t.appendNewChecked(pi.TypeLabel, []string{targetID}, fs...)
}

// AppendSessionInfo appends a session_info entry naming the session (an empty
// name omits the field).
func (t *Tree) AppendSessionInfo(name string) (Entry, error) {
	var fs []pi.Member
	if name != "" {
		fs = append(fs, kv("name", jstr(name)))
	}
	return t.appendNew(pi.TypeSessionInfo, fs...)
}

// AppendLeaf records a move of the active leaf to targetID ("" for null: before
// the first entry) as a leaf entry. The leaf entry itself is never on a path.
func (t *Tree) AppendLeaf(targetID string) (Entry, error) {
	if targetID == "" {
		return t.appendNew(pi.TypeLeaf, kv("targetId", []byte("null")))
	}
	return t.appendNewChecked(pi.TypeLeaf, []string{targetID}, kv("targetId", jstr(targetID)))
}

// AppendRaw appends an entry built by the caller, keeping its bytes (a trailing
// newline is not allowed). It must be a JSON object with a string "type" (not
// "session"), a non-empty string "id" and a "parentId" that is null or the id of
// an existing entry (errors wrap pi.ErrInvalidEntry or bucket.ErrNotFound). Appending an
// id that exists with the same bytes is a no-op returning the existing entry; with
// other bytes it fails with transcript.ErrConflict.
func (t *Tree) AppendRaw(raw []byte) (Entry, error) {
	raw = bytes.Clone(raw)
	if bytes.ContainsAny(raw, "\n\r") {
		raw = pi.CompactJSON(raw) // a newline would break the JSONL line
	}
	if err := checkSize(raw); err != nil {
		return Entry{}, err
	}
	e, err := ParseEntry(raw)
	if err != nil {
		return Entry{}, err
	}
	p, ok := e.Field("parentId")
	if !ok {
		return Entry{}, fmt.Errorf("%w: entry %q has no \"parentId\" (use null for a root)", pi.ErrInvalidEntry, e.ID())
	}
	parentID, hasParent := e.ParentID()
	if string(p) != "null" && !hasParent {
		return Entry{}, fmt.Errorf("%w: entry %q: \"parentId\" must be null or a non-empty string", pi.ErrInvalidEntry, e.ID())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.byID[e.ID()]; ok {
		if bytes.Equal(t.entries[i].Raw(), e.Raw()) {
			return t.entries[i], nil
		}
		return Entry{}, fmt.Errorf("append %q: %w", e.ID(), transcript.ErrConflict)
	}
	if hasParent {
		if _, ok := t.byID[parentID]; !ok {
			return Entry{}, fmt.Errorf("append %q: parent %q: %w", e.ID(), parentID, bucket.ErrNotFound)
		}
	}
	t.appendLocked(e)
	return e, nil
}

func (t *Tree) appendNew(typ string, fields ...pi.Member) (Entry, error) {
	return t.appendNewChecked(typ, nil, fields...)
}

// appendNewChecked builds and appends an entry; refs must name existing entries.
func (t *Tree) appendNewChecked(typ string, refs []string, fields ...pi.Member) (Entry, error) {
	return t.appendBuilt(typ, refs, func(time.Time) ([]pi.Member, error) { return fields, nil })
}

// appendBuilt builds and appends an entry of the time now, whose fields build
// returns (called with mu held, so it may read the tree; its error is
// returned as it is); refs must name existing entries.
func (t *Tree) appendBuilt(typ string, refs []string, build func(now time.Time) ([]pi.Member, error)) (Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range refs {
		if _, ok := t.byID[r]; !ok {
			return Entry{}, fmt.Errorf("append %s: entry %q: %w", typ, r, bucket.ErrNotFound)
		}
	}
	id, err := t.newID()
	if err != nil {
		return Entry{}, err
	}
	parent := ""
	if t.leaf >= 0 {
		parent = t.entries[t.leaf].ID()
	}
	now := t.cfg.now()
	fields, err := build(now)
	if err != nil {
		return Entry{}, err
	}
	e, err := pi.NewEntry(typ, id, parent, now, fields...)
	if err == nil {
		err = checkSize(e.Raw())
	}
	if err != nil {
		return Entry{}, fmt.Errorf("append %s: %w", typ, err)
	}
	t.appendLocked(e)
	return e, nil
}

// appendLocked adds a new locally created entry as pending (caller holds mu).
func (t *Tree) appendLocked(e Entry) {
	i := t.add(e, 0)
	t.pendingLocal = append(t.pendingLocal, i)
	t.pendingUpload = append(t.pendingUpload, i)
	if e.Type() == pi.TypeCompaction {
		t.rewriteCtx = true
	}
	t.advance(i)
}

// checkSize refuses an entry larger than the store holds, before anything is
// buffered: accepted, it could never be uploaded and would hold back every later
// flush of the session. The error wraps pi.ErrInvalidEntry and
// segment.ErrEntryTooLarge.
func checkSize(raw []byte) error {
	if err := segment.CheckEntrySize(len(raw)); err != nil {
		return fmt.Errorf("%w: %w", pi.ErrInvalidEntry, err)
	}
	return nil
}

func jstr(s string) []byte { return pi.AppendString(nil, s) }

func appendOpt(fs []pi.Member, name string, v json.RawMessage) []pi.Member {
	if v != nil {
		fs = append(fs, kv(name, pi.CompactJSON(v)))
	}
	return fs
}

func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// kv is one member of a new entry.
func kv(key string, value []byte) pi.Member { return pi.Member{Key: key, Value: value} }
