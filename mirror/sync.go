package mirror

import (
	"context"
	"errors"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// Sync is the synchronous Uploader: Upload stores the batch as one segment before it
// returns, so the caller waits on object storage. It suits tools and tests; agent
// runtimes use the asynchronous Mirror.
type Sync struct {
	// Store receives the segments.
	Store *transcript.Store
	// Writer names this process in segment keys.
	Writer *transcript.Writer
}

var _ sessiontree.Uploader = (*Sync)(nil)

// Upload writes b.Entries as one segment of b.Ref, or several when they exceed
// segment.DefaultTargetSegmentSize.
func (s *Sync) Upload(ctx context.Context, b sessiontree.Batch) error {
	if s.Store == nil || s.Writer == nil {
		return errors.New("mirror: Sync needs a store and a writer")
	}
	if len(b.Entries) == 0 {
		return nil
	}
	_, err := s.Store.AppendSegments(ctx, b.Ref, b.Entries, s.Writer)
	return err
}

// PendingEntries returns nothing: Sync holds no batch after Upload returns.
func (s *Sync) PendingEntries(context.Context, transcript.TranscriptRef) ([][]byte, error) {
	return nil, nil
}

// ReadsLocalFiles reports false: Sync uploads the batch's entries.
func (s *Sync) ReadsLocalFiles() bool { return false }
