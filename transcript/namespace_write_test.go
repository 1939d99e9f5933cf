package transcript_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestStore_BoundWritesOutsideNotFound: a store bound to a namespace answers a
// write to another namespace "not found", like every read, list and delete, so a
// tenant cannot tell another tenant's sessions from missing ones; the error also
// wraps ErrInvalidRef so that an uploader does not retry it.
func TestStore_BoundWritesOutsideNotFound(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{})
	bound, err := s.WithNamespace("acme")
	require.NoError(t, err)
	w := newWriter(t, "w")
	other := transcript.TranscriptRef{Namespace: "acme2", AgentID: "a", SessionID: "s"}
	_, err = bound.AppendSegment(ctx, other, [][]byte{entry("e", "")}, w)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	require.ErrorIs(t, err, transcript.ErrInvalidRef)
	obj, err := s.PrepareSegment(other, [][]byte{entry("e", "")}, w)
	require.NoError(t, err)
	err = bound.PutSegment(ctx, obj.Info.Key, obj.Data)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	require.ErrorIs(t, err, transcript.ErrInvalidRef)
	segs, err := s.ListSegments(ctx, other)
	require.NoError(t, err)
	require.Empty(t, segs)
}
