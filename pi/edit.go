package pi

import "encoding/json"

// ContextEdit is what a context_edit entry says (docs/ENTRIES.md, "Building the
// context at a leaf", step 6): on its branch, the latest edit of an entry among
// those the context holds replaces the content of that entry's messages, or
// removes them.
type ContextEdit struct {
	// Target is the targetId: the entry the edit is about.
	Target string
	// Replacement is the raw "replacement" value, nil when the entry has none
	// (the edit then leaves the messages as they are).
	Replacement json.RawMessage
}

// ContextEditOf returns the edit a context_edit entry makes, or false for any
// other entry and for one whose targetId is not a string (it edits nothing).
func ContextEditOf(e Entry) (ContextEdit, bool) {
	if e.typ != TypeContextEdit {
		return ContextEdit{}, false
	}
	target, ok := jsonString(e.field(fTargetID))
	if !ok {
		return ContextEdit{}, false
	}
	return ContextEdit{Target: target, Replacement: topField(e.raw, "replacement")}, true
}

// Removes reports whether the edit removes its target's messages (a null
// replacement).
func (c ContextEdit) Removes() bool { return string(c.Replacement) == "null" }

// Content returns the content the edit gives its target's messages: the
// replacement's "content", nil when it has none (the key is then dropped), or
// when the edit removes the messages or has no replacement.
func (c ContextEdit) Content() json.RawMessage {
	if len(c.Replacement) == 0 || c.Replacement[0] != '{' {
		return nil
	}
	return topField(c.Replacement, "content")
}
