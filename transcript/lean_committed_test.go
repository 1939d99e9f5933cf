package transcript_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// leanIDs returns the ids of res in merge order.
func leanIDs(res *transcript.LeanResult) []string {
	ids := make([]string, res.Len())
	for i := range ids {
		ids[i] = res.ID(i)
	}
	return ids
}

// strictWithGhost stores strict session strictRef (the header and e1, e2, e3,
// one commit each) and a segment no head commits (e2's child "ghost", what a
// losing append leaves), and returns the head.
func strictWithGhost(t *testing.T, s *transcript.Store) transcript.Head {
	t.Helper()
	ctx := t.Context()
	w := transcript.NewRandomWriter()
	_, h, err := s.CreateSession(ctx, strictRef, [][]byte{header}, w, transcript.CreateOptions{Strict: true})
	require.NoError(t, err)
	parent := ""
	for _, id := range []string{"e1", "e2", "e3"} {
		_, h, err = s.CommitSegment(ctx, strictRef, h, [][]byte{entryLine(id, parent)}, w, id, nil)
		require.NoError(t, err)
		parent = id
	}
	ghost, err := s.AppendSegment(ctx, strictRef, [][]byte{entryLine("ghost", "e2")}, transcript.NewRandomWriter())
	require.NoError(t, err)
	require.False(t, h.Commits(ghost.Key))
	return h
}

// ReadLeanCommitted reads what the head commits, as a View of the committed
// segments does, with no listing: the GET of each segment the head names.
func TestStore_ReadLeanCommitted(t *testing.T) {
	ctx := t.Context()
	cb := faultbucket.Wrap(membucket.New())
	s := newStore(t, cb, transcript.Config{})
	h := strictWithGhost(t, s)

	infos, head, err := s.ListSegmentsHead(ctx, strictRef)
	require.NoError(t, err)
	require.True(t, head, "the listing shows the head")
	require.Len(t, infos, 5, "the ghost is listed")

	cb.TakeCounts()
	got, res, err := s.ReadLeanCommitted(ctx, strictRef, h)
	require.NoError(t, err)
	c := cb.TakeCounts()
	require.Zero(t, c.List, "no listing")
	require.Equal(t, int64(len(h.Segments)), c.Get, "one GET per segment the head names")
	require.True(t, got.Same(h))
	require.Equal(t, []string{"strict", "e1", "e2", "e3"}, leanIDs(res))

	view, err := s.View(h.Committed()).ReadLean(ctx, strictRef)
	require.NoError(t, err)
	require.Equal(t, leanIDs(view), leanIDs(res), "what a View of the committed segments reads")
	require.ElementsMatch(t, view.Held().Keys(), res.Held().Keys())

	all, err := s.ReadLean(ctx, strictRef)
	require.NoError(t, err)
	require.Contains(t, leanIDs(all), "ghost", "a read of every segment listed shows it")
}

// A head that moved on while it was read (a compaction committed a new head and
// deleted the segments the old one names) is read again; one that still names a
// segment that is gone makes the read fail, saying so, and not "not found".
func TestStore_ReadLeanCommitted_HeadMoves(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name    string
		change  func(t *testing.T, s *transcript.Store, b bucket.Bucket, h transcript.Head)
		wantErr string
	}{
		{"compacted", func(t *testing.T, s *transcript.Store, _ bucket.Bucket, _ transcript.Head) {
			_, err := s.Compact(ctx, strictRef, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
		}, ""},
		{"committed segment lost", func(t *testing.T, s *transcript.Store, b bucket.Bucket, h transcript.Head) {
			require.NoError(t, b.Delete(ctx, s.SessionPrefix(strictRef)+h.Segments[2]))
		}, "commits segments that are missing: " + "L0/"},
		{"deleted", func(t *testing.T, s *transcript.Store, _ bucket.Bucket, _ transcript.Head) {
			require.NoError(t, s.Delete(ctx, strictRef))
		}, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := membucket.New()
			s := newStore(t, b, transcript.Config{})
			h := strictWithGhost(t, s)
			tt.change(t, s, b, h)
			got, res, err := s.ReadLeanCommitted(ctx, strictRef, h)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				if tt.name != "deleted" {
					require.NotErrorIs(t, err, bucket.ErrNotFound, "the session exists")
				} else {
					require.ErrorIs(t, err, bucket.ErrNotFound)
				}
				return
			}
			require.NoError(t, err)
			require.False(t, got.Same(h), "read from the new head")
			require.Len(t, got.Segments, 1)
			require.Equal(t, []string{"strict", "e1", "e2", "e3"}, leanIDs(res))
		})
	}
}
