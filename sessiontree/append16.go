package sessiontree

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// The entries Pi 1.6 added (docs/ENTRIES.md). A system message is an agent
// message like any other: AppendMessage with "role":"system".

// AppendContextEdit appends a context_edit entry that edits what entry targetID
// gives the model on the active branch, as Pi 1.6's appendContextEdit does:
// replacement is null (the entry's messages leave the context) or an object
// whose "content" (a string or an array) replaces theirs. The target must be on
// the active branch and be a user, assistant or toolResult message or a
// custom_message (else the error wraps ErrNotEditable; an unknown id,
// bucket.ErrNotFound). A string content for an assistant or toolResult message is
// stored as one text block, as Pi stores it.
func (t *Tree) AppendContextEdit(targetID string, replacement json.RawMessage) (Entry, error) {
	replacement = pi.CompactJSON(replacement)
	removes := string(replacement) == "null"
	var content json.RawMessage
	if !removes {
		ed := pi.ContextEdit{Replacement: replacement}
		content = ed.Content()
		if !isObject(replacement) || len(content) == 0 || content[0] != '"' && content[0] != '[' {
			return Entry{}, fmt.Errorf("%w: a context edit's replacement must be null or an object with a string or array content", pi.ErrInvalidEntry)
		}
	}
	return t.appendBuilt(pi.TypeContextEdit, nil, func(time.Time) ([]pi.Member, error) {
		role, err := t.editableRole(targetID)
		if err != nil {
			return nil, err
		}
		if !removes && content[0] == '"' && (role == "assistant" || role == "toolResult") {
			replacement = append(append([]byte(`{"content":[{"type":"text","text":`), content...), `}]}`...)
		}
		return []pi.Member{kv("targetId", jstr(targetID)), kv("replacement", replacement)}, nil
	})
}

// editableRole returns the role of the message that entry id gives the model,
// "custom" for a custom_message, when a context edit may name it (caller holds
// mu).
func (t *Tree) editableRole(id string) (string, error) {
	i, ok := t.byID[id]
	if !ok {
		return "", fmt.Errorf("context edit of %q: %w", id, bucket.ErrNotFound)
	}
	onBranch := false
	if t.leaf >= 0 {
		for _, k := range pi.PathTo(t.entries, t.byID, t.leaf) {
			onBranch = onBranch || k == i
		}
	}
	if !onBranch {
		return "", fmt.Errorf("context edit of %q: not on the active branch: %w", id, ErrNotEditable)
	}
	e := t.entries[i]
	switch role := e.Role(); {
	case e.Type() == pi.TypeCustomMessage:
		return "custom", nil
	case role == "user" || role == "assistant" || role == "toolResult":
		return role, nil
	}
	return "", fmt.Errorf("context edit of %q: a %s entry gives no content to edit: %w", id, e.Type(), ErrNotEditable)
}

// AppendUsage appends a usage entry: model usage outside the context (a cache
// warm-up, a title), which changes nothing the model sees. usage is the usage
// object; an empty note is left out.
func (t *Tree) AppendUsage(kind, provider, model string, usage json.RawMessage, note string) (Entry, error) {
	if !json.Valid(usage) {
		return Entry{}, fmt.Errorf("%w: usage is not valid JSON", pi.ErrInvalidEntry)
	}
	fs := []pi.Member{kv("kind", jstr(kind)), kv("provider", jstr(provider)), kv("model", jstr(model)), kv("usage", pi.CompactJSON(usage))}
	if note != "" {
		fs = append(fs, kv("note", jstr(note)))
	}
	return t.appendNew(pi.TypeUsage, fs...)
}
