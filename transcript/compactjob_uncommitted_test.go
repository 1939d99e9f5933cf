package transcript_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// onGetBucket calls the function in after, once, after the first
// GetWithETag of the key in at (a head read).
type onGetBucket struct {
	bucket.Bucket
	at    string
	after atomic.Pointer[func()]
}

func (b *onGetBucket) GetWithETag(ctx context.Context, key string) ([]byte, string, error) {
	data, etag, err := b.Bucket.GetWithETag(ctx, key)
	if key == b.at {
		if f := b.after.Swap(nil); f != nil {
			(*f)()
		}
	}
	return data, etag, err
}

// A strict append stores its segment, then writes its head. A compaction that
// read the head in between sees the segment uncommitted; if the head that
// commits it lands before the compaction deletes its uncommitted segments, the
// segment is committed and must stay: it used to be deleted on the word of the
// head read at the start, and the acknowledged append was lost.
func TestCompactJob_UncommittedSegmentCommittedMeanwhileStays(t *testing.T) {
	ctx := context.Background()
	b := &onGetBucket{Bucket: membucket.New()}
	s := newStore(t, b, transcript.Config{Prefix: "p"})
	w := newWriter(t, "replica-a")
	_, h, err := s.CreateSession(ctx, ref, [][]byte{entry("h", "")}, w, transcript.CreateOptions{Strict: true, Head: "h"})
	require.NoError(t, err)
	// The append's segment, stored; its head write comes later.
	seg, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", "h")}, w)
	require.NoError(t, err)
	b.at = s.SessionPrefix(ref) + transcript.HeadName
	commit := func() {
		_, err := s.WriteHead(ctx, ref, h, h.Commit(seg.Key, "a", nil))
		require.NoError(t, err)
	}
	b.after.Store(&commit)

	_, err = s.Compact(ctx, ref, transcript.CompactOptions{UncommittedAge: 1, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Nil(t, b.after.Load(), "the head was committed while the compaction ran")
	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{"h", "a"}, ids(got), "the committed append is kept")
}
