package repository

import (
	"errors"
	"fmt"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrConflict is wrapped when an append cannot be applied as asked: an entry id
	// exists with other bytes, or (strict mode) the expected head is stale.
	// Nothing was committed.
	ErrConflict = errors.New("conflict")
	// ErrStaleHead is wrapped, with ErrConflict, by a strict append whose expected
	// head is not the committed head (another writer committed first).
	ErrStaleHead = errors.New("stale head")
	// ErrExists is wrapped by Create when the session id is taken.
	ErrExists = errors.New("session already exists")
	// ErrInvalid is wrapped by errors about an invalid owner, session id, name,
	// option or entry.
	ErrInvalid = errors.New("invalid")
	// ErrHeadMismatch is wrapped by appends to a strict session whose stored head
	// does not match the head computed from its committed entries (a committed
	// segment is missing, or the head object was damaged). Reads still work.
	ErrHeadMismatch = errors.New("stored head does not match the committed entries")
	// ErrReadOnly is wrapped by appends to a session opened as of a point in time.
	ErrReadOnly = errors.New("session is read-only")
)

// EntryError is an append refused because of one of its entries: an id stored,
// or given twice in the call, with other bytes (wrapping ErrConflict), or a
// parentId or leaf target that names no stored entry and no earlier one of the
// call (wrapping ErrInvalid). Nothing was committed.
type EntryError struct {
	// EntryID is the id of the entry refused.
	EntryID string
	// RefersTo is, for an unknown reference, the id it names ("" otherwise).
	RefersTo string
	// Twice reports an id given twice in the call with other bytes.
	Twice bool
	// Err is ErrConflict or ErrInvalid.
	Err error
}

func (e *EntryError) Error() string {
	switch {
	case e.RefersTo != "":
		return fmt.Sprintf("%v: entry %q refers to unknown entry %q", e.Err, e.EntryID, e.RefersTo)
	case e.Twice:
		return fmt.Sprintf("%v: entry %q given twice with other bytes", e.Err, e.EntryID)
	default:
		return fmt.Sprintf("%v: entry %q exists with other bytes", e.Err, e.EntryID)
	}
}

// Unwrap returns ErrConflict or ErrInvalid.
func (e *EntryError) Unwrap() error { return e.Err }
