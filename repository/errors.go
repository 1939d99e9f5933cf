package repository

import (
	"errors"
	"fmt"
)

// Sentinel errors of the repository, tested with errors.Is. A meaning has one
// value, declared by the lowest package where it arises, and the repository's
// errors wrap those of the packages below it too, so that errors.Is answers the
// same at every layer:
//   - bucket.ErrNotFound: a session that does not exist for this repository's
//     owner (missing, deleted, or another owner's, which is indistinguishable
//     from missing, so ids cannot be probed), or an unknown entry id of a session;
//   - bucket.ErrExists: Create of a session id that is taken;
//   - transcript.ErrConflict: an append that cannot be applied as asked, because
//     an entry id exists with other bytes (EntryError) or, with ErrStaleHead, the
//     expected head is stale; nothing was committed;
//   - bucket.ErrUnavailable: the bucket could not be reached; retry later;
//   - pi.ErrInvalidEntry (with ErrInvalid): an entry that is not a Pi entry;
//   - segment.ErrEntryTooLarge and segment.ErrTooLarge: an entry, or the entries
//     of one append, over the store's limit.
var (
	// ErrStaleHead is wrapped, with transcript.ErrConflict, by a strict append
	// whose expected head is not the committed head (another writer committed
	// first).
	ErrStaleHead = errors.New("stale head")
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

// EntryError is an append refused because of one of its entries: one that is
// not a Pi entry or is over the entry limit (wrapping ErrInvalid and
// pi.ErrInvalidEntry or segment.ErrEntryTooLarge), an id stored, or given twice
// in the call, with other bytes (wrapping transcript.ErrConflict), or a parentId
// or leaf target that names no stored entry and no earlier one of the call
// (wrapping ErrInvalid). Nothing was committed.
type EntryError struct {
	// Index is the entry's position in the call's entries.
	Index int
	// EntryID is the id of the entry refused ("" for one that does not parse).
	EntryID string
	// RefersTo is, for an unknown reference, the id it names ("" otherwise).
	RefersTo string
	// Twice reports an id given twice in the call with other bytes.
	Twice bool
	// Err is transcript.ErrConflict, or an error wrapping ErrInvalid.
	Err error
}

func (e *EntryError) Error() string {
	switch {
	case e.RefersTo != "":
		return fmt.Sprintf("%v: entry %q refers to unknown entry %q", e.Err, e.EntryID, e.RefersTo)
	case e.Twice:
		return fmt.Sprintf("%v: entry %q given twice with other bytes", e.Err, e.EntryID)
	case e.EntryID == "":
		return fmt.Sprintf("entry %d: %v", e.Index, e.Err)
	default:
		return fmt.Sprintf("%v: entry %q exists with other bytes", e.Err, e.EntryID)
	}
}

// Unwrap returns Err.
func (e *EntryError) Unwrap() error { return e.Err }
