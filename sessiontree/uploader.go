package sessiontree

import (
	"context"

	"github.com/transcriptstore/transcript/transcript"
)

// Batch is what one SessionTree flush hands to the remote side.
type Batch struct {
	// Ref names the session, in the namespace of the tree's runtime context.
	Ref transcript.TranscriptRef
	// Entries are the raw JSON lines (without the trailing newline) that this flush
	// appended locally, in order. They are exactly the locally created entries that
	// were never handed over before; entries loaded from the log or the remote are
	// never in a batch. The slice and its bytes must not be modified by the receiver.
	Entries [][]byte
	// ContextPath and LogPath are the tree's local files after the flush (the legacy
	// full-file mirror uploads them; the segment mirror ignores them).
	ContextPath string
	LogPath     string
}

// Uploader receives flushed batches. Upload returns once the batch is as durable as
// the implementation promises (Sync: stored in the bucket; the async mirror: written
// to its local outbox). An error means the batch was not accepted and the caller may
// hand it over again.
type Uploader interface {
	Upload(ctx context.Context, b Batch) error
}

// LocalFilesReader is implemented by uploaders that read the tree's local files
// (the legacy full-file mirror). Flush writes the local files before it hands such an
// uploader the batch. Every other uploader gets the batch first: a crash between the
// two steps then leaves the entries in the outbox or the bucket, from where
// SyncFromRemote brings them back, never only on the local disk, from where nothing
// would upload them.
type LocalFilesReader interface {
	ReadsLocalFiles() bool
}

// PendingReader is implemented by uploaders that hold accepted batches that may not
// be in the store yet (the async Mirror's outbox). A SessionTree opened without local
// files reads them besides the store: Flush hands a batch over before it writes the
// local files, so a crash between the two leaves the session's newest entries, or
// all of it, only in the outbox. Started anew instead, the session would get a second
// header and lose its place in the tree.
type PendingReader interface {
	// PendingEntries returns the raw entries of ref's segments not yet known to be
	// stored, in the order they were accepted.
	PendingEntries(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error)
}
