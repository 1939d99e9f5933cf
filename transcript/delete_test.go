package transcript_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// deleteRecorder records the keys deleted, in order (a batch's in its order),
// and runs a hook once, after the first listing.
type deleteRecorder struct {
	bucket.Bucket
	mu        sync.Mutex
	deleted   []string
	afterList func()
}

func (b *deleteRecorder) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	err := b.Bucket.List(ctx, opts, fn)
	b.mu.Lock()
	f := b.afterList
	b.afterList = nil
	b.mu.Unlock()
	if f != nil {
		f()
	}
	return err
}

func (b *deleteRecorder) Delete(ctx context.Context, key string) error {
	b.mu.Lock()
	b.deleted = append(b.deleted, key)
	b.mu.Unlock()
	return b.Bucket.Delete(ctx, key)
}

func (b *deleteRecorder) DeleteBatch(ctx context.Context, keys []string) error {
	b.mu.Lock()
	b.deleted = append(b.deleted, keys...)
	b.mu.Unlock()
	return b.Bucket.DeleteBatch(ctx, keys)
}

// TestDelete_HeadFirstAndWhatLandedMeanwhile: on every backend, Delete removes a
// strict session's head first, then the segment holding its header, in one
// batch (a head naming segments already gone read as a damaged session, and
// an append meeting it answered 500; without the head and the header the
// session reads as gone), and a segment that lands while it deletes (an
// append in flight) is deleted too: nothing of the session is left.
func TestDelete_HeadFirstAndWhatLandedMeanwhile(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := &deleteRecorder{Bucket: newBucket(t)}
			s := newStore(t, b, transcript.Config{})
			w := newWriter(t, "w")
			ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
			_, head, err := s.CreateSession(ctx, ref, [][]byte{entry("h", "")}, w, transcript.CreateOptions{Strict: true, Head: "h"})
			require.NoError(t, err)
			first, err := s.ListSegments(ctx, ref)
			require.NoError(t, err)
			_, _, err = s.CommitSegment(ctx, ref, head, [][]byte{entry("e1", "h")}, w, "e1", nil)
			require.NoError(t, err)
			b.afterList = func() { // an append whose segment lands after the listing
				_, err := s.AppendSegment(ctx, ref, [][]byte{entry("late", "e1")}, newWriter(t, "late"))
				require.NoError(t, err)
			}

			require.NoError(t, s.Delete(ctx, ref))
			require.Empty(t, sessionKeys(t, s, ref), "nothing of the session is left")
			require.Len(t, b.deleted, 4, "the head, the header's and e1's segments, then the late segment: %v", b.deleted)
			require.True(t, strings.HasSuffix(b.deleted[0], "/"+transcript.HeadName), "the head goes first: %v", b.deleted)
			require.Equal(t, first[0].Key, b.deleted[1], "then the header's segment")
			exists, err := s.SessionExists(ctx, ref)
			require.NoError(t, err)
			require.False(t, exists)
		})
	}
}
