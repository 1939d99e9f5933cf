package transcript_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestStore_Collected: segments a reader held that are gone are collected
// when a compacted segment listed now names them; gone with nothing naming
// them (a deleted session, a segment of two compactions ago), they are not.
// Nothing gone costs no request.
func TestStore_Collected(t *testing.T) {
	ctx := t.Context()
	fb := faultbucket.Wrap(membucket.New())
	s := newStore(t, fb, transcript.Config{})
	w := newWriter(t, "w")
	set := func(infos ...[]transcript.SegmentInfo) transcript.SegmentSet {
		var keys []string
		for _, in := range infos {
			keys = append(keys, infoKeys(in)...)
		}
		return transcript.NewSegmentSet(keys...)
	}
	list := func() []transcript.SegmentInfo {
		infos, err := s.ListSegments(ctx, ref)
		require.NoError(t, err)
		return infos
	}
	check := func(name string, held, now transcript.SegmentSet, want bool) {
		t.Helper()
		fb.ResetCounts()
		got, err := s.Collected(ctx, ref, held, now)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}

	ids := appendChain(t, s, ref, w, "e", "", 4)
	l0 := list()
	check("nothing gone", set(l0), set(l0), true)
	require.Zero(t, fb.Counts().Requests(), "nothing gone: no request")
	_, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	l1 := list()
	require.Len(t, l1, 1)
	check("inputs collected", set(l0), set(l1), true)
	check("gone with the session", set(l0), set(), false)

	appendChain(t, s, ref, w, "f", ids[len(ids)-1], 2)
	mid := list()
	_, err = s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce, Full: true})
	require.NoError(t, err)
	l2 := list()
	require.Len(t, l2, 1)
	check("compacted again", set(mid), set(l2), true)
	check("collected two compactions ago", set(l0), set(l2), false)
}
