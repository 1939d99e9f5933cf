package mirror

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
