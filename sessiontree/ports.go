package sessiontree

import (
	"context"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// Batch is what one Flush hands to the Uploader.
type Batch struct {
	// Ref names the session, in the namespace of the tree's Identity.
	Ref transcript.TranscriptRef
	// Entries are the raw JSON lines (without the trailing newline) that this flush
	// appended locally, in order. They are exactly the locally created entries that
	// were never handed over before; entries loaded from the log or the store are
	// never in a batch. The slice and its bytes must not be modified by the receiver.
	Entries [][]byte
	// Links, when not nil, holds what the tree read of each entry when it
	// appended it (Links[i] of Entries[i], by pi.ParseEntry's rule), so that an
	// uploader need not parse the entries again. It is nil for a batch that
	// carries the session header (not an entry). A caller that builds a Batch
	// itself leaves it nil unless it read the links by that rule.
	Links []pi.Links
	// Files are the tree's local files. An uploader that ReadsLocalFiles uploads
	// the context file and the log; the others ignore them.
	Files Files
}

// Uploader is the port through which a Tree's new entries reach the store: Flush
// hands it each batch once, and Open and Restore ask it for what it accepted and
// the store may not have yet. Package mirror implements it (the asynchronous
// Mirror with its crash-safe outbox, Direct in the caller's goroutine, and Legacy,
// the full-file mirror); a Tree without one stays local.
type Uploader interface {
	// Upload accepts b. It returns once b is as durable as the implementation
	// promises: stored in the bucket, or in a local outbox from which it reaches the
	// bucket after any crash. An error means b was not accepted: the tree keeps its
	// entries pending and hands them over again with the next Flush, so accepting
	// the same entries twice must be harmless (readers collapse identical entries).
	Upload(ctx context.Context, b Batch) error
	// PendingEntries returns the raw entries of ref that Upload accepted and the
	// store may not hold yet, in the order they were accepted; none (nil, nil) for
	// an uploader whose Upload returns only once the store has the batch. A tree
	// opened without local files merges them with what the store holds: Flush
	// hands a batch over before it writes the local files, so a crash between the
	// two leaves the session's newest entries, or all of it, only with the
	// uploader. Started anew instead, the session would get a second header and
	// lose its place. Read-only.
	PendingEntries(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error)
	// ReadsLocalFiles reports whether Upload reads the tree's local files
	// (Batch.Files) rather than Batch.Entries; it must always give the same
	// answer. Flush then writes the local files before it calls Upload.
	// Otherwise Upload comes first: a crash between the two steps then leaves the
	// entries with the uploader or in the store, from where Pull and
	// PendingEntries bring them back, and entries the local disk holds that
	// Upload refused are named in the unsent file (Files.Unsent), from where
	// Load makes them pending again.
	ReadsLocalFiles() bool
}

// StoreReader is the port through which a Tree reads what the transcript store
// holds of its session: transcript.Store implements it, and so does
// transcript.Listed (a reader that uses a listing in hand).
type StoreReader interface {
	// ReadNew returns the union-merge of ref's segments that have does not hold
	// (see transcript.Store.ReadNew), and the set held once they are applied: what
	// a Tree's first read of a session (an empty set) gets is the whole session,
	// later reads cost what is new. Raw entries are JSON lines without "\n"; the
	// session header, if stored, is an entry of type "session". A session with no
	// segments returns an error wrapping bucket.ErrNotFound, or an increment without
	// entries. Read-only; no side effects.
	ReadNew(ctx context.Context, ref transcript.TranscriptRef, have transcript.SegmentSet) (*transcript.Increment, error)
}
