package follow

import (
	"time"

	"github.com/transcriptstore/transcript/transcript"
)

// EventKind says what an Event reports.
type EventKind string

// The events of a Follower. Each warning (every kind but EventUploaded and
// EventError) is reported once per file and cause, not on every read; an
// EventError is reported on every failed attempt, each retried after a
// growing pause (1 s, doubling, at most a minute).
const (
	// EventUploaded: lines of a file were handed over as a segment (Entries),
	// or recognised as stored already (Stored).
	EventUploaded EventKind = "uploaded"
	// EventIgnored: a file that is not a Pi session file (not a .jsonl file, not
	// a regular file, or its first line is not a session header). It is watched
	// again only when it is rewritten.
	EventIgnored EventKind = "ignored"
	// EventLegacy: a Pi session file of version 1 or 2. Pi rewrites it as
	// version 3 when it opens it; the follower uploads it then.
	EventLegacy EventKind = "legacy"
	// EventMalformed: a complete line that is not an entry (Pi's repair of a
	// torn line, a second header), skipped as Pi skips it when it loads the
	// file; or a complete line over the store's entry limit
	// (segment.DefaultMaxEntrySize), skipped because the store cannot hold it.
	// The lines after it are uploaded.
	EventMalformed EventKind = "malformed"
	// EventConflict: the store holds an entry id of the file with other bytes;
	// the line is not uploaded. For the header, nothing of the file is.
	EventConflict EventKind = "conflict"
	// EventRewritten: the file was rewritten in place (truncated, replaced, or
	// its bytes before the follower's offset changed), or the store and the
	// uploader lack what was handed over of it (a bucket emptied under the
	// follower): it is read again from its start and only what the store
	// lacks is uploaded, header first.
	EventRewritten EventKind = "rewritten"
	// EventLost: the store lost the follower's marker (its bucket or prefix
	// emptied): every file some of whose lines were handed over is asked about,
	// and an EventRewritten follows for each whose session the store lost too.
	EventLost EventKind = "lost"
	// EventCopied: the state file was written on another machine or in
	// another state directory (copied with a home directory, a cloned VM
	// image, or moved): the follower takes a new id, so that its marker is
	// its own, and asks whether the store holds the session of every file
	// handed over, as after EventLost.
	EventCopied EventKind = "copied"
	// EventRemoved: the file was removed locally; the bucket keeps the session.
	EventRemoved EventKind = "removed"
	// EventStuck: the file has ended in an unterminated line, or failed to
	// upload, for Config.StuckAfter; or it cannot be followed at all.
	EventStuck EventKind = "stuck"
	// EventError: a read, an upload or a state write failed; it is retried.
	EventError EventKind = "error"
)

// Event is one thing a Follower did or found.
type Event struct {
	Time time.Time
	Kind EventKind
	// File is the path relative to Config.Root.
	File string
	// Session is the session the file maps to (zero before the file's header
	// was read).
	Session transcript.TranscriptRef
	// Lines counts the complete lines read; Entries those handed over; Stored
	// those the store or the uploader held already; Bytes the bytes handed
	// over.
	Lines, Entries, Stored int
	Bytes                  int64
	// Offset is the file offset the event is about (after an upload: the bytes
	// of the file handed over or skipped so far).
	Offset int64
	// Message says more (the reason, the error).
	Message string
}
