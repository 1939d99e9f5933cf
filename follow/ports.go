package follow

import (
	"context"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// Uploader takes the lines a follower hands over and says what it holds that the
// store may not have yet. The async mirror (mirror.Mirror) is the one the
// command wires in: its Upload returns once the batch is durable in its outbox
// journal, and a restarted mirror on the same outbox uploads what is left.
type Uploader interface {
	// Upload hands entries (raw JSON lines without their newline, in order) to
	// the store as one new segment of ref (several when they exceed a segment).
	// It returns once they are durable; an error means the batch was not
	// accepted, though part of a batch split into several segments may have
	// been (the follower reconciles before handing it over again).
	Upload(ctx context.Context, ref transcript.TranscriptRef, entries [][]byte) error
	// Pending returns the raw entries of ref that were accepted and may not be
	// in the store yet, in the order they were accepted. An entry leaves this
	// list only once the store holds it.
	Pending(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error)
}

// ParsedUploader is an Uploader that also takes what the follower read of each
// line it hands over, so that the store does not parse the lines a second
// time to describe them. The follower reads every line by pi.ParseLinks' rule
// before it hands it over; it calls UploadParsed instead of Upload when its
// Uploader has it.
type ParsedUploader interface {
	Uploader
	// UploadParsed is Upload of entries whose links the follower read:
	// links[i] is pi.ParseLinks of entries[i], and len(links) == len(entries).
	UploadParsed(ctx context.Context, ref transcript.TranscriptRef, entries [][]byte, links []pi.Links) error
}

// Store reads what the bucket holds of a session.
type Store interface {
	// Entries returns the raw entries of ref the store holds (the union of its
	// segments); a session that does not exist gives none and no error.
	Entries(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error)
}

// SessionChecker is a Store that also tells cheaply (a request or two, no read
// of the entries each time) whether it holds a session with its header. With it, the follower checks
// before it hands over the new lines of a file it handed lines of over before
// that the uploader or the store still holds the session: when neither does
// (the bucket was deleted and created again empty, the session's prefix
// deleted, the session deleted by a retention policy while its file is still
// written), the file is uploaded again from its start, header first, instead
// of leaving its new lines in a session without a header.
//
// It also keeps the follower's marker: a small object of the follower's own
// beside the sessions, which no compaction, retention or delete of sessions
// touches. A store that lost the marker lost everything the follower handed
// over (its bucket or its prefix emptied), so the follower then asks about
// every file, grown or not; a store that still holds it lost only sessions
// deleted on purpose, which come back only when their files grow.
type SessionChecker interface {
	Store
	// SessionExists reports whether the store holds ref's session with its
	// header. Entries of it without a header (an outbox's later lines that
	// landed after the store lost the session's start) do not count: the
	// follower then uploads the header and what the session lacks.
	SessionExists(ctx context.Context, ref transcript.TranscriptRef) (bool, error)
	// MarkerExists reports whether the store holds the marker of the follower
	// named id (a transcript.ValidateWriterID name) in namespace ns.
	MarkerExists(ctx context.Context, ns, id string) (bool, error)
	// PutMarker stores the marker of the follower named id in namespace ns,
	// body describing the follower; a marker already there is kept.
	PutMarker(ctx context.Context, ns, id string, body []byte) error
}

// RetentionChecker is a Store that also tells whether a retention policy
// marked a session for deletion (transcript.RetentionMarkName under the
// session's prefix, which Retain writes a delete delay before it deletes the
// session). While the follower asks about every file again after a lost
// marker, a session it saw so marked and then finds gone was deleted by
// retention, not by the emptying: it is not uploaded again unless its file
// grows (marker.go).
type RetentionChecker interface {
	// RetentionMarked reports whether the store holds a retention mark of ref.
	RetentionMarked(ctx context.Context, ref transcript.TranscriptRef) (bool, error)
}

// QueueDropper is an Uploader that can take back the batches of a session it
// accepted and has not begun to upload. When the store lost a session (its
// bucket emptied), the follower uploads the session's file again from its
// start; with a QueueDropper it first takes back what it handed over of the
// session before and that still waits, so that the refill holds those lines
// in the file's order, behind the header, instead of their landing ahead of
// it. Before it calls DropQueued, the follower records in its state file that
// nothing of the file is handed over, so that a crash before the refill is
// accepted reconciles the whole file again.
type QueueDropper interface {
	// DropQueued takes back ref's batches the store does not have yet and
	// returns how many segments it took back. One whose upload succeeds
	// meanwhile is not taken back, nor one still being uploaded when ctx
	// ends: Pending returns its entries until the store has them, and the
	// refill skips them.
	DropQueued(ctx context.Context, ref transcript.TranscriptRef) (int, error)
}

// BucketWatcher is an Uploader that tells when its uploads found the store's
// bucket missing (bucket.ErrNoBucket): deleted, while it still holds lines it
// retries. The follower then takes those lines back at once (QueueDropper)
// and uploads every file again, whole, once the bucket is back, so that they
// do not land in the bucket created again ahead of their sessions' headers.
type BucketWatcher interface {
	// BucketMissing returns a channel that receives when an upload found the
	// store's bucket missing since it last received (one value for many
	// failures); it is never closed.
	BucketMissing() <-chan struct{}
}
