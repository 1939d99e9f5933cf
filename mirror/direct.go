package mirror

import (
	"context"
	"errors"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// Direct is the Uploader that stores each batch directly, in the caller's
// goroutine: Upload writes it as one segment before it returns, so the caller
// waits on object storage. It suits tools and tests; agent runtimes use the
// asynchronous Mirror.
type Direct struct {
	// Store receives the segments.
	Store *transcript.Store
	// Writer names this process in segment keys.
	Writer *transcript.Writer
}

var _ sessiontree.Uploader = (*Direct)(nil)

// Upload writes b.Entries as one segment of b.Ref, or several when they exceed
// segment.DefaultTargetSegmentSize.
func (s *Direct) Upload(ctx context.Context, b sessiontree.Batch) error {
	if s.Store == nil || s.Writer == nil {
		return errors.New("mirror: Direct needs a store and a writer")
	}
	if len(b.Entries) == 0 {
		return nil
	}
	_, err := s.Store.AppendSegments(ctx, b.Ref, b.Entries, s.Writer)
	return err
}

// PendingEntries returns nothing: Direct holds no batch after Upload returns.
func (s *Direct) PendingEntries(context.Context, transcript.TranscriptRef) ([][]byte, error) {
	return nil, nil
}

// ReadsLocalFiles reports false: Direct uploads the batch's entries.
func (s *Direct) ReadsLocalFiles() bool { return false }
