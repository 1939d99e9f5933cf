package main

import (
	"encoding/json"

	"github.com/transcriptstore/transcript/pi"
)

// describeEdit is the summary of a context_edit entry in a tree: the entry it
// edits or removes from the context, and the content it gives it.
func describeEdit(e pi.Entry) string {
	ed, ok := pi.ContextEditOf(e)
	switch {
	case !ok:
		return "(no target: edits nothing)"
	case ed.Removes():
		return "removes " + shortID(ed.Target) + " from the context"
	case ed.Replacement == nil:
		return "edits " + shortID(ed.Target) + " (no replacement: changes nothing)"
	}
	return "edits " + shortID(ed.Target) + ": " + contentText(ed.Content())
}

// editNotes returns, for each entry a context edit is about, a note per edit in
// order: "edited by ID" or "removed from the context by ID". An edit counts only
// on its own branch (docs/ENTRIES.md), so one entry may carry several.
func editNotes(entries []pi.Entry) map[string][]string {
	var notes map[string][]string
	for _, e := range entries {
		ed, ok := pi.ContextEditOf(e)
		if !ok {
			continue
		}
		if notes == nil {
			notes = make(map[string][]string)
		}
		note := "edited by " + shortID(e.ID())
		if ed.Removes() {
			note = "removed from the context by " + shortID(e.ID())
		}
		notes[ed.Target] = append(notes[ed.Target], note)
	}
	return notes
}

// describeUsage is the summary of a usage entry: its kind and model.
func describeUsage(e pi.Entry) string {
	var u struct{ Kind, Provider, Model string }
	_ = json.Unmarshal(e.Raw(), &u) // a field that is not a string shows as ""
	return u.Kind + " " + u.Provider + "/" + u.Model
}
