package followmirror

import (
	"context"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

var _ follow.QueueDropper = (*Uploader)(nil)

// DropQueued takes back ref's segments that wait in the outbox (not the one
// in flight) and returns how many: the follower refilling a session the
// store lost hands their lines over again, in the file's order
// (mirror.Mirror.DropQueued).
func (u *Uploader) DropQueued(_ context.Context, ref transcript.TranscriptRef) (int, error) {
	return u.m.DropQueued(ref), nil
}
