package followmirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

var _ follow.RetentionChecker = (*Uploader)(nil)

// RetentionMarked reports whether the store holds a retention mark of ref
// (one HEAD of transcript.RetentionMarkName under the session's prefix):
// a retention run decided to delete the session, a delete delay later.
func (u *Uploader) RetentionMarked(ctx context.Context, ref transcript.TranscriptRef) (bool, error) {
	_, err := u.s.Bucket().Stat(ctx, u.s.SessionPrefix(ref)+transcript.RetentionMarkName)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, bucket.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("look for the retention mark of %s: %w", ref, err)
}
