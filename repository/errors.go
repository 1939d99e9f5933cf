package repository

import (
	"errors"

	"github.com/transcriptstore/transcript/transcript"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrNotFound is wrapped by every error about a session that does not exist
	// for this repository's owner: missing, deleted, or another owner's (which is
	// indistinguishable from missing, so ids cannot be probed). It is
	// transcript.ErrNotFound. Also wrapped for an unknown entry id of a session.
	ErrNotFound = transcript.ErrNotFound
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
