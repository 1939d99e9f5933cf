package followmirror

import (
	"context"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

var _ follow.QueueDropper = (*Uploader)(nil)

// DropQueued takes back ref's segments that the store does not have yet
// (one in flight too, unless its PUT succeeds) and returns how many: the
// follower refilling a session the store lost hands their lines over again,
// in the file's order (mirror.Mirror.DropQueued).
func (u *Uploader) DropQueued(ctx context.Context, ref transcript.TranscriptRef) (int, error) {
	return u.m.DropQueued(ctx, ref)
}
