package sessiontree

import (
	"errors"

	"github.com/transcriptstore/transcript/pi"
)

// The session model (entries, header, context and the tree rules) belongs to
// package pi; a Tree holds pi values. These names are the same types and values,
// kept so that the Tree's API reads on its own.
type (
	// Entry is pi.Entry.
	Entry = pi.Entry
	// Header is pi.Header.
	Header = pi.Header
	// Context is pi.Context.
	Context = pi.Context
	// Model is pi.Model.
	Model = pi.Model
)

// Sentinel errors, tested with errors.Is. The tree's errors also wrap those of
// the packages below it, declared once where they arise: bucket.ErrNotFound (an
// entry id, a session or its files that do not exist), transcript.ErrConflict
// (an entry id that exists with other bytes), pi.ErrInvalidEntry and
// pi.ErrInvalidHeader.
var (
	// ErrNotEditable is wrapped when a context edit names an entry that is not
	// on the active branch or gives the model no content to edit.
	ErrNotEditable = errors.New("entry not editable")
)

// ParseEntry parses one entry line; see pi.ParseEntry.
func ParseEntry(raw []byte) (Entry, error) { return pi.ParseEntry(raw) }

// BuildContextFrom builds the context of entries at leafID; see
// pi.BuildContextFrom.
func BuildContextFrom(entries []Entry, leafID *string) Context {
	return pi.BuildContextFrom(entries, leafID)
}

// HeaderOptions are the fields of a new session header.
type HeaderOptions struct {
	// ID is the session header id; empty means the session id of the tree.
	ID string
	// Cwd is the working directory recorded in the header.
	Cwd string
	// ParentSession names the session this one was forked from (omitted if empty).
	ParentSession string
}
